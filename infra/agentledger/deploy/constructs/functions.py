"""The Lambda functions: one shared code asset, one dependencies layer, one role per function.

Every function is declared once in FUNCTION_SPECS; the construct turns each row into a function,
its log group, its role and exactly the grants that row asks for.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum
from typing import TYPE_CHECKING

from aws_cdk import Acknowledgment, ArnFormat, Duration, IgnoreMode, Stack, Validations
from aws_cdk import aws_dynamodb as dynamodb
from aws_cdk import aws_iam as iam
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_logs as logs
from aws_cdk import aws_s3 as s3
from aws_cdk import aws_stepfunctions as sfn
from constructs import Construct

from agentledger import metric_names
from agentledger.deploy import HOST_ONLY_SUBPACKAGES, LAMBDA_PACKAGE, lambda_code_root
from agentledger.deploy.constructs import cfn_resource, logical_id
from agentledger.deploy.constructs.bundling import dependencies_layer_code
from agentledger.generation import DEFAULT_GENERATION_RUNS
from agentledger.source import UPLOAD_PREFIX, ArchiveLimits

if TYPE_CHECKING:
    from agentledger.deploy.constructs.build_sandbox import BuildSandbox
    from agentledger.deploy.constructs.notifications import Notifications
    from agentledger.deploy.constructs.storage import Storage

RUNTIME = lambda_.Runtime.PYTHON_3_14
ARCHITECTURE = lambda_.Architecture.ARM_64
LOG_RETENTION = logs.RetentionDays.ONE_MONTH
DEFAULT_MEMORY_MB = 256
# Powertools Metrics adds it as the `service` dimension of every metric (the dashboard's too).
SERVICE_NAME = "agentledger"


class Access(Enum):
    NONE = "none"
    READ = "read"
    READ_WRITE = "read_write"


class WorkflowControl(Enum):
    """What a function may do to executions of the run state machine."""

    NONE = "none"
    # Heartbeat or fail a waiting review task, and look at the execution it belongs to.
    RESPOND_TO_TASKS = "respond_to_tasks"
    # The above, plus start executions (new runs and resumes).
    START_AND_RESPOND = "start_and_respond"


@dataclass(frozen=True)
class FunctionSpec:
    name: str  # the contract's logical name, also the CloudFormation logical id
    handler: str
    timeout_seconds: int
    ledger: Access = Access.READ_WRITE
    artifacts: Access = Access.READ_WRITE
    idempotency: Access = Access.NONE
    workflow_control: WorkflowControl = WorkflowControl.NONE
    # A state-machine task gets its ARN substituted into statemachines/run.asl.json as ${<name>Arn}.
    state_machine_task: bool = True
    memory_mb: int = DEFAULT_MEMORY_MB
    # Runs the workflow (a stage, the assessment, the classifier, the review keeper), so it gets
    # the workflow's settings: the agent, the planner, the bounds on builds and workspaces.
    runs_workflow: bool = True
    # Publishes to the notification topic (the review request, and every effect delivery).
    notifies: bool = False
    # Delivers the GitHub effects (tickets, pull requests), so it alone may read the GitHub token.
    writes_to_github: bool = False
    # Starts and watches the test builds of the build sandbox.
    starts_test_builds: bool = False
    # Reads the status of the sandbox's test builds, and nothing else of them.
    reads_test_builds: bool = False
    # Parks or answers the stages' waits for their test builds (the build wait table).
    build_waits: bool = False
    # Applies people's review decisions, so it enforces separation of duties.
    decides_reviews: bool = False
    # Signs upload grants (presigned POSTs) for repository tarballs under UPLOAD_PREFIX.
    grants_uploads: bool = False
    # Runs the planner, so it may call the configured model.
    plans: bool = False
    # Hands out list cursors, sealed with the cursor signing key, and artifact links.
    signs_cursors: bool = False


@dataclass(frozen=True)
class Concurrency:
    """What may run at once (the *Concurrency context keys): reserved concurrency of the API and of
    each state-machine task, so a flood of requests or runs cannot take the account's whole pool
    (nor be starved by other functions), and the test builds CodeBuild runs at once."""

    api: int = 20
    stages: int = 20
    test_builds: int = 10


@dataclass(frozen=True)
class PlannerConfig:
    """The reference agent's writer, as the writer, generation* and bedrock* context keys choose it."""

    writer: str = "pynguin"
    # The caps on test generation that a repository can only lower: Pynguin's search per module and
    # per run, and its iteration bound (the same inputs give the same tests while it holds).
    generation_module_seconds: int = 60
    generation_run_seconds: int = 600
    generation_iterations: int = 1000
    # The caps on mutation analysis (the fourth filter), per targeted module and per run.
    mutation_module_seconds: int = 60
    mutation_run_seconds: int = 300
    # How many runs in a row a candidate must pass, alone and with the suite, to be kept.
    generation_runs: int = DEFAULT_GENERATION_RUNS
    model_id: str = "anthropic.claude-3-5-haiku-20241022-v1:0"
    max_tokens: int = 4096
    temperature: float = 0.0  # plans should not vary from call to call
    prices: str = "0.0008,0.004"  # USD per 1,000 input,output tokens: the cost estimate's price table
    max_reasks: int = 2  # how often an answer that is not a valid plan goes back to the model with its errors

    def environment(self) -> dict[str, str]:
        return {"AGENTLEDGER_WRITER": self.writer,
                "AGENTLEDGER_GENERATION_MODULE_SECONDS": str(self.generation_module_seconds),
                "AGENTLEDGER_GENERATION_RUN_SECONDS": str(self.generation_run_seconds),
                "AGENTLEDGER_GENERATION_ITERATIONS": str(self.generation_iterations),
                "AGENTLEDGER_GENERATION_RUNS": str(self.generation_runs),
                "AGENTLEDGER_MUTATION_MODULE_SECONDS": str(self.mutation_module_seconds),
                "AGENTLEDGER_MUTATION_RUN_SECONDS": str(self.mutation_run_seconds),
                "AGENTLEDGER_BEDROCK_MODEL_ID": self.model_id,
                "AGENTLEDGER_BEDROCK_MAX_TOKENS": str(self.max_tokens),
                "AGENTLEDGER_BEDROCK_TEMPERATURE": str(self.temperature), "AGENTLEDGER_BEDROCK_PRICES": self.prices,
                "AGENTLEDGER_BEDROCK_MAX_REASKS": str(self.max_reasks)}


