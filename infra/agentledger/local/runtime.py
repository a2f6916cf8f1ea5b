"""The local stack: moto with the synthesized template deployed, Lambda invocations served by the
real handlers, and the state machine executed by moto's interpreter from the same ASL file."""
from __future__ import annotations

import json
import logging
import os
import secrets
import tempfile
import time
from contextlib import ExitStack
from dataclasses import dataclass
from http import HTTPStatus
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

import boto3
from botocore.credentials import Credentials
from moto import mock_aws
from moto.core.config import DefaultConfig, default_user_config

from agentledger import faults
from agentledger.adapters.stepfunctions import execution_arn
from agentledger.api_contract import ErrorBody

from . import environ, lambda_bridge, moto_seams
from .codebuild import LocalCodeBuild
from .deploy import DeployedStack, deploy
from .event_rules import LocalEventRules
from .faults import CrashSwitchboard
from .github_receiver import LocalGitHub
from .principals import DUTIES, LocalPrincipal, create_principals
from .s3_endpoint import LocalS3Endpoint
from .synth import synthesize
from .throttles import ThrottleSwitchboard

if TYPE_CHECKING:
    from collections.abc import Callable, Iterator, Mapping, MutableMapping

REGION = "us-east-1"
API_HANDLER = "agentledger.handlers.api.handler"
KEEPER_HANDLER = "agentledger.handlers.review.keep_alive"
BUILD_ENDED_HANDLER = "agentledger.handlers.builds.ended"
TERMINAL = frozenset({"SUCCEEDED", "FAILED", "TIMED_OUT", "ABORTED"})
# A wait looks again at once, then less and less often: a run's stages take seconds, and waits
# that looked every 50 ms spent a third of the CPU time of a run on a busy machine.
FIRST_POLL_S, LONGEST_POLL_S, POLL_BACKOFF = 0.05, 0.25, 1.5
LOCAL_GITHUB_TOKEN = "local-github-token"
LOCAL_GITHUB_REPOSITORY = "local/agentledger-demo"
NOTIFICATION_QUEUE = "agentledger-notifications-local.fifo"
# The one kind of call that may leave the machine: the Bedrock planner's, when a profile is named.
BEDROCK_PROFILE_VARIABLE = "AGENTLEDGER_BEDROCK_PROFILE"
BEDROCK_ENDPOINTS = r"https://bedrock-runtime\.[a-z0-9-]+\.amazonaws\.com/.*"
# Invocations running at once (lambda_bridge says why): the stage functions one at a time, and the
# API, the review keeper and the build-ended events each in a slot of its own. A stage function that invoked another and
# waited for its answer would wait for ever here; none does (they hand work on through the state
# machine).
STAGE_CONCURRENCY = 1
RESERVED_CONCURRENCY = {API_HANDLER: 1, KEEPER_HANDLER: 1, BUILD_ENDED_HANDLER: 1}
# What the functions sign with, as a Lambda function signs with its role's credentials: a key no
# one else holds, so the loopback S3 endpoint can take the links and grants they sign and nothing
# else (a fixed key, like moto's own, would let any local process sign its own). One per process:
# the functions' clients outlive a runtime (handlers/assembly.py caches them per configuration).
FUNCTION_CREDENTIALS = Credentials(f"ASIA{secrets.token_hex(8).upper()}", secrets.token_urlsafe(30),
                                   secrets.token_urlsafe(48))


def poll_intervals() -> Iterator[float]:
    """How long a wait sleeps between its looks, one look after another."""
    interval = FIRST_POLL_S
    while True:
        yield interval
        interval = min(LONGEST_POLL_S, interval * POLL_BACKOFF)


@dataclass
class ApiResponse:
    status: int
    headers: dict[str, str]
    body: str

    def json(self) -> Any:
        return json.loads(self.body) if self.body else None


def default_repository_roots() -> tuple[Path, ...]:
    """The directory `serve` was started in and the temporary directory's agentledger folder; any
    other directory the CLI uploads, as for a deployed API (`--allow-root` adds roots)."""
    return Path.cwd(), Path(tempfile.gettempdir()) / "agentledger"


