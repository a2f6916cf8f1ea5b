"""Configuration read from the function's environment, as the stack sets it."""
from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path


def _required(name: str) -> str:
    value = os.environ.get(name)
    if not value:
        raise RuntimeError(f"environment variable {name} is not set; the stack must pass it to this function")
    return value


def _prices(text: str) -> tuple[float, float]:
    input_price, _, output_price = text.partition(",")
    return float(input_price), float(output_price or 0)


@dataclass(frozen=True)
class Settings:
    ledger_table: str
    artifact_bucket: str
    idempotency_table: str
    environment: str
    state_machine_arn: str | None
    workspace_root: Path
    max_replans: int
    agent_spec: str | None
    notification_topic_arn: str | None = None
    github_api_url: str = "https://api.github.com"
    github_repository: str | None = None
    # The branch pull requests are opened against; their commit builds on its head.
    github_base_branch: str = "main"
    github_token_secret_arn: str | None = None
    receiver_timeout_s: float = 5.0
    test_build_project: str | None = None
    # The most a repository's `timeout` may ask for: an operator's bound on what one untrusted
    # repository can spend on build minutes.
    test_timeout_limit_s: int = 3600
    # Where artifact links and a build's grants point; unset on AWS (S3's own endpoint). The local
    # runtime sets it to an S3 endpoint on loopback that curl and the build sandbox can reach.
    artifact_link_endpoint: str | None = None
    # Separation of duties: the principal that requested a run may not approve it, unless a
    # one-person team turns this on (the allowSelfApproval context key).
    allow_self_approval: bool = False
    # Directories under which a local repository may lie. Only the local runtime sets them; on
    # AWS the functions read uploaded tarballs only.
    local_repository_roots: tuple[Path, ...] = ()
    # The secret whose value seals the list cursors the API hands out (the API function only).
    cursor_signing_secret_arn: str | None = None
    # A plan that writes nothing ends the run as `nothing_to_do`, unless this asks a person to
    # review it anyway (the reviewEmptyPlans context key).
    review_empty_plans: bool = False
    # Which planner the reference agent uses: "docstring-examples" (no model) or "bedrock".
    planner: str = "docstring-examples"
    bedrock_model_id: str = ""
    bedrock_max_tokens: int = 4096
    bedrock_temperature: float = 0.0
    bedrock_max_reasks: int = 2
    # USD per 1,000 input and output tokens, for the cost estimate ("INPUT,OUTPUT").
    bedrock_prices: tuple[float, float] = (0.0, 0.0)
    # Locally only: the AWS profile whose credentials sign Bedrock calls that pass through moto.
    bedrock_profile: str | None = None
    # How long a workspace a failed attempt left (and an extracted tarball no run read) is kept.
    workspace_retention_s: int = 24 * 3600

    @classmethod
    def from_env(cls) -> Settings:
        return cls(
            ledger_table=_required("LEDGER_TABLE_NAME"),
            artifact_bucket=_required("ARTIFACT_BUCKET_NAME"),
            idempotency_table=_required("IDEMPOTENCY_TABLE_NAME"),
            environment=os.environ.get("AGENTLEDGER_ENVIRONMENT", "dev"),
            state_machine_arn=os.environ.get("STATE_MACHINE_ARN"),
            # Lambda can only write under /tmp; the local runtime points this elsewhere.
            workspace_root=Path(os.environ.get("AGENTLEDGER_WORKSPACE_ROOT", "/tmp/agentledger")),
            max_replans=int(os.environ.get("AGENTLEDGER_MAX_REPLANS", "3")),
            agent_spec=os.environ.get("AGENTLEDGER_AGENT") or None,
            notification_topic_arn=os.environ.get("NOTIFICATION_TOPIC_ARN") or None,
            github_api_url=os.environ.get("GITHUB_API_URL") or "https://api.github.com",
            github_repository=os.environ.get("GITHUB_REPOSITORY") or None,
            github_token_secret_arn=os.environ.get("GITHUB_TOKEN_SECRET_ARN") or None,
            github_base_branch=os.environ.get("GITHUB_BASE_BRANCH") or "main",
            receiver_timeout_s=float(os.environ.get("AGENTLEDGER_RECEIVER_TIMEOUT_SECONDS", "5")),
            test_build_project=os.environ.get("TEST_BUILD_PROJECT_NAME") or None,
            test_timeout_limit_s=int(os.environ.get("AGENTLEDGER_TEST_TIMEOUT_LIMIT_SECONDS", "3600")),
            artifact_link_endpoint=os.environ.get("ARTIFACT_LINK_ENDPOINT") or None,
            allow_self_approval=os.environ.get("AGENTLEDGER_ALLOW_SELF_APPROVAL", "false") == "true",
            local_repository_roots=tuple(
                Path(root) for root in os.environ.get("AGENTLEDGER_LOCAL_REPOSITORY_ROOTS", "").split(os.pathsep) if root),
            review_empty_plans=os.environ.get("AGENTLEDGER_REVIEW_EMPTY_PLANS", "false") == "true",
            cursor_signing_secret_arn=os.environ.get("CURSOR_SIGNING_SECRET_ARN") or None,
            planner=os.environ.get("AGENTLEDGER_PLANNER") or "docstring-examples",
            bedrock_model_id=os.environ.get("AGENTLEDGER_BEDROCK_MODEL_ID", ""),
            bedrock_max_tokens=int(os.environ.get("AGENTLEDGER_BEDROCK_MAX_TOKENS", "4096")),
            bedrock_temperature=float(os.environ.get("AGENTLEDGER_BEDROCK_TEMPERATURE", "0")),
            bedrock_max_reasks=int(os.environ.get("AGENTLEDGER_BEDROCK_MAX_REASKS", "2")),
            bedrock_prices=_prices(os.environ.get("AGENTLEDGER_BEDROCK_PRICES") or "0,0"),
            bedrock_profile=os.environ.get("AGENTLEDGER_BEDROCK_PROFILE") or None,
            workspace_retention_s=int(float(os.environ.get("AGENTLEDGER_WORKSPACE_RETENTION_HOURS", "24")) * 3600),
        )

    def require_state_machine(self) -> str:
        if not self.state_machine_arn:
            raise RuntimeError("environment variable STATE_MACHINE_ARN is not set for this function")
        return self.state_machine_arn