FUNCTION_SPECS: tuple[FunctionSpec, ...] = (
    FunctionSpec(
        "ApiFunction", "agentledger.handlers.api.handler", 29,
        artifacts=Access.READ,  # source snapshots, and presigned artifact links signed by this role
        idempotency=Access.READ_WRITE,  # POST /runs honours the Idempotency-Key header
        workflow_control=WorkflowControl.START_AND_RESPOND,
        state_machine_task=False,
        runs_workflow=False,
        decides_reviews=True,
        grants_uploads=True,
        signs_cursors=True,
    ),
    FunctionSpec("AssessFunction", "agentledger.handlers.control.assess", 60, artifacts=Access.READ),
    FunctionSpec("InspectFunction", "agentledger.handlers.stages.inspect", 300),
    FunctionSpec("PlanFunction", "agentledger.handlers.stages.plan", 300, plans=True),
    FunctionSpec(
        "ExecuteFunction", "agentledger.handlers.stages.execute", 300,
        # Renders the candidates and packages them; writing and filtering them runs in a build.
        memory_mb=512,
        starts_test_builds=True,
    ),
    FunctionSpec(
        "VerifyFunction", "agentledger.handlers.stages.verify", 120,
        # Packages the inputs and reads back the results; the suite itself runs in a build.
        memory_mb=512,
        starts_test_builds=True,
    ),
    FunctionSpec(
        "WatchBuildFunction", "agentledger.handlers.builds.watch", 20,
        # Parks a stage's wait for its build, and looks at the build once parked. It answers no
        # task itself (a build already over fails its invocation, which the state machine catches).
        artifacts=Access.NONE,
        ledger=Access.NONE,
        runs_workflow=False,
        reads_test_builds=True,
        build_waits=True,
    ),
    FunctionSpec(
        "BuildEndedFunction", "agentledger.handlers.builds.ended", 20,
        # CodeBuild's state-change event: answers the waits on the build, and offers its room.
        ledger=Access.NONE,
        artifacts=Access.NONE,
        workflow_control=WorkflowControl.RESPOND_TO_TASKS,
        state_machine_task=False,
        runs_workflow=False,
        build_waits=True,
    ),
    FunctionSpec(
        "RequestReviewFunction", "agentledger.handlers.review.request", 20,
        # Registers the review, then notifies the reviewers through the effects layer; short for
        # the same reason as EffectFunction (the idempotency lock of a crashed attempt).
        idempotency=Access.READ_WRITE,
        notifies=True,
    ),
    FunctionSpec("CompleteFunction", "agentledger.handlers.stages.complete", 300),
    FunctionSpec("ClassifyFunction", "agentledger.handlers.control.classify", 60),
    FunctionSpec(
        "EffectFunction", "agentledger.handlers.effects.deliver", 15,
        # Short on purpose: Powertools idempotency's in-progress lock of a crashed attempt
        # expires with the invocation's deadline, so a retry waits at most ~15 s.
        artifacts=Access.READ,
        idempotency=Access.READ_WRITE,  # every effect is a Powertools idempotent_function
        runs_workflow=False,
        notifies=True,
        writes_to_github=True,
    ),
    FunctionSpec(
        "ReviewKeeperFunction", "agentledger.handlers.review.keep_alive", 60,
        artifacts=Access.READ,  # re-checks each pending plan against its source snapshot
        workflow_control=WorkflowControl.RESPOND_TO_TASKS,
        state_machine_task=False,
    ),
)