def default_build_cache() -> Path:
    """Dependency caches of test builds (virtualenvs keyed by the digest of dependency files)
    outlive the runtime, so a second `serve` does not reinstall either."""
    configured = os.environ.get("AGENTLEDGER_BUILD_CACHE")
    return Path(configured) if configured else Path.home() / ".cache" / "agentledger" / "builds"


def moto_config(bedrock_profile: str | None) -> DefaultConfig:
    """moto runs the state machine; with a Bedrock profile named, calls to Bedrock pass through
    moto to the real service (moto's passthrough), signed with that profile's credentials."""
    config: DefaultConfig = {"stepfunctions": {"execute_state_machine": True}}
    if bedrock_profile:
        config["core"] = {**default_user_config["core"], "passthrough": {"urls": [BEDROCK_ENDPOINTS], "services": []}}
    return config


class LocalRuntime:
    def __init__(self, assembly: Path | None = None, workspace_root: Path | None = None,
                 extra_environment: dict[str, str] | None = None, build_cache: Path | None = None,
                 repository_roots: tuple[Path, ...] | None = None, context: dict[str, str] | None = None,
                 unsafe_local_builds: bool = False) -> None:
        """`repository_roots`: where local repositories may lie (default: default_repository_roots())."""
        self._assembly = assembly
        self._context = dict(context or {})
        self._extra_environment = dict(extra_environment or {})
        roots = repository_roots if repository_roots is not None else default_repository_roots()
        self.repository_roots = tuple(root.resolve() for root in roots)
        self._extra_environment["AGENTLEDGER_LOCAL_REPOSITORY_ROOTS"] = os.pathsep.join(map(str, self.repository_roots))
        if workspace_root is not None:
            self._extra_environment["AGENTLEDGER_WORKSPACE_ROOT"] = str(workspace_root)
        self._mock: Any = None
        self._undo = ExitStack()
        self.stack: DeployedStack | None = None
        self.crashes = CrashSwitchboard()
        self.throttles = ThrottleSwitchboard()
        self.github = LocalGitHub(LOCAL_GITHUB_TOKEN)
        # unsafe_local_builds: serve's --unsafe-local-builds, builds without the sandbox.
        self.codebuild = LocalCodeBuild(Path(tempfile.gettempdir()) / "agentledger-builds",
                                        build_cache or default_build_cache(), unsafe=unsafe_local_builds)
        # An S3 endpoint on loopback in front of moto's in-process S3: artifact links and the test
        # builds' presigned input and output work from curl and from the build sandbox.
        self.s3_endpoint: LocalS3Endpoint | None = None
        self._function_by_handler: dict[str, str] = {}
        self.invocation_slots = lambda_bridge.InvocationSlots(STAGE_CONCURRENCY)
        self._clients: dict[str, Any] = {}
        self._notification_queue_url: str | None = None
        self._notifications: list[dict[str, Any]] = []
        self.principals: list[LocalPrincipal] = []  # the local callers; `serve` writes their profiles

    # -- lifecycle -------------------------------------------------------------------------
    def start(self) -> LocalRuntime:
        """Patch the process for the local stack and deploy it. Every patch registers its undo, so
        stop() (or a failed start) leaves the process as it found it."""
        with ExitStack() as undo:
            undo.callback(environ.install())
            # A run handed to a person ends in a Fail state, which moto's interpreter logs as an
            # exception dump; the ledger's handoff record is the account of it.
            undo.callback(_quieten(logging.getLogger("moto.stepfunctions")))
            # The loopback S3 endpoint would log every artifact fetch and upload to the terminal.
            undo.callback(_quieten(logging.getLogger("werkzeug")))
            undo.callback(moto_seams.install_corrections())
            undo.callback(lambda_bridge.install())
            undo.callback(moto_seams.run_invocations_here(self.invocation_slots))
            self.crashes.install()
            undo.callback(faults.install, None)
            assembly = self._assembly or synthesize(context=self._context)
            self._mock = mock_aws(config=moto_config(self._extra_environment.get(BEDROCK_PROFILE_VARIABLE)))
            self._mock.start()
            undo.callback(self._mock.stop)
            undo.callback(moto_seams.answer_throttles(self.throttles))
            # After the mock's start, which sets fake keys of its own, and before any client exists.
            undo.callback(_use_credentials(FUNCTION_CREDENTIALS))
            undo.callback(moto_seams.run_builds(self.codebuild, self._is_test_build_project))
            self.s3_endpoint = LocalS3Endpoint(self.client("s3"), FUNCTION_CREDENTIALS, REGION).start()
            undo.callback(self.s3_endpoint.stop)
            # The one port of this machine a sandboxed build may reach.
            self.codebuild.forward_port(urlsplit(self.s3_endpoint.url).port or 0)
            self.stack = deploy(assembly, REGION)
            self.codebuild.build_limits = self.stack.build_limits
            self.github.start()
            undo.callback(self.github.stop)
            self._connect_receivers()
            self.principals = create_principals(self.client("iam"), {
                duty: arn for duty in DUTIES if (arn := self.stack.outputs.get(f"{duty.capitalize()}PolicyArn"))})
            lambda_client = self.client("lambda")
            for function_name in self.stack.functions.values():
                config = lambda_client.get_function_configuration(FunctionName=function_name)
                self._function_by_handler[config["Handler"]] = function_name
                variables = self._local_environment(config.get("Environment", {}).get("Variables", {}))
                lambda_client.update_function_configuration(FunctionName=function_name,
                                                            Environment={"Variables": variables})
            for handler, slots in RESERVED_CONCURRENCY.items():
                self.invocation_slots.reserve(self.function_name(handler), slots)
            rules = LocalEventRules(self.client("events"), self._invoke_function)
            self.codebuild.on_ended = rules.put
            undo.callback(self._close_event_rules, rules)
            self._undo = undo.pop_all()
        return self

    def _local_environment(self, stack_variables: dict[str, str]) -> dict[str, str]:
        """Local-only settings (where workspaces go, a plugged-in agent) under what the stack set,
        and the one thing the stack cannot know: where the local receivers listen."""
        variables = {**self._extra_environment, **stack_variables}
        if self.s3_endpoint and "ARTIFACT_BUCKET_NAME" in variables:
            variables["ARTIFACT_LINK_ENDPOINT"] = self.s3_endpoint.url
        if "AGENTLEDGER_GITHUB_API_URL" in variables:
            variables["AGENTLEDGER_GITHUB_API_URL"] = self.github.url
            variables["AGENTLEDGER_GITHUB_REPOSITORY"] = (variables.get("AGENTLEDGER_GITHUB_REPOSITORY")
                                                          or LOCAL_GITHUB_REPOSITORY)
        return variables

    def _connect_receivers(self) -> None:
        """Give the token secret the local tracker's token, and subscribe a FIFO queue to the
        notification topic: the queue is the receiver whose copies are counted."""
        assert self.stack is not None
        secret = self.stack.outputs.get("GitHubTokenSecretArn")
        if secret:
            self.client("secretsmanager").put_secret_value(SecretId=secret, SecretString=LOCAL_GITHUB_TOKEN)
        topic = self.stack.outputs.get("NotificationTopicArn")
        if topic:
            sqs = self.client("sqs")
            self._notification_queue_url = sqs.create_queue(
                QueueName=NOTIFICATION_QUEUE, Attributes={"FifoQueue": "true"})["QueueUrl"]
            queue_arn = sqs.get_queue_attributes(QueueUrl=self._notification_queue_url,
                                                 AttributeNames=["QueueArn"])["Attributes"]["QueueArn"]
            self.client("sns").subscribe(TopicArn=topic, Protocol="sqs", Endpoint=queue_arn)

    def notifications(self) -> list[dict[str, Any]]:
        """Every notification the subscribed queue received (drained into memory, kept)."""
        if self._notification_queue_url is None:
            return []
        sqs = self.client("sqs")
        while True:
            batch = sqs.receive_message(QueueUrl=self._notification_queue_url, MaxNumberOfMessages=10,
                                        AttributeNames=["All"]).get("Messages", [])
            if not batch:
                return list(self._notifications)
            for message in batch:
                envelope = json.loads(message["Body"])
                key = envelope.get("MessageAttributes", {}).get("agentledger_key", {}).get("Value")
                self._notifications.append({"key": key, "message": json.loads(envelope["Message"])})
                sqs.delete_message(QueueUrl=self._notification_queue_url, ReceiptHandle=message["ReceiptHandle"])

    def notifications_by_key(self) -> dict[str, int]:
        counts: dict[str, int] = {}
        for note in self.notifications():
            counts[note["key"]] = counts.get(note["key"], 0) + 1
        return counts

    def stop(self) -> None:
        """Stop the receivers and the mock, then undo start()'s patches, last first."""
        if self._mock is not None:
            try:
                self._wait_for_executions_to_settle()
            finally:  # the builds' pool above all: its threads are joined at exit, and would wait for the builds
                self._undo.close()
                self._mock = None
                self._clients.clear()  # they would reach past the mock to AWS

    def _wait_for_executions_to_settle(self) -> None:
        """Stop executions still waiting (for a review), so moto's worker threads end with the mock."""
        sfn = self.client("stepfunctions")
        running = sfn.list_executions(stateMachineArn=self.state_machine_arn, statusFilter="RUNNING")["executions"]
        for execution in running:
            try:
                sfn.stop_execution(executionArn=execution["executionArn"], cause="local runtime stopping")
            except AttributeError:
                # moto: an execution whose thread has not built its environment yet cannot be
                # stopped ('NoneType' has no set_stop); that thread is a daemon and ends with serve.
                continue

    # -- access ----------------------------------------------------------------------------
    def _is_test_build_project(self, name: str) -> bool:
        return self.stack is not None and name == self.stack.outputs.get("TestBuildProjectName")

    def client(self, service: str) -> Any:
        """One client per service, shared by every thread (boto3 clients are thread-safe): building
        one costs more than most requests sent with it."""
        if service not in self._clients:
            # boto3-stubs types the service as one literal name per service; boto3 takes any it knows.
            self._clients[service] = boto3.client(service, region_name=REGION)  # type: ignore[call-overload]
        return self._clients[service]

    @property
    def state_machine_arn(self) -> str:
        assert self.stack is not None, "start() the runtime first"
        return self.stack.state_machine_arn

    def output(self, name: str) -> str:
        assert self.stack is not None, "start() the runtime first"
        return self.stack.outputs[name]

    def function_name(self, handler: str) -> str:
        return self._function_by_handler[handler]

    def _close_event_rules(self, rules: LocalEventRules) -> None:
        rules.closed = True
        self.codebuild.on_ended = None

    def _invoke_function(self, function_name: str, event: Mapping[str, Any]) -> str | None:
        """An event rule's target: the function's error message if it failed."""
        response = self.client("lambda").invoke(FunctionName=function_name, Payload=json.dumps(event))
        payload = response["Payload"].read()
        return payload.decode(errors="replace") if response.get("FunctionError") else None

    def invoke(self, handler: str, event: dict[str, Any]) -> tuple[Any, str | None]:
        """Invoke a deployed function through moto's Lambda API; returns (payload, function error)."""
        response = self.client("lambda").invoke(FunctionName=self.function_name(handler), Payload=json.dumps(event))
        return json.loads(response["Payload"].read() or b"null"), response.get("FunctionError")

    def call_api(self, method: str, path: str, *, body: Any = None, raw_body: str | None = None,
                 query: dict[str, str] | None = None, headers: dict[str, str] | None = None,
                 caller: str | None = None) -> ApiResponse:
        """As API Gateway calls the api function once IAM authorization has named the `caller`
        (the local HTTP API verifies the request's signature first)."""
        if body is not None:
            raw_body = json.dumps(body)
        event = proxy_event(method, path, body=raw_body, query=query, headers=headers, caller=caller)
        payload, error = self.invoke(API_HANDLER, event)
        if error:
            return ApiResponse(HTTPStatus.BAD_GATEWAY, {"content-type": "application/json"},
                               ErrorBody.of(HTTPStatus.BAD_GATEWAY, payload.get("errorMessage", "")).model_dump_json())
        return ApiResponse(payload["statusCode"], payload.get("headers") or {}, payload.get("body") or "")

    def run_review_keeper(self) -> dict[str, Any]:
        payload, error = self.invoke(KEEPER_HANDLER, {"source": "aws.events", "detail-type": "Scheduled Event"})
        if error:
            raise RuntimeError(f"review keeper failed: {payload}")
        return payload

    # -- executions ------------------------------------------------------------------------
    def execution_status(self, name: str) -> str | None:
        try:
            return self.client("stepfunctions").describe_execution(
                executionArn=execution_arn(self.state_machine_arn, name))["status"]
        except self.client("stepfunctions").exceptions.ExecutionDoesNotExist:
            return None

    def wait_for_execution(self, name: str, timeout_s: float = 60.0) -> str:
        deadline = time.monotonic() + timeout_s
        intervals = poll_intervals()
        while time.monotonic() < deadline:
            status = self.execution_status(name)
            if status in TERMINAL:
                return status
            time.sleep(next(intervals))
        recent = [f"{e['type']} {json.dumps({k: v for k, v in e.items() if k.endswith('Details')}, default=str)[:300]}"
                  for e in self.execution_history(name)[-4:]]
        raise TimeoutError(f"execution {name} still running after {timeout_s}s; last events:\n" + "\n".join(recent))

    def execution_history(self, name: str) -> list[dict[str, Any]]:
        sfn = self.client("stepfunctions")
        events: list[dict[str, Any]] = []
        for page in sfn.get_paginator("get_execution_history").paginate(
                executionArn=execution_arn(self.state_machine_arn, name)):
            events.extend(page["events"])
        return events


