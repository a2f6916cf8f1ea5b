"""Each Lambda function's settings: one typed model per kind of function, read from its environment.

A field's alias is the environment variable it is read from. A required field is one the stack
always sets: the operator's settings among them are CDK context keys, whose defaults live in the
CDK app alone (infra/agentledger/deploy/app.py), so none is written here. A field with a default is never set by the
stack: only the local runtime sets it (where workspaces and repositories lie, the loopback S3
endpoint, the AWS profile that signs Bedrock calls), and on Lambda the default holds.
tests/infra/test_function_settings.py holds every function of the synthesized stack to this."""
from __future__ import annotations

import os
import re
import urllib.parse
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Self, cast

from pydantic import AfterValidator, BaseModel, BeforeValidator, ConfigDict, Field, ValidationError

from .generation import MAX_GENERATION_RUNS, GenerationLimits
from .source import ArchiveLimits

if TYPE_CHECKING:
    from pydantic_core import ErrorDetails


class SettingsError(RuntimeError):
    """The function's environment lacks a setting, or holds one that does not parse."""


def _path_list(value: object) -> object:
    """AGENTLEDGER_LOCAL_REPOSITORY_ROOTS is a search path: directories joined by os.pathsep."""
    return tuple(Path(part) for part in value.split(os.pathsep) if part) if isinstance(value, str) else value


def _price_pair(value: object) -> object:
    """"INPUT,OUTPUT": USD per 1,000 input and output tokens."""
    return value.split(",") if isinstance(value, str) else value


def _names(value: object) -> object:
    """"A,B": a list of names, blanks dropped."""
    return tuple(part.strip() for part in value.split(",") if part.strip()) if isinstance(value, str) else value


class FunctionSettings(BaseModel):
    """What every function reads: the ledger, the artifacts, the workspaces."""

    model_config = ConfigDict(frozen=True, validate_by_name=True, validate_by_alias=True)

    ledger_table: str = Field(validation_alias="LEDGER_TABLE_NAME", min_length=1)
    artifact_bucket: str = Field(validation_alias="ARTIFACT_BUCKET_NAME", min_length=1)
    # The environment context key; the handlers put it on every log line.
    environment: str = Field(validation_alias="AGENTLEDGER_ENVIRONMENT", min_length=1)
    # How often stale context may replan a run before it goes to a person (the maxReplans context key).
    max_replans: int = Field(validation_alias="AGENTLEDGER_MAX_REPLANS", ge=0)
    # What one repository tarball may expand to (the archiveMax* context keys): ArchiveLimits.
    archive_max_members: int = Field(validation_alias="AGENTLEDGER_ARCHIVE_MAX_MEMBERS", gt=0)
    archive_max_bytes: int = Field(validation_alias="AGENTLEDGER_ARCHIVE_MAX_BYTES", gt=0)
    archive_max_ratio: int = Field(validation_alias="AGENTLEDGER_ARCHIVE_MAX_RATIO", gt=0)
    # Lambda can only write under /tmp; the local runtime points this at serve's workspace.
    workspace_root: Path = Field(Path("/tmp/agentledger"), validation_alias="AGENTLEDGER_WORKSPACE_ROOT")
    # Directories under which a local repository may lie. Local runtime only: on AWS the functions
    # read uploaded tarballs only.
    local_repository_roots: Annotated[tuple[Path, ...], BeforeValidator(_path_list)] = Field(
        (), validation_alias="AGENTLEDGER_LOCAL_REPOSITORY_ROOTS")
    # Where artifact links and a build's grants point. Local runtime only: an S3 endpoint on
    # loopback that curl and the build sandbox can reach; on AWS, S3's own endpoint.
    artifact_link_endpoint: str | None = Field(None, validation_alias="ARTIFACT_LINK_ENDPOINT")

    @property
    def archive_limits(self) -> ArchiveLimits:
        return ArchiveLimits(self.archive_max_members, self.archive_max_bytes, self.archive_max_ratio)

    @classmethod
    def from_env(cls) -> Self:
        """The settings in `os.environ`, parsed once per distinct environment: locally one process
        hosts every function, each invocation seeing its own function's environment."""
        present = tuple((name, os.environ[name]) for name in cls.variables() if name in os.environ)
        return cast("Self", _parse(cls, present))

    @classmethod
    def variables(cls) -> dict[str, bool]:
        """Each environment variable this model reads, and whether it is required."""
        return {str(field.validation_alias): field.is_required() for field in cls.model_fields.values()}