# Start a build with this test run's variables, poll it, find it again after a crash. Nothing
# in the workflow stops a build (its timeout does), so StopBuild is an operator's, not verify's.
TEST_BUILD_ACTIONS = (
    "codebuild:StartBuild",
    "codebuild:BatchGetBuilds",
    "codebuild:ListBuildsForProject",
)


class Functions(Construct):
    """All Lambda functions of the contract, built from FUNCTION_SPECS."""

    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        storage: Storage,
        notifications: Notifications,
        build_sandbox: BuildSandbox,
        test_timeout_limit_seconds: int,
        build_computes: tuple[str, ...],
        build_images: tuple[str, ...],
        archive_limits: ArchiveLimits,
        concurrency: Concurrency,
        artifact_link_seconds: int,
        environment_name: str,
        allow_self_approval: bool,
        review_empty_plans: bool,
        agent_spec: str,
        planner: PlannerConfig,
        max_replans: int,
        workspace_retention_hours: float,
    ) -> None:
        super().__init__(scope, construct_id)
        self._planner = planner
        self._concurrency = concurrency
        self._storage = storage
        self._notifications = notifications
        self._build_sandbox = build_sandbox
        self._dependencies = lambda_.LayerVersion(
            self,
            "DependenciesLayer",
            code=dependencies_layer_code(RUNTIME),
            compatible_runtimes=[RUNTIME],
            compatible_architectures=[ARCHITECTURE],
            description="agentledger run-time dependencies (pinned in pyproject.toml)",
        )
        self._code = lambda_.Code.from_asset(
            str(lambda_code_root()),
            # The Lambda package and nothing else: functions/ in a checkout, site-packages when installed
            # (where the package also holds what only a host runs).
            exclude=["/*", f"!/{LAMBDA_PACKAGE}/", *(f"/{LAMBDA_PACKAGE}/{name}/" for name in HOST_ONLY_SUBPACKAGES),
                     "__pycache__/", "*.pyc"],
            ignore_mode=IgnoreMode.GIT,
        )
        # A function gets exactly the variables its settings model requires (functions/agentledger/config.py).
        self._common_environment = {
            "LEDGER_TABLE_NAME": storage.ledger_table.table_name,
            "ARTIFACT_BUCKET_NAME": storage.artifact_bucket.bucket_name,
            "POWERTOOLS_SERVICE_NAME": SERVICE_NAME,
            "POWERTOOLS_METRICS_NAMESPACE": metric_names.NAMESPACE,
            "POWERTOOLS_LOG_LEVEL": "INFO",
            "AGENTLEDGER_ENVIRONMENT": environment_name,
            "AGENTLEDGER_MAX_REPLANS": str(max_replans),
            "AGENTLEDGER_ARCHIVE_MAX_MEMBERS": str(archive_limits.max_members),
            "AGENTLEDGER_ARCHIVE_MAX_BYTES": str(archive_limits.max_bytes),
            "AGENTLEDGER_ARCHIVE_MAX_RATIO": str(archive_limits.max_ratio),
        }
        self._workflow_environment = {
            "AGENTLEDGER_REVIEW_EMPTY_PLANS": "true" if review_empty_plans else "false",
            "AGENTLEDGER_WORKSPACE_RETENTION_HOURS": str(workspace_retention_hours),
            "AGENTLEDGER_TEST_TIMEOUT_LIMIT_SECONDS": str(test_timeout_limit_seconds),
            "AGENTLEDGER_BUILD_COMPUTES": ",".join(build_computes),
            "AGENTLEDGER_BUILD_IMAGES": ",".join(build_images),
            "AGENTLEDGER_AGENT": agent_spec,
            **self._planner.environment(),
        }
        self._build_environment = {"TEST_BUILD_PROJECT_NAME": build_sandbox.project.project_name,
                                   "OUTPUT_GRANT_PARAMETER_PATH": build_sandbox.grant_path,
                                   "OUTPUT_GRANT_KEY_ARN": build_sandbox.grant_key.key_arn}
        self._idempotency_environment = {"IDEMPOTENCY_TABLE_NAME": storage.idempotency_table.table_name}
        self._cursor_environment = {"CURSOR_SIGNING_SECRET_ARN": storage.cursor_signing_key.secret_arn,
                                    "AGENTLEDGER_ARTIFACT_LINK_SECONDS": str(artifact_link_seconds)}
        self._build_wait_environment = {"BUILD_WAIT_TABLE_NAME": storage.build_wait_table.table_name}
        self._review_environment = {"AGENTLEDGER_ALLOW_SELF_APPROVAL": "true" if allow_self_approval else "false"}
        self._notification_environment = {"NOTIFICATION_TOPIC_ARN": notifications.topic.topic_arn}
        self._github_environment = {
            "AGENTLEDGER_GITHUB_API_URL": notifications.github_api_url,
            "AGENTLEDGER_GITHUB_REPOSITORY": notifications.github_repository,
            "AGENTLEDGER_GITHUB_BASE_BRANCH": notifications.github_base_branch,
            "AGENTLEDGER_GITHUB_TOKEN_SECRET_ARN": notifications.github_token_secret.secret_arn,
        }
        self.by_name: dict[str, lambda_.Function] = {
            spec.name: self._build(spec) for spec in FUNCTION_SPECS
        }

    @property
    def api(self) -> lambda_.Function:
        return self.by_name["ApiFunction"]

    @property
    def review_keeper(self) -> lambda_.Function:
        return self.by_name["ReviewKeeperFunction"]

    @property
    def build_ended(self) -> lambda_.Function:
        return self.by_name["BuildEndedFunction"]

    @property
    def state_machine_tasks(self) -> dict[str, lambda_.Function]:
        return {spec.name: self.by_name[spec.name] for spec in FUNCTION_SPECS if spec.state_machine_task}

    def connect_state_machine(self, state_machine: sfn.StateMachine) -> None:
        """Give the functions that drive executions the state machine's ARN and their grants.

        Separate from __init__ because the state machine is built from the task functions' ARNs.
        """
        # Execution names are chosen per run attempt at run time: only this machine's executions.
        executions = Stack.of(self).format_arn(
            service="states",
            resource="execution",
            resource_name=f"{state_machine.state_machine_name}:*",
            arn_format=ArnFormat.COLON_RESOURCE_NAME,
        )
        for spec in FUNCTION_SPECS:
            if spec.workflow_control is WorkflowControl.NONE:
                continue
            function = self.by_name[spec.name]
            function.add_environment("STATE_MACHINE_ARN", state_machine.state_machine_arn)
            if spec.workflow_control is WorkflowControl.START_AND_RESPOND:
                state_machine.grant_start_execution(function)
            state_machine.grant_task_response(function)
            function.add_to_role_policy(
                iam.PolicyStatement(actions=["states:DescribeExecution"], resources=[executions])
            )
            assert function.role is not None, "_build gives every function its role"
            _acknowledge_wildcard(
                function.role,
                "arn:<AWS::Partition>:states:<AWS::Region>:<AWS::AccountId>:execution:"
                f"{_reference(state_machine, 'Name')}:*",
                "DescribeExecution on executions of this one state machine; their names are "
                "chosen per run attempt at run time.",
            )

    def _build(self, spec: FunctionSpec) -> lambda_.Function:
        role = iam.Role(
            self,
            f"{spec.name}Role",
            assumed_by=iam.ServicePrincipal("lambda.amazonaws.com"),
            description=f"Runs {spec.name} ({spec.handler})",
        )
        log_group = logs.LogGroup(self, f"{spec.name}Logs", retention=LOG_RETENTION)
        # Written to this one log group only, instead of AWSLambdaBasicExecutionRole's logs:* on "*".
        log_group.grant_write(role)

        function = lambda_.Function(
            self,
            spec.name,
            runtime=RUNTIME,
            architecture=ARCHITECTURE,
            handler=spec.handler,
            code=self._code,
            layers=[self._dependencies],
            timeout=Duration.seconds(spec.timeout_seconds),
            memory_size=spec.memory_mb,
            tracing=lambda_.Tracing.ACTIVE,
            log_group=log_group,
            role=role,
            reserved_concurrent_executions=(self._concurrency.api if spec.name == "ApiFunction"
                                            else self._concurrency.stages if spec.state_machine_task else None),
            environment={
                **self._common_environment,
                **(self._idempotency_environment if spec.idempotency is not Access.NONE else {}),
                **(self._workflow_environment if spec.runs_workflow else {}),
                **(self._notification_environment if spec.notifies else {}),
                **(self._github_environment if spec.writes_to_github else {}),
                **(self._build_environment if spec.starts_test_builds else {}),
                **(self._build_wait_environment if spec.build_waits else {}),
                **(self._review_environment if spec.decides_reviews else {}),
                **(self._cursor_environment if spec.signs_cursors else {}),
            },
        )
        # The contract names functions by logical id (the local runtime maps them to handlers).
        cfn_resource(function).override_logical_id(spec.name)

        self._grant_data_access(role, spec)
        if spec.signs_cursors:
            role.add_to_principal_policy(iam.PolicyStatement(
                actions=["secretsmanager:GetSecretValue"], resources=[self._storage.cursor_signing_key.secret_arn]))
        if spec.plans and self._planner.writer == "bedrock":
            # The Converse API is authorized as bedrock:InvokeModel, here on the configured model only.
            role.add_to_principal_policy(iam.PolicyStatement(
                actions=["bedrock:InvokeModel"],
                resources=[Stack.of(self).format_arn(service="bedrock", account="", resource="foundation-model",
                                                     resource_name=self._planner.model_id)]))
        if spec.notifies:
            self._grant_notifications(role)
        if spec.writes_to_github:
            token = self._notifications.github_token_secret
            role.add_to_principal_policy(iam.PolicyStatement(
                actions=["secretsmanager:GetSecretValue"], resources=[token.secret_arn]))
        if spec.starts_test_builds:
            role.add_to_principal_policy(
                iam.PolicyStatement(
                    actions=list(TEST_BUILD_ACTIONS), resources=[self._build_sandbox.project.project_arn]
                )
            )
            self._build_sandbox.grant_start(role)
        if spec.reads_test_builds:
            role.add_to_principal_policy(iam.PolicyStatement(
                actions=["codebuild:BatchGetBuilds"], resources=[self._build_sandbox.project.project_arn]))
        _acknowledge_wildcard(
            role, "*", "X-Ray PutTraceSegments/PutTelemetryRecords support no resource-level permissions."
        )
        return function

    def _grant_data_access(self, role: iam.Role, spec: FunctionSpec) -> None:
        if spec.ledger is not Access.NONE:
            _grant_table(self._storage.ledger_table, role, _LEDGER_ACTIONS[spec.ledger], has_indexes=True)
        if spec.idempotency is not Access.NONE:
            _grant_table(self._storage.idempotency_table, role, _IDEMPOTENCY_ACTIONS, has_indexes=False)
        if spec.build_waits:
            _grant_table(self._storage.build_wait_table, role, _BUILD_WAIT_ACTIONS, has_indexes=False)
        _grant_bucket(self._storage.artifact_bucket, role, spec.artifacts)
        if spec.grants_uploads:
            # A presigned POST carries its signer's permissions: PutObject under the upload prefix only.
            bucket = self._storage.artifact_bucket
            # (Its wildcard is acknowledged with the bucket's: each grant names one <owner>/<sha256> key.)
            role.add_to_principal_policy(iam.PolicyStatement(
                actions=["s3:PutObject"], resources=[bucket.arn_for_objects(f"{UPLOAD_PREFIX}*")]))

    def _grant_notifications(self, role: iam.Role) -> None:
        """Publish to the notification topic: exact actions, rather than Topic.grant_publish's
        kms:GenerateDataKey*."""
        notifications = self._notifications
        role.add_to_principal_policy(
            iam.PolicyStatement(actions=["sns:Publish"], resources=[notifications.topic.topic_arn])
        )
        # What SNS asks of a publisher to a topic encrypted with a customer managed key.
        role.add_to_principal_policy(
            iam.PolicyStatement(
                actions=["kms:GenerateDataKey", "kms:Decrypt"],
                resources=[notifications.topic_key.key_arn],
            )
        )


