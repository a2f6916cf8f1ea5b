"""The CDK app: `cdk synth` (through cdk.json) or `python -m agentledger.deploy.app`."""

from __future__ import annotations

import json
import os
from typing import TYPE_CHECKING, Any, get_args

from aws_cdk import App, Validations
from cdk_nag import AwsSolutionsChecks

from agentledger.config import ARTIFACT_LINK_SECONDS, check_git_branch, check_github_api_url, check_github_repository
from agentledger.deploy import CDK_JSON_FILE, FORMER_CONTEXT_KEYS, PROJECT_ROOT, former_context_key_problem
from agentledger.deploy.constructs.functions import Concurrency, PlannerConfig
from agentledger.deploy.stack import AgentLedgerStack
from agentledger.generation import MAX_GENERATION_RUNS
from agentledger.source import ArchiveLimits
from agentledger.testrun.config import DEFAULT_IMAGE, IMAGE_NAME, Compute

if TYPE_CHECKING:
    from collections.abc import Callable
    from pathlib import Path

STACK_ID = "AgentLedgerStack"
CDK_JSON = json.loads(CDK_JSON_FILE.read_text())

# Context keys the stack reads, with their defaults (cdk.json's "context" documents the same).
DEFAULT_ENVIRONMENT_NAME = "dev"
DEFAULT_GITHUB_API_URL = "https://api.github.com"
DEFAULT_GITHUB_REPOSITORY = ""  # owner/name tickets are opened in; "" turns tickets off
DEFAULT_REVIEW_ALARM_SECONDS = 86400  # alarm when a review has waited longer than this
DEFAULT_TEST_TIMEOUT_LIMIT_SECONDS = 3600  # the most a repository's test `timeout` may ask for
DEFAULT_ISOLATED_TEST_BUILDS = False  # run test builds in a VPC without a route out
DEFAULT_ALLOW_SELF_APPROVAL = False  # let the principal that requested a run approve it
DEFAULT_GITHUB_BASE_BRANCH = "main"  # the branch pull requests are opened against
DEFAULT_REVIEW_EMPTY_PLANS = False  # ask a person to review a plan that writes nothing
DEFAULT_AGENT = ""  # "package.module:factory" of a custom agent; "" is the reference agent
DEFAULT_MAX_REPLANS = 3  # how often stale context may replan a run before it goes to a person
DEFAULT_WORKSPACE_RETENTION_HOURS = 24  # how long a failed attempt's workspace and unread tarballs stay
# The computes and images a repository may ask its builds for: the operator sets what a build costs.
DEFAULT_BUILD_COMPUTES = "BUILD_GENERAL1_SMALL,BUILD_GENERAL1_MEDIUM,BUILD_GENERAL1_LARGE"
DEFAULT_BUILD_IMAGES = DEFAULT_IMAGE
# The archive* keys' defaults are ArchiveLimits' (agentledger.source); the *Concurrency keys' are Concurrency's.
DEFAULT_ARTIFACT_LINK_SECONDS = 600  # how long the artifact links of a run's view stay valid, 300 to 900
WRITERS = ("pynguin", "doctest", "bedrock")
# The planner's defaults are PlannerConfig's: Pynguin, no model called.
DEFAULT_WRITER = PlannerConfig.writer
DEFAULT_GENERATION_MODULE_SECONDS = PlannerConfig.generation_module_seconds
DEFAULT_GENERATION_RUN_SECONDS = PlannerConfig.generation_run_seconds
DEFAULT_GENERATION_ITERATIONS = PlannerConfig.generation_iterations
DEFAULT_GENERATION_RUNS = PlannerConfig.generation_runs
DEFAULT_MUTATION_MODULE_SECONDS = PlannerConfig.mutation_module_seconds
DEFAULT_MUTATION_RUN_SECONDS = PlannerConfig.mutation_run_seconds
DEFAULT_BEDROCK_MODEL_ID = PlannerConfig.model_id
DEFAULT_BEDROCK_MAX_TOKENS = PlannerConfig.max_tokens
DEFAULT_BEDROCK_TEMPERATURE = PlannerConfig.temperature
DEFAULT_BEDROCK_PRICES = PlannerConfig.prices
DEFAULT_BEDROCK_MAX_REASKS = PlannerConfig.max_reasks


def _context(app: App, key: str, default: Any) -> Any:
    value = app.node.try_get_context(key)
    return default if value is None else value


def _positive_int(key: str, value: Any) -> int:
    """`-c key=N` on the CLI arrives as a string; cdk.json gives a number."""
    try:
        number = int(value)
    except (TypeError, ValueError):
        number = 0
    if number <= 0:
        raise ValueError(f"context {key} must be a positive whole number of seconds, got {value!r}")
    return number


