"""The REST API: IAM-signed requests, validated at the edge, proxied to the api function."""

from __future__ import annotations

import re
from dataclasses import dataclass
from http import HTTPStatus
from typing import Any

from aws_cdk import Acknowledgment, Validations
from aws_cdk import aws_apigateway as apigw
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_logs as logs
from constructs import Construct
from pydantic import BaseModel

from agentledger.api_contract import ErrorBody
from agentledger.deploy.constructs.functions import LOG_RETENTION
from agentledger.limits import START_RATE, retry_after_s

STAGE_NAME = "v1"  # the API's version; the environment is the stack's, not the stage's
THROTTLING_RATE_LIMIT = 20  # steady requests per second of each method, across all clients
THROTTLING_BURST_LIMIT = 40
# Starting a run has a throttle of its own (START_RATE, which the local API enforces too), named
# "<path>/<method>" (CDK writes the path as API Gateway's stage settings name it, "/~1runs").
START_METHOD = "/runs/POST"
THROTTLED = (f"too many requests: this API answers {THROTTLING_RATE_LIMIT} a second on each route and starts "
             f"{START_RATE.per_s:g} runs a second; send the same request again after Retry-After seconds")

# The routes and the request models are the api function's own (its Powertools resolver and the
# pydantic models its routes validate); API Gateway gets a draft-4 copy of each, made here.
_JSON_TYPES = {member.name.lower(): member for member in apigw.JsonSchemaType}
_SCALAR_KEYWORDS = {"minLength": "min_length", "maxLength": "max_length", "pattern": "pattern",
                    "enum": "enum", "description": "description", "minimum": "minimum", "maximum": "maximum"}


@dataclass(frozen=True)
class Route:
    path: str
    method: str
    body_model: type[BaseModel] | None = None


def json_schema(model: type[BaseModel]) -> apigw.JsonSchema:
    """The model's JSON schema as API Gateway's draft-4 JsonSchema: `$ref`s inlined, and an
    optional field's `anyOf [X, null]` narrowed to X (an absent field is what null means)."""
    document = model.model_json_schema()
    definitions = document.get("$defs", {})

    def convert(node: dict[str, Any]) -> apigw.JsonSchema:
        if "$ref" in node:
            return convert(definitions[node["$ref"].rsplit("/", 1)[-1]])
        if "anyOf" in node:
            present = [branch for branch in node["anyOf"] if branch.get("type") != "null"]
            return convert({**present[0], **{k: v for k, v in node.items() if k in ("description",)}})
        options: dict[str, Any] = {cdk: node[key] for key, cdk in _SCALAR_KEYWORDS.items() if key in node}
        if "type" in node:
            options["type"] = _JSON_TYPES[node["type"]]
        if "properties" in node:
            options["properties"] = {name: convert(child) for name, child in node["properties"].items()}
            options["required"] = node.get("required", [])
            options["additional_properties"] = False if node.get("additionalProperties") is False else None
        return apigw.JsonSchema(**{k: v for k, v in options.items() if v is not None})

    root = convert(document)
    return apigw.JsonSchema(schema=apigw.JsonSchemaVersion.DRAFT4, title=model.__name__, type=root.type,
                            properties=root.properties, required=root.required)


def resolver_routes() -> tuple[Route, ...]:
    """Every route the api function's resolver serves, with the model its body is validated by."""
    from agentledger.handlers.api import app  # noqa: PLC0415 — the function code, loaded only to read its routes

    routes = []
    for route in [*app._static_routes, *app._dynamic_routes]:
        path = re.sub(r"<(\w+)>", r"{\1}", route.path)
        bodies = [_request_model(param.field_info.annotation) for param in route.dependant.body_params]
        routes.append(Route(path, route.method, bodies[0] if bodies else None))
    return tuple(sorted(routes, key=lambda r: (r.path, r.method)))


def _request_model(annotation: object) -> type[BaseModel]:
    """A route's request body, which the api function declares as a pydantic model."""
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return annotation
    raise TypeError(f"the api function's request bodies are pydantic models, not {annotation!r}")


def _path_parameters(path: str) -> dict[str, bool]:
    """Declare every {placeholder} as a required path parameter, so the validator checks it."""
    return {
        f"method.request.path.{segment[1:-1]}": True
        for segment in path.split("/")
        if segment.startswith("{") and segment.endswith("}")
    }


class Api(Construct):
    """The resolver's routes, each an IAM-authorized proxy method on the api function."""

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
                method_options={START_METHOD: apigw.MethodDeploymentOptions(
                    throttling_rate_limit=START_RATE.per_s, throttling_burst_limit=START_RATE.burst,
                    logging_level=apigw.MethodLoggingLevel.INFO, metrics_enabled=True)},
                tracing_enabled=True,
                logging_level=apigw.MethodLoggingLevel.INFO,
                metrics_enabled=True,
            ),
        )
        # A throttled request is answered 429 in the API's error body, with Retry-After: the time the
        # slower bucket takes to refill one request (API Gateway's answer to a throttle is fixed).
        slowest = min(START_RATE.per_s, THROTTLING_RATE_LIMIT)
        self.rest_api.add_gateway_response(
            "Throttled", type=apigw.ResponseType.THROTTLED, status_code="429",
            response_headers={"Retry-After": f"'{retry_after_s(1 / slowest)}'"},
            templates={"application/json": ErrorBody.of(HTTPStatus.TOO_MANY_REQUESTS, THROTTLED).model_dump_json()},
        )
        validator = self.rest_api.add_request_validator(
            "BodyAndParameters", validate_request_body=True, validate_request_parameters=True
        )
        integration = apigw.LambdaIntegration(handler, allow_test_invoke=False)

        for route in resolver_routes():
            request_models = None
            if route.body_model is not None:
                model = self.rest_api.add_model(
                    route.body_model.__name__,
                    content_type="application/json",
                    schema=json_schema(route.body_model),
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