def _use_credentials(credentials: Credentials) -> Callable[[], None]:
    """Make `credentials` what every client of this process signs with: the functions' (an
    invocation's environment takes its AWS_* from the process's) and the runtime's own. boto3's
    default session, which keeps the credentials it found first, starts afresh. The returned undo
    puts back the variables and the session."""
    variables = {"AWS_ACCESS_KEY_ID": credentials.access_key, "AWS_SECRET_ACCESS_KEY": credentials.secret_key,
                 "AWS_DEFAULT_REGION": REGION}
    undo = _set(os.environ, {**variables, "AWS_SESSION_TOKEN": credentials.token} if credentials.token else variables)
    session, boto3.DEFAULT_SESSION = boto3.DEFAULT_SESSION, None

    def restore() -> None:
        boto3.DEFAULT_SESSION = session
        undo()

    return restore


def _set(env: MutableMapping[str, str], values: Mapping[str, str]) -> Callable[[], None]:
    """Set the variables; the returned undo gives each its earlier value, or removes it again."""
    earlier = {name: env.get(name) for name in values}
    env.update(values)

    def restore() -> None:
        for name, value in earlier.items():
            if value is None:
                env.pop(name, None)
            else:
                env[name] = value

    return restore


def _quieten(logger: logging.Logger) -> Callable[[], None]:
    previous = logger.level
    logger.setLevel(logging.CRITICAL)
    return lambda: logger.setLevel(previous)


def proxy_event(method: str, path: str, *, body: str | None, query: dict[str, str] | None,
                headers: dict[str, str] | None, caller: str | None = None) -> dict[str, Any]:
    """An API Gateway REST proxy event, as API Gateway builds it for a request."""
    headers = dict(headers or {})
    headers.setdefault("Content-Type", "application/json")
    return {
        "resource": path,
        "path": path,
        "httpMethod": method.upper(),
        "headers": headers,
        "multiValueHeaders": {k: [v] for k, v in headers.items()},
        "queryStringParameters": query or None,
        "multiValueQueryStringParameters": {k: [v] for k, v in query.items()} if query else None,
        "pathParameters": None,
        "stageVariables": None,
        "requestContext": {
            "resourcePath": path, "httpMethod": method.upper(), "path": f"/local{path}", "stage": "local",
            "requestId": f"local-{time.time_ns()}",
            "identity": {"sourceIp": "127.0.0.1", "userArn": caller, "caller": caller,
                         "accountId": caller.split(":")[4] if caller else None},
        },
        "body": body,
        "isBase64Encoded": False,
    }
