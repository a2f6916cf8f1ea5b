"""Test builds on CodeBuild: start one with this test run's grants, ask how it is doing, and find
the build a crashed attempt started before it could record the build's id.

A build's plaintext variables are not secret: BatchGetBuilds returns them to the verify function
and to anyone else allowed to call it (ReadOnlyAccess is). The output grant could write the
build's results, so it is a SecureString parameter, under a key that only the build role may
decrypt, named by a random token (the build role may read any parameter under the path, but
cannot list them, so a build reads only the one it was given); the build gets it as a
PARAMETER_STORE variable, whose value in the metadata is the name. Once the build has ended, the
first look at its status deletes the parameter."""
from __future__ import annotations

import json
import secrets
from contextlib import suppress
from typing import Any

from ..buildkit.layout import CACHE_KEY_VARIABLE, INPUT_URL_VARIABLE, OUTPUT_GRANT_VARIABLE, TEST_RUN_VARIABLE
from ..models import MAX_BUILD_FAILURE_CHARS, BuildRequest
from ..ports import BuildLook
from ..states import BuildStatus

# CodeBuild's state-change event for a build that ended: the stack's rule matches these, the
# BuildEndedFunction reads them, and the local runtime sends them as EventBridge would.
BUILD_STATE_CHANGE = "CodeBuild Build State Change"
ENDED_BUILD_STATUSES = tuple(status.value for status in BuildStatus if status is not BuildStatus.IN_PROGRESS)

# How far back `find` looks: the builds a crashed attempt could have started are the newest ones.
FIND_LOOKBACK_BUILDS = 200
BATCH_SIZE = 100


class SecretParameters:
    """SecureString parameters under one path, encrypted with one key, each named by a random token."""

    def __init__(self, ssm_client: Any, path: str, key_id: str) -> None:
        self._ssm = ssm_client
        self.path = path.rstrip("/")
        self.key_id = key_id

    def put(self, value: str) -> str:
        name = f"{self.path}/{secrets.token_hex(16)}"
        # Intelligent-Tiering: a grant carries the signing session's token, which can take it past
        # the standard tier's 4 KB; those few are stored as advanced parameters.
        self._ssm.put_parameter(Name=name, Value=value, Type="SecureString", KeyId=self.key_id,
                                Tier="Intelligent-Tiering", Overwrite=False)
        return name

    def delete(self, name: str) -> None:
        if not name.startswith(f"{self.path}/"):
            return  # not one of ours: a build started before grants were parameters
        with suppress(self._ssm.exceptions.ParameterNotFound):  # an earlier look at the build deleted it
            self._ssm.delete_parameter(Name=name)


class CodeBuildBuilds:
    def __init__(self, project_name: str, codebuild_client: Any, grants: SecretParameters) -> None:
        self.project_name = project_name
        self._codebuild = codebuild_client
        self._grants = grants

    def start(self, request: BuildRequest) -> str | None:
        grant = self._grants.put(json.dumps(request.output_grant))
        variables = [
            {"name": INPUT_URL_VARIABLE, "value": request.input_url, "type": "PLAINTEXT"},
            {"name": TEST_RUN_VARIABLE, "value": request.test_run, "type": "PLAINTEXT"},
            {"name": OUTPUT_GRANT_VARIABLE, "value": grant, "type": "PARAMETER_STORE"},
        ]
        if request.cache_key is not None:
            variables.append({"name": CACHE_KEY_VARIABLE, "value": request.cache_key, "type": "PLAINTEXT"})
        try:
            response = self._codebuild.start_build(
                projectName=self.project_name,
                environmentVariablesOverride=variables,
                imageOverride=request.image,
                computeTypeOverride=request.compute,
                timeoutInMinutesOverride=request.timeout_minutes,
            )
        except self._codebuild.exceptions.ClientError as error:
            self._grants.delete(grant)  # no build will read it
            if error.response["Error"]["Code"] == "AccountLimitExceededException":
                return None  # the account's concurrent builds and their queue are full: nothing started
            raise
        return response["build"]["id"]

    def look(self, build_id: str) -> BuildLook | None:
        build = _build(self._codebuild, build_id)
        if build is None:
            return None
        status = BuildStatus(build["buildStatus"])
        if status is BuildStatus.IN_PROGRESS:
            return BuildLook(status)
        grant = _variable(build, OUTPUT_GRANT_VARIABLE)
        if grant is not None:
            self._grants.delete(grant)
        reasons = [f"{phase.get('phaseType', '?')} phase: {context.get('message') or context.get('statusCode')}"
                   for phase in build.get("phases", []) if phase.get("phaseStatus") not in (None, "SUCCEEDED")
                   for context in phase.get("contexts", []) if context.get("message") or context.get("statusCode")]
        failure = None if status is BuildStatus.SUCCEEDED else "; ".join(reasons)[:MAX_BUILD_FAILURE_CHARS] or None
        return BuildLook(status, failure)

    def find(self, test_run: str) -> str | None:
        ids: list[str] = []
        paginator = self._codebuild.get_paginator("list_builds_for_project")
        for page in paginator.paginate(projectName=self.project_name, sortOrder="DESCENDING"):
            ids.extend(page.get("ids", []))
            if len(ids) >= FIND_LOOKBACK_BUILDS:
                break
        for start in range(0, min(len(ids), FIND_LOOKBACK_BUILDS), BATCH_SIZE):
            for build in self._codebuild.batch_get_builds(ids=ids[start:start + BATCH_SIZE])["builds"]:
                if _variable(build, TEST_RUN_VARIABLE) == test_run:
                    return build["id"]
        return None


class CodeBuildStatus:
    """Only a build's status: what a parked wait looks at (the stage that reads the build deletes
    its grant)."""

    def __init__(self, codebuild_client: Any) -> None:
        self._codebuild = codebuild_client

    def status(self, build_id: str) -> BuildStatus | None:
        build = _build(self._codebuild, build_id)
        return None if build is None else BuildStatus(build["buildStatus"])


def _build(codebuild: Any, build_id: str) -> dict[str, Any] | None:
    builds = codebuild.batch_get_builds(ids=[build_id])["builds"]
    return builds[0] if builds else None


def _variable(build: dict[str, Any], name: str) -> str | None:
    for variable in build.get("environment", {}).get("environmentVariables", []):
        if variable.get("name") == name:
            return variable.get("value")
    return None