def _runs(value: Any) -> int:
    """generationRuns: how many runs in a row a candidate test must pass (`-c key=N` arrives as a string)."""
    try:
        number = int(value)
    except (TypeError, ValueError):
        number = 0
    if not 1 <= number <= MAX_GENERATION_RUNS:
        raise ValueError(f"context generationRuns must be a whole number of runs from 1 to {MAX_GENERATION_RUNS}, "
                         f"got {value!r}")
    return number


def _count(key: str, value: Any) -> int:
    """A whole number, 0 or more (`-c key=N` arrives as a string)."""
    try:
        number = int(value)
    except (TypeError, ValueError):
        number = -1
    if number < 0:
        raise ValueError(f"context {key} must be a whole number, 0 or more, got {value!r}")
    return number


def _positive_number(key: str, value: Any) -> float:
    try:
        number = float(value)
    except (TypeError, ValueError):
        number = 0.0
    if not number > 0:
        raise ValueError(f"context {key} must be a number above 0, got {value!r}")
    return number


def _choice(key: str, value: Any, allowed: tuple[str, ...]) -> str:
    if value not in allowed:
        raise ValueError(f"context {key} must be one of {', '.join(allowed)}, got {value!r}")
    return str(value)


def _names(key: str, value: Any, valid: Callable[[str], bool], what: str) -> tuple[str, ...]:
    """A comma-separated list of at least one name, each `valid`."""
    names = tuple(part.strip() for part in str(value).split(",") if part.strip())
    wrong = [name for name in names if not valid(name)]
    if not names or wrong:
        raise ValueError(f"context {key} must be a comma-separated list of {what}, got {value!r}")
    return names


def _checked(key: str, check: Callable[[str], str], value: str) -> str:
    """A value the functions' settings would refuse, refused at synth instead, with the key named."""
    try:
        return check(value)
    except ValueError as error:
        raise ValueError(f"context {key}: {error}") from None


def _link_seconds(value: Any) -> int:
    seconds = _positive_int("artifactLinkSeconds", value)
    low, high = ARTIFACT_LINK_SECONDS
    if not low <= seconds <= high:
        raise ValueError(f"context artifactLinkSeconds must be {low} to {high} seconds, got {value!r}")
    return seconds


def _temperature(value: Any) -> float:
    try:
        temperature = float(value)
    except (TypeError, ValueError):
        temperature = -1.0
    if not 0.0 <= temperature <= 1.0:
        raise ValueError(f"context bedrockTemperature must be a number from 0 to 1, got {value!r}")
    return temperature


def _prices(key: str, value: Any) -> str:
    """"INPUT,OUTPUT": USD per 1,000 tokens."""
    parts = str(value).split(",")
    try:
        if len(parts) != 2 or any(float(part) < 0 for part in parts):
            raise ValueError
    except ValueError:
        raise ValueError(f"context {key} must be 'INPUT,OUTPUT' (USD per 1,000 tokens), got {value!r}") from None
    return str(value)


def _flag(key: str, value: Any) -> bool:
    """`-c key=true` on the CLI arrives as a string; cdk.json gives a boolean."""
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value.lower() in ("true", "false"):
        return value.lower() == "true"
    raise ValueError(f"context {key} must be true or false, got {value!r}")


