"""The CodeBuild adapter keeps a build's output grant out of the build's metadata: a SecureString
parameter under the stack's path, named by a random token, passed as a PARAMETER_STORE variable,
and deleted once the build has ended. Checked call by call against the SSM and CodeBuild APIs'
own shapes (botocore's Stubber), with no network."""
from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

import boto3
import pytest
from botocore.stub import ANY, Stubber

from agentledger.adapters.codebuild import CodeBuildBuilds, SecretParameters
from agentledger.buildkit.layout import (
    CACHE_KEY_VARIABLE,
    INPUT_URL_VARIABLE,
    OUTPUT_GRANT_VARIABLE,
    TEST_RUN_VARIABLE,
)
from agentledger.models import BuildRequest
from agentledger.ports import BuildLook
from agentledger.states import BuildStatus

if TYPE_CHECKING:
    from collections.abc import Iterator

pytestmark = pytest.mark.unit

PATH = "/AgentLedgerStack/output-grants"
KEY = "arn:aws:kms:us-east-1:123456789012:key/00000000-0000-0000-0000-000000000000"
GRANT = {"url": "https://bucket.s3.amazonaws.com/", "fields": {"key": "runs/r/verify/builds/x/output.tar.gz",
                                                              "policy": "cG9saWN5", "x-amz-signature": "abc"}}
REQUEST = BuildRequest(test_run="run-1/digest#1", input_url="https://bucket/input?X-Amz-Signature=1",
                       output_grant=GRANT, image="aws/codebuild/standard:7.0", compute="BUILD_GENERAL1_SMALL",
                       timeout_minutes=20)
BUILD_ID = "agentledger-test-builds:0001"
ANY_START = {"projectName": "agentledger-test-builds", "imageOverride": ANY, "computeTypeOverride": ANY,
             "timeoutInMinutesOverride": ANY, "environmentVariablesOverride": ANY}


class Clients:
    def __init__(self) -> None:
        session = boto3.Session(aws_access_key_id="x", aws_secret_access_key="y", region_name="us-east-1")
        self.ssm = session.client("ssm")
        self.codebuild = session.client("codebuild")
        self.ssm_stub, self.codebuild_stub = Stubber(self.ssm), Stubber(self.codebuild)
        self.builds = CodeBuildBuilds("agentledger-test-builds", self.codebuild, SecretParameters(self.ssm, PATH, KEY))

    def expect_put(self) -> None:
        self.ssm_stub.add_response("put_parameter", {"Version": 1, "Tier": "Standard"}, {
            "Name": ANY, "Value": json.dumps(GRANT), "Type": "SecureString", "KeyId": KEY,
            "Tier": "Intelligent-Tiering", "Overwrite": False})

    def build(self, status: str, grant: str) -> dict[str, Any]:
        return {"builds": [{"id": BUILD_ID, "buildStatus": status, "environment": {
            "type": "LINUX_CONTAINER", "image": "aws/codebuild/standard:7.0", "computeType": "BUILD_GENERAL1_SMALL",
            "environmentVariables": [{"name": OUTPUT_GRANT_VARIABLE, "value": grant, "type": "PARAMETER_STORE"}]}}]}


@pytest.fixture
def clients() -> Iterator[Clients]:
    made = Clients()
    with made.ssm_stub, made.codebuild_stub:
        yield made
        made.ssm_stub.assert_no_pending_responses()
        made.codebuild_stub.assert_no_pending_responses()


def test_the_variables_name_a_fresh_parameter_under_the_path_for_each_build(clients: Clients) -> None:
    started: list[dict[str, Any]] = []
    clients.codebuild.meta.events.register("provide-client-params.codebuild.StartBuild",
                                           lambda params, **_: started.append(params))
    names = []
    for _ in range(2):
        clients.expect_put()
        clients.codebuild_stub.add_response("start_build", {"build": {"id": BUILD_ID}}, ANY_START)
        clients.builds.start(REQUEST)
    for params in started:
        variables = {v["name"]: v for v in params["environmentVariablesOverride"]}
        assert variables[INPUT_URL_VARIABLE] == {"name": INPUT_URL_VARIABLE, "value": REQUEST.input_url,
                                                 "type": "PLAINTEXT"}
        assert variables[TEST_RUN_VARIABLE]["value"] == "run-1/digest#1"
        grant = variables[OUTPUT_GRANT_VARIABLE]
        assert grant["type"] == "PARAMETER_STORE" and grant["value"].startswith(f"{PATH}/")
        assert len(grant["value"].removeprefix(f"{PATH}/")) == 32  # 128 random bits: not guessed by another build
        assert "cG9saWN5" not in json.dumps(params)
        names.append(grant["value"])
    assert names[0] != names[1]


