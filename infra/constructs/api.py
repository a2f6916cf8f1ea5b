"""The REST API: IAM-signed requests, validated at the edge, proxied to the api function."""

from __future__ import annotations

from dataclasses import dataclass

from aws_cdk import Acknowledgment, Validations
from aws_cdk import aws_apigateway as apigw
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_logs as logs
from constructs import Construct

from infra.constructs.functions import LOG_RETENTION

STAGE_NAME = "v1"  # the API's version; the environment is the stack's, not the stage's
THROTTLING_RATE_LIMIT = 20  # steady requests per second, across all clients
THROTTLING_BURST_LIMIT = 40

_STRING = apigw.JsonSchema(type=apigw.JsonSchemaType.STRING)
_NON_EMPTY_STRING = apigw.JsonSchema(type=apigw.JsonSchemaType.STRING, min_length=1)

START_RUN_SCHEMA = apigw.JsonSchema(
    schema=apigw.JsonSchemaVersion.DRAFT4,
    title="StartRunRequest",
    type=apigw.JsonSchemaType.OBJECT,
    required=["repository", "request"],
    properties={
        "repository": _NON_EMPTY_STRING,
        "request": _NON_EMPTY_STRING,
        "revision": _STRING,
        "environment": _STRING,
    },
)
REVIEW_SCHEMA = apigw.JsonSchema(
    schema=apigw.JsonSchemaVersion.DRAFT4,
    title="ReviewDecisionRequest",
    type=apigw.JsonSchemaType.OBJECT,
    required=["decision", "plan_digest"],
    properties={
        "decision": apigw.JsonSchema(
            type=apigw.JsonSchemaType.STRING, enum=["approve", "request_changes"]
        ),
        "plan_digest": _NON_EMPTY_STRING,
        "comment": _STRING,
    },
)


@dataclass(frozen=True)
class Route:
    path: str
    method: str
    body_schema: apigw.JsonSchema | None = None


ROUTES: tuple[Route, ...] = (
    Route("/runs", "GET"),
    Route("/runs", "POST", START_RUN_SCHEMA),
    Route("/runs/{run_id}", "GET"),
    Route("/runs/{run_id}/review", "POST", REVIEW_SCHEMA),
    Route("/runs/{run_id}/resume", "POST"),
    Route("/openapi.json", "GET"),
)


def _path_parameters(path: str) -> dict[str, bool]:
    """Declare every {placeholder} as a required path parameter, so the validator checks it."""
    return {
        f"method.request.path.{segment[1:-1]}": True
        for segment in path.split("/")
        if segment.startswith("{") and segment.endswith("}")
    }


class Api(Construct):
    """ROUTES, each an IAM-authorized proxy method on the api function."""

    def __init__(self, scope: Construct, construct_id: str, *, handler: lambda_.IFunction) -> None:
        super().__init__(scope, construct_id)
        access_logs = logs.LogGroup(self, "AccessLogs", retention=LOG_RETENTION)
        self.rest_api = apigw.RestApi(
            self,
            "RestApi",
            description="agentledger: start, inspect, review and resume runs",
            endpoint_types=[apigw.EndpointType.REGIONAL],
            cloud_watch_role=True,
            deploy_options=apigw.StageOptions(
                stage_name=STAGE_NAME,
                access_log_destination=apigw.LogGroupLogDestination(access_logs),
                access_log_format=apigw.AccessLogFormat.json_with_standard_fields(
                    caller=True,
                    http_method=True,
                    ip=True,
                    protocol=True,
                    request_time=True,
                    resource_path=True,
                    response_length=True,
                    status=True,
                    user=True,
                ),
                throttling_rate_limit=THROTTLING_RATE_LIMIT,
                throttling_burst_limit=THROTTLING_BURST_LIMIT,
                tracing_enabled=True,
                logging_level=apigw.MethodLoggingLevel.INFO,
                metrics_enabled=True,
            ),
        )
        validator = self.rest_api.add_request_validator(
            "BodyAndParameters", validate_request_body=True, validate_request_parameters=True
        )
        integration = apigw.LambdaIntegration(handler, allow_test_invoke=False)

        for route in ROUTES:
            request_models = None
            if route.body_schema is not None:
                model = self.rest_api.add_model(
                    route.body_schema.title,
                    content_type="application/json",
                    schema=route.body_schema,
                )
                request_models = {"application/json": model}
            self.rest_api.root.resource_for_path(route.path).add_method(
                route.method,
                integration,
                authorization_type=apigw.AuthorizationType.IAM,
                request_validator=validator,
                request_models=request_models,
                request_parameters=_path_parameters(route.path) or None,
            )

        self._suppress_findings()

    def _suppress_findings(self) -> None:
        Validations.of(self.rest_api).acknowledge(
            Acknowledgment(
                id="AwsSolutions-COG4",
                reason="Callers are engineers and automation with AWS credentials: every "
                "method requires SigV4 (AWS_IAM) authorization instead of a Cognito pool.",
            ),
            Acknowledgment(
                id="AwsSolutions-APIG3",
                reason="Every method rejects unsigned requests (AWS_IAM) and the stage is "
                "throttled; there is no anonymous traffic for a WAF web ACL to filter.",
            ),
        )
        Validations.of(self.rest_api.node.find_child("CloudWatchRole")).acknowledge(
            Acknowledgment(
                id="AwsSolutions-IAM4[Policy::arn:<AWS::Partition>:iam::aws:policy/service-role/"
                "AmazonAPIGatewayPushToCloudWatchLogs]",
                reason="API Gateway's account-level logging role: the AWS-managed "
                "AmazonAPIGatewayPushToCloudWatchLogs policy is the documented way to grant it.",
            )
        )