def build_app(
    context: dict[str, Any] | None = None, outdir: Path | None = None
) -> tuple[App, AgentLedgerStack]:
    """The app with its one stack and the AwsSolutions checks that run when it is synthesized.

    cdk.json is read here as well as by the CDK CLI, so a plain `python -m agentledger.deploy.app` and the
    tests synthesize what the CLI deploys: the same feature flags, into the same cdk.out.
    Context and output given to the CLI (`-c environment=prod`, `--output`) still win.
    """
    app = App(
        context={**CDK_JSON.get("context", {}), **(context or {})},
        outdir=str(outdir or os.environ.get("CDK_OUTDIR") or PROJECT_ROOT / CDK_JSON["output"]),
    )
    for former in FORMER_CONTEXT_KEYS:
        if app.node.try_get_context(former) is not None:
            raise ValueError(former_context_key_problem(former))
    stack = AgentLedgerStack(
        app,
        STACK_ID,
        environment_name=_context(app, "environment", "") or DEFAULT_ENVIRONMENT_NAME,
        github_api_url=_checked("githubApiUrl", check_github_api_url,
                                str(_context(app, "githubApiUrl", "") or DEFAULT_GITHUB_API_URL)),
        github_repository=_checked("githubRepository", check_github_repository,
                                   str(_context(app, "githubRepository", DEFAULT_GITHUB_REPOSITORY))),
        github_base_branch=_checked("githubBaseBranch", check_git_branch,
                                    str(_context(app, "githubBaseBranch", "") or DEFAULT_GITHUB_BASE_BRANCH)),
        review_alarm_seconds=_positive_int(
            "reviewAlarmSeconds", _context(app, "reviewAlarmSeconds", DEFAULT_REVIEW_ALARM_SECONDS)
        ),
        test_timeout_limit_seconds=_positive_int(
            "testTimeoutLimitSeconds",
            _context(app, "testTimeoutLimitSeconds", DEFAULT_TEST_TIMEOUT_LIMIT_SECONDS),
        ),
        build_computes=_names("buildComputes", _context(app, "buildComputes", DEFAULT_BUILD_COMPUTES),
                              lambda name: name in get_args(Compute),
                              f"CodeBuild computes ({', '.join(get_args(Compute))})"),
        build_images=_names("buildImages", _context(app, "buildImages", DEFAULT_BUILD_IMAGES),
                            lambda name: IMAGE_NAME.fullmatch(name) is not None, "image names"),
        archive_limits=ArchiveLimits(
            max_members=_positive_int(
                "archiveMaxMembers", _context(app, "archiveMaxMembers", ArchiveLimits.max_members)),
            max_bytes=_positive_int("archiveMaxBytes", _context(app, "archiveMaxBytes", ArchiveLimits.max_bytes)),
            max_ratio=_positive_int("archiveMaxRatio", _context(app, "archiveMaxRatio", ArchiveLimits.max_ratio)),
        ),
        concurrency=Concurrency(
            api=_positive_int("apiConcurrency", _context(app, "apiConcurrency", Concurrency.api)),
            stages=_positive_int("stageConcurrency", _context(app, "stageConcurrency", Concurrency.stages)),
            test_builds=_positive_int("testBuildConcurrency",
                                      _context(app, "testBuildConcurrency", Concurrency.test_builds)),
        ),
        artifact_link_seconds=_link_seconds(_context(app, "artifactLinkSeconds", DEFAULT_ARTIFACT_LINK_SECONDS)),
        isolated_test_builds=_flag(
            "isolatedTestBuilds", _context(app, "isolatedTestBuilds", DEFAULT_ISOLATED_TEST_BUILDS)
        ),
        allow_self_approval=_flag(
            "allowSelfApproval", _context(app, "allowSelfApproval", DEFAULT_ALLOW_SELF_APPROVAL)
        ),
        review_empty_plans=_flag(
            "reviewEmptyPlans", _context(app, "reviewEmptyPlans", DEFAULT_REVIEW_EMPTY_PLANS)
        ),
        agent_spec=str(_context(app, "agent", DEFAULT_AGENT)),
        max_replans=_count("maxReplans", _context(app, "maxReplans", DEFAULT_MAX_REPLANS)),
        workspace_retention_hours=_positive_number(
            "workspaceRetentionHours", _context(app, "workspaceRetentionHours", DEFAULT_WORKSPACE_RETENTION_HOURS)
        ),
        planner=PlannerConfig(
            writer=_choice("writer", _context(app, "writer", DEFAULT_WRITER), WRITERS),
            generation_module_seconds=_positive_int(
                "generationModuleSeconds", _context(app, "generationModuleSeconds", DEFAULT_GENERATION_MODULE_SECONDS)),
            generation_run_seconds=_positive_int(
                "generationRunSeconds", _context(app, "generationRunSeconds", DEFAULT_GENERATION_RUN_SECONDS)),
            generation_iterations=_positive_int(
                "generationIterations", _context(app, "generationIterations", DEFAULT_GENERATION_ITERATIONS)),
            generation_runs=_runs(_context(app, "generationRuns", DEFAULT_GENERATION_RUNS)),
            mutation_module_seconds=_positive_int(
                "mutationModuleSeconds", _context(app, "mutationModuleSeconds", DEFAULT_MUTATION_MODULE_SECONDS)),
            mutation_run_seconds=_positive_int(
                "mutationRunSeconds", _context(app, "mutationRunSeconds", DEFAULT_MUTATION_RUN_SECONDS)),
            model_id=str(_context(app, "bedrockModelId", DEFAULT_BEDROCK_MODEL_ID)),
            max_tokens=_positive_int("bedrockMaxTokens", _context(app, "bedrockMaxTokens", DEFAULT_BEDROCK_MAX_TOKENS)),
            temperature=_temperature(_context(app, "bedrockTemperature", DEFAULT_BEDROCK_TEMPERATURE)),
            prices=_prices("bedrockPrices", _context(app, "bedrockPrices", DEFAULT_BEDROCK_PRICES)),
            max_reasks=_count("bedrockMaxReasks", _context(app, "bedrockMaxReasks", DEFAULT_BEDROCK_MAX_REASKS)),
        ),
    )
    # cdk-nag 3 is a policy-validation plugin: any unacknowledged finding fails the synth and
    # prints the report.
    Validations.of(app).add_plugins(AwsSolutionsChecks(app, verbose=True))
    return app, stack


def main() -> None:
    app, _ = build_app()
    app.synth()


if __name__ == "__main__":
    main()