# Exactly what the code calls. The ledger: GetItem and Query to read (the run, its records, the
# two indexes that list runs), PutItem to write (every change is a transaction of conditional Puts).
_LEDGER_ACTIONS = {
    Access.READ: ["dynamodb:GetItem", "dynamodb:Query"],
    Access.READ_WRITE: ["dynamodb:GetItem", "dynamodb:Query", "dynamodb:PutItem"],
}
# The build waits: parked (PutItem), taken once (a conditional DeleteItem), read by build (Query);
# and when a build last ended (UpdateItem by the end, GetItem by a parking: is the queue moving?).
_BUILD_WAIT_ACTIONS = ["dynamodb:PutItem", "dynamodb:DeleteItem", "dynamodb:Query", "dynamodb:UpdateItem",
                       "dynamodb:GetItem"]
# Powertools idempotency: reads, puts and updates its record, and deletes it when the call failed.
_IDEMPOTENCY_ACTIONS = ["dynamodb:GetItem", "dynamodb:PutItem", "dynamodb:UpdateItem", "dynamodb:DeleteItem"]


def _grant_table(table: dynamodb.Table, role: iam.Role, actions: list[str], *, has_indexes: bool) -> None:
    role.add_to_principal_policy(iam.PolicyStatement(actions=actions, resources=[table.table_arn]))
    if has_indexes:  # queries through this table's indexes, and only queries
        role.add_to_principal_policy(iam.PolicyStatement(actions=["dynamodb:Query"],
                                                         resources=[f"{table.table_arn}/index/*"]))
        _acknowledge_wildcard(
            role,
            f"{_reference(table, 'Arn')}/index/*",
            "Queries go through this table's global secondary indexes (index/*), of this table only.",
        )