class WorkflowSettings(FunctionSettings):
    """A function that runs the workflow: the stages, the assessment, the failure classifier."""

    # A plan that writes nothing ends the run as `nothing_to_do`, unless this asks a person to
    # review it anyway (the reviewEmptyPlans context key).
    review_empty_plans: bool = Field(validation_alias="AGENTLEDGER_REVIEW_EMPTY_PLANS")
    # How long a workspace a failed attempt left (and an extracted tarball no run read) is kept.
    workspace_retention_hours: float = Field(validation_alias="AGENTLEDGER_WORKSPACE_RETENTION_HOURS", gt=0)
    # The most a repository's `timeout` may ask for: an operator's bound on what one untrusted
    # repository can spend on build minutes.
    test_timeout_limit_s: int = Field(validation_alias="AGENTLEDGER_TEST_TIMEOUT_LIMIT_SECONDS", gt=0)
    # The computes and images a repository may ask its builds for (the operator's, not the repository's,
    # choice of what a build costs and runs on): comma-separated, the buildComputes/buildImages keys.
    build_computes: Annotated[tuple[str, ...], BeforeValidator(_names)] = Field(
        validation_alias="AGENTLEDGER_BUILD_COMPUTES", min_length=1)
    build_images: Annotated[tuple[str, ...], BeforeValidator(_names)] = Field(
        validation_alias="AGENTLEDGER_BUILD_IMAGES", min_length=1)
    # "package.module:factory" of a custom agent; empty is the reference agent.
    agent_spec: str = Field(validation_alias="AGENTLEDGER_AGENT")
    # Which writer the reference agent plans for: "pynguin", "doctest" or "bedrock" (a model).
    writer: str = Field(validation_alias="AGENTLEDGER_WRITER", min_length=1)
    # The caps on test generation a repository can only lower (the generation* context keys).
    generation_module_seconds: int = Field(validation_alias="AGENTLEDGER_GENERATION_MODULE_SECONDS", gt=0)
    generation_run_seconds: int = Field(validation_alias="AGENTLEDGER_GENERATION_RUN_SECONDS", gt=0)
    generation_iterations: int = Field(validation_alias="AGENTLEDGER_GENERATION_ITERATIONS", gt=0)
    generation_runs: int = Field(validation_alias="AGENTLEDGER_GENERATION_RUNS", ge=1, le=MAX_GENERATION_RUNS)
    mutation_module_seconds: int = Field(validation_alias="AGENTLEDGER_MUTATION_MODULE_SECONDS", gt=0)
    mutation_run_seconds: int = Field(validation_alias="AGENTLEDGER_MUTATION_RUN_SECONDS", gt=0)
    bedrock_model_id: str = Field(validation_alias="AGENTLEDGER_BEDROCK_MODEL_ID")
    bedrock_max_tokens: int = Field(validation_alias="AGENTLEDGER_BEDROCK_MAX_TOKENS", gt=0)
    bedrock_temperature: float = Field(validation_alias="AGENTLEDGER_BEDROCK_TEMPERATURE", ge=0, le=1)
    bedrock_max_reasks: int = Field(validation_alias="AGENTLEDGER_BEDROCK_MAX_REASKS", ge=0)
    # USD per 1,000 input and output tokens, for the cost estimate.
    bedrock_prices: Annotated[tuple[float, float], BeforeValidator(_price_pair)] = Field(
        validation_alias="AGENTLEDGER_BEDROCK_PRICES")
    # Local runtime only: the AWS profile whose credentials sign Bedrock calls that pass through moto.
    bedrock_profile: str | None = Field(None, validation_alias="AGENTLEDGER_BEDROCK_PROFILE")

    @property
    def workspace_retention_s(self) -> float:
        return self.workspace_retention_hours * 3600

    @property
    def generation_limits(self) -> GenerationLimits:
        return GenerationLimits(module_seconds=self.generation_module_seconds,
                                run_seconds=self.generation_run_seconds, iterations=self.generation_iterations,
                                runs=self.generation_runs, mutation_module_seconds=self.mutation_module_seconds,
                                mutation_run_seconds=self.mutation_run_seconds)


class BuildSettings(WorkflowSettings):
    """The stages that start builds in the sandbox: execute (writing tests) and verify (the suite)."""

    test_build_project: str = Field(validation_alias="TEST_BUILD_PROJECT_NAME", min_length=1)
    # Where each build's output grant is kept as a SecureString parameter, and the key it is
    # encrypted with (adapters/codebuild.py says why).
    output_grant_path: str = Field(validation_alias="OUTPUT_GRANT_PARAMETER_PATH", pattern=r"^(/[A-Za-z0-9_.-]+)+$")
    output_grant_key: str = Field(validation_alias="OUTPUT_GRANT_KEY_ARN", min_length=1)


class ExecutionSettings(FunctionSettings):
    """A function that drives executions of the run state machine."""

    state_machine_arn: str = Field(validation_alias="STATE_MACHINE_ARN", min_length=1)


class BuildWaitTableSettings(FunctionSettings):
    """A function that parks or answers the stages' waits for their test builds."""

    build_wait_table: str = Field(validation_alias="BUILD_WAIT_TABLE_NAME", min_length=1)


class BuildWatchSettings(BuildWaitTableSettings):
    """Parks a stage's wait for its build, and looks at the build's status once parked."""


class BuildEndedSettings(BuildWaitTableSettings, ExecutionSettings):
    """Answers the waits on a build that ended (CodeBuild's state-change event)."""