def test_a_start_refused_for_want_of_room_deletes_the_grant_and_starts_nothing(clients: Clients) -> None:
    clients.expect_put()
    clients.codebuild_stub.add_client_error("start_build", "AccountLimitExceededException", expected_params=ANY_START)
    clients.ssm_stub.add_response("delete_parameter", {}, {"Name": ANY})
    assert clients.builds.start(REQUEST) is None  # verify starts it at a later poll
    clients.ssm_stub.assert_no_pending_responses()


def test_a_refused_start_deletes_the_grant_no_build_will_read(clients: Clients) -> None:
    clients.expect_put()
    clients.codebuild_stub.add_client_error("start_build", "InvalidInputException", expected_params=ANY_START)
    clients.ssm_stub.add_response("delete_parameter", {}, {"Name": ANY})
    with pytest.raises(clients.codebuild.exceptions.InvalidInputException):
        clients.builds.start(REQUEST)
    clients.ssm_stub.assert_no_pending_responses()


def test_a_running_build_keeps_its_grant(clients: Clients) -> None:
    clients.codebuild_stub.add_response("batch_get_builds", clients.build("IN_PROGRESS", f"{PATH}/ab"),
                                        {"ids": [BUILD_ID]})
    assert clients.builds.look(BUILD_ID) == BuildLook(BuildStatus.IN_PROGRESS)  # and no SSM call


@pytest.mark.parametrize("status", ["SUCCEEDED", "FAILED", "FAULT", "TIMED_OUT", "STOPPED"])
def test_the_first_look_at_an_ended_build_deletes_its_grant(clients: Clients, status: str) -> None:
    clients.codebuild_stub.add_response("batch_get_builds", clients.build(status, f"{PATH}/ab"), {"ids": [BUILD_ID]})
    clients.ssm_stub.add_response("delete_parameter", {}, {"Name": f"{PATH}/ab"})
    assert clients.builds.look(BUILD_ID) == BuildLook(BuildStatus(status), failure=None)
    # A later look (a retried poll) finds it gone, and says the same.
    clients.codebuild_stub.add_response("batch_get_builds", clients.build(status, f"{PATH}/ab"), {"ids": [BUILD_ID]})
    clients.ssm_stub.add_client_error("delete_parameter", "ParameterNotFound", expected_params={"Name": f"{PATH}/ab"})
    assert clients.builds.look(BUILD_ID) == BuildLook(BuildStatus(status), failure=None)


def test_a_parameter_outside_the_path_is_never_deleted(clients: Clients) -> None:
    # A build's variables come back from CodeBuild; one not under the path is not agentledger's to delete.
    clients.codebuild_stub.add_response("batch_get_builds", clients.build("SUCCEEDED", "/someone/else"),
                                        {"ids": [BUILD_ID]})
    assert clients.builds.look(BUILD_ID) == BuildLook(BuildStatus.SUCCEEDED)


def test_the_cache_key_goes_to_the_build_as_a_plain_variable_only_when_there_is_one(clients: Clients) -> None:
    started: list[dict[str, Any]] = []
    clients.codebuild.meta.events.register("provide-client-params.codebuild.StartBuild",
                                           lambda params, **_: started.append(params))
    for request in (REQUEST, REQUEST.model_copy(update={"cache_key": "c" * 64})):
        clients.expect_put()
        clients.codebuild_stub.add_response("start_build", {"build": {"id": BUILD_ID}}, ANY_START)
        clients.builds.start(request)
    without, keyed = ({v["name"]: v for v in params["environmentVariablesOverride"]} for params in started)
    assert CACHE_KEY_VARIABLE not in without
    assert keyed[CACHE_KEY_VARIABLE] == {"name": CACHE_KEY_VARIABLE, "value": "c" * 64, "type": "PLAINTEXT"}


def test_a_failed_build_says_which_phase_failed_and_why_as_codebuild_recorded_it_in_one_look(
        clients: Clients) -> None:
    answer = clients.build("FAILED", f"{PATH}/grant")
    answer["builds"][0]["phases"] = [
        {"phaseType": "SUBMITTED", "phaseStatus": "SUCCEEDED"},
        {"phaseType": "INSTALL", "phaseStatus": "SUCCEEDED", "contexts": [{"statusCode": "", "message": ""}]},
        {"phaseType": "PRE_BUILD", "phaseStatus": "FAILED", "contexts": [{
            "statusCode": "COMMAND_EXECUTION_ERROR",
            "message": "Error while executing command: python3 -I agentledger install. Reason: exit status 1"}]},
        {"phaseType": "FINALIZING", "phaseStatus": "SUCCEEDED"}]
    clients.codebuild_stub.add_response("batch_get_builds", answer, {"ids": [BUILD_ID]})
    clients.ssm_stub.add_response("delete_parameter", {}, {"Name": f"{PATH}/grant"})
    assert clients.builds.look(BUILD_ID) == BuildLook(BuildStatus.FAILED, failure=(
        "PRE_BUILD phase: Error while executing command: python3 -I agentledger install. Reason: exit status 1"))