# The bucket's two prefixes: run artifacts (runs/<run id>/...) and uploaded repositories. Every
# function with artifact access reads both (a snapshot re-reads its repository); only stage
# functions write, and under runs/ only. Listing (which the handoff does under one run's stage,
# and the existence checks under one key) is conditioned on the same prefixes.
ARTIFACT_PREFIXES = ("runs/", UPLOAD_PREFIX)


def _grant_bucket(bucket: s3.Bucket, role: iam.Role, access: Access) -> None:
    if access is Access.NONE:
        return
    role.add_to_principal_policy(iam.PolicyStatement(
        actions=["s3:ListBucket"], resources=[bucket.bucket_arn],
        conditions={"StringLike": {"s3:prefix": [f"{prefix}*" for prefix in ARTIFACT_PREFIXES]}}))
    role.add_to_principal_policy(iam.PolicyStatement(
        actions=["s3:GetObject"], resources=[bucket.arn_for_objects(f"{prefix}*") for prefix in ARTIFACT_PREFIXES]))
    if access is Access.READ_WRITE:
        role.add_to_principal_policy(iam.PolicyStatement(actions=["s3:PutObject"],
                                                         resources=[bucket.arn_for_objects("runs/*")]))
    for prefix in ARTIFACT_PREFIXES:
        _acknowledge_wildcard(
            role,
            f"{_reference(bucket, 'Arn')}/{prefix}*",
            "Artifact keys are content hashes under per-run prefixes, and uploads under per-caller "
            "prefixes, chosen at run time; objects of this one bucket only.",
        )


def _reference(resource: Construct, attribute: str) -> str:
    """How cdk-nag spells Fn::GetAtt of a resource's attribute in a finding: <LogicalId.Attr>."""
    return f"<{logical_id(resource)}.{attribute}>"


def wildcard_resource_finding(resource: str) -> str:
    """The id cdk-nag gives the AwsSolutions-IAM5 finding for one wildcard resource."""
    return f"AwsSolutions-IAM5[Resource::{resource}]"


def _acknowledge_wildcard(role: iam.IRole, resource: str, reason: str) -> None:
    Validations.of(role).acknowledge(
        Acknowledgment(id=wildcard_resource_finding(resource), reason=reason)
    )