class IdempotencySettings(FunctionSettings):
    """A function that keeps Powertools idempotency records."""

    idempotency_table: str = Field(validation_alias="IDEMPOTENCY_TABLE_NAME", min_length=1)


class KeeperSettings(WorkflowSettings, ExecutionSettings):
    """The review keeper: it heartbeats and fails review tasks of the run state machine."""


LOOPBACK_HOSTS = frozenset({"127.0.0.1", "localhost", "::1"})
GITHUB_REPOSITORY = re.compile(r"^[A-Za-z0-9](?:[A-Za-z0-9-]{0,38})/[A-Za-z0-9._-]{1,100}$")
# A branch name git accepts, kept to the characters a team's branches use.
GIT_BRANCH = re.compile(r"^(?!/|.*//|.*\.\.|.*@\{|.*\.lock$|.*/$|.*\.$)[A-Za-z0-9._/-]{1,200}$")


def check_github_api_url(url: str) -> str:
    """https, where the token goes; plain http only to this machine (the local receiver)."""
    parts = urllib.parse.urlsplit(url)
    if parts.username or parts.password or parts.query or parts.fragment or not parts.hostname:
        raise ValueError(f"the GitHub API URL must be https://HOST[/PATH], got {url!r}")
    if parts.scheme != "https" and not (parts.scheme == "http" and parts.hostname in LOOPBACK_HOSTS):
        raise ValueError(f"the GitHub API URL must use https (the token travels with every call), got {url!r}")
    return url


def check_github_repository(name: str) -> str:
    if name and not GITHUB_REPOSITORY.match(name):
        raise ValueError(f"the GitHub repository must be OWNER/NAME (or empty, for none), got {name!r}")
    return name


def check_git_branch(name: str) -> str:
    if not GIT_BRANCH.match(name):
        raise ValueError(f"the base branch must be a git branch name, got {name!r}")
    return name


class NotificationSettings(IdempotencySettings):
    """A function that delivers notifications, and no other external write."""

    notification_topic_arn: str = Field(validation_alias="NOTIFICATION_TOPIC_ARN", min_length=1)


class EffectSettings(NotificationSettings):
    """A function that delivers every external write: notifications, tickets, pull requests (so
    it alone is told about GitHub and may read its token)."""

    github_api_url: Annotated[str, AfterValidator(check_github_api_url)] = Field(
        validation_alias="AGENTLEDGER_GITHUB_API_URL")
    # OWNER/NAME; empty turns tickets and pull requests off.
    github_repository: Annotated[str, AfterValidator(check_github_repository)] = Field(
        validation_alias="AGENTLEDGER_GITHUB_REPOSITORY")
    # The branch pull requests are opened against; their commit builds on its head.
    github_base_branch: Annotated[str, AfterValidator(check_git_branch)] = Field(
        validation_alias="AGENTLEDGER_GITHUB_BASE_BRANCH")
    github_token_secret_arn: str = Field(validation_alias="AGENTLEDGER_GITHUB_TOKEN_SECRET_ARN", min_length=1)


class ReviewRequestSettings(WorkflowSettings, NotificationSettings):
    """The review request: it registers the review, then notifies the reviewers (it never writes
    to GitHub, so it is not given the token)."""


ARTIFACT_LINK_SECONDS = (300, 900)  # the artifactLinkSeconds a deployment may choose: 5 to 15 minutes


class ApiSettings(IdempotencySettings, ExecutionSettings):
    """The API: it starts executions (idempotently), decides reviews and seals list cursors."""

    # The secret whose value seals the list cursors the API hands out.
    cursor_signing_secret_arn: str = Field(validation_alias="CURSOR_SIGNING_SECRET_ARN", min_length=1)
    # Separation of duties: the principal that requested a run may not approve it, unless a
    # one-person team turns this on (the allowSelfApproval context key).
    allow_self_approval: bool = Field(validation_alias="AGENTLEDGER_ALLOW_SELF_APPROVAL")
    # How long the artifact links in a run's view stay valid (the artifactLinkSeconds context key):
    # a link is a bearer credential for one object, so it lives minutes, not hours.
    artifact_link_seconds: int = Field(validation_alias="AGENTLEDGER_ARTIFACT_LINK_SECONDS",
                                       ge=ARTIFACT_LINK_SECONDS[0], le=ARTIFACT_LINK_SECONDS[1])


@lru_cache(maxsize=64)
def _parse(model: type[FunctionSettings], variables: tuple[tuple[str, str], ...]) -> FunctionSettings:
    try:
        return model.model_validate(dict(variables))
    except ValidationError as error:
        # One line per variable, not pydantic's report: the handoff and the logs show this message.
        raise SettingsError(f"{model.__name__}: " + "; ".join(_problem(detail) for detail in error.errors())) from None


def _problem(detail: ErrorDetails) -> str:
    name = ".".join(str(part) for part in detail["loc"])
    if detail["type"] == "missing":
        return f"environment variable {name} is not set; the stack must pass it to this function"
    return f"environment variable {name}={detail['input']!r} is not valid: {detail['msg']}"
