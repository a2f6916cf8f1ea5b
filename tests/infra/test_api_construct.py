"""The REST API: IAM everywhere, validated bodies and parameters, logged, throttled, traced."""

from __future__ import annotations

import json
import re

import pytest
from aws_cdk.assertions import Match, Template

from agentledger.api_contract import CreateRunRequest, ErrorBody, ReviewRequest
from agentledger.deploy import PROJECT_ROOT
from agentledger.deploy.constructs.api import resolver_routes
from agentledger.limits import START_RATE

pytestmark = [pytest.mark.infra, pytest.mark.xdist_group("cdk-synth")]


def _resource_paths(resources) -> dict[str, str]:
    """API Gateway resource logical id -> its full path."""
    api_resources = resources("AWS::ApiGateway::Resource")

    def path_of(logical_id: str) -> str:
        properties = api_resources[logical_id]["Properties"]
        parent = properties["ParentId"]
        prefix = path_of(parent["Ref"]) if "Ref" in parent else ""
        return f"{prefix}/{properties['PathPart']}"

    return {logical_id: path_of(logical_id) for logical_id in api_resources}


def test_the_resolver_serves_the_routes_the_api_guide_documents() -> None:
    guide = (PROJECT_ROOT / "docs" / "guides" / "api.md").read_text()
    documented = {(path, method) for method, path in re.findall(r"^\| `(GET|POST) (/[^ ?`]*)", guide, re.M)}
    assert {(route.path, route.method) for route in resolver_routes()} == documented


def test_exactly_the_resolver_routes_exist(resources) -> None:
    paths = _resource_paths(resources)
    routes = {
        (paths[method["Properties"]["ResourceId"]["Ref"]], method["Properties"]["HttpMethod"])
        for method in resources("AWS::ApiGateway::Method").values()
    }
    assert routes == {(route.path, route.method) for route in resolver_routes()}


def test_every_method_requires_iam_validation_and_proxies_to_the_api_function(
    resources, logical_id
) -> None:
    validator = logical_id("AWS::ApiGateway::RequestValidator", "BodyAndParameters")
    for method in resources("AWS::ApiGateway::Method").values():
        properties = method["Properties"]
        assert properties["AuthorizationType"] == "AWS_IAM"
        assert properties["RequestValidatorId"] == {"Ref": validator}
        assert properties["Integration"]["Type"] == "AWS_PROXY"
        assert "ApiFunction" in str(properties["Integration"]["Uri"])


def test_validator_checks_body_and_parameters(template: Template) -> None:
    template.has_resource_properties(
        "AWS::ApiGateway::RequestValidator",
        {"ValidateRequestBody": True, "ValidateRequestParameters": True},
    )


def test_run_id_routes_declare_the_path_parameter(resources) -> None:
    paths = _resource_paths(resources)
    for method in resources("AWS::ApiGateway::Method").values():
        path = paths[method["Properties"]["ResourceId"]["Ref"]]
        if "{run_id}" in path:
            assert method["Properties"]["RequestParameters"] == {"method.request.path.run_id": True}


def _model_schema(resources, title: str) -> dict:
    (schema,) = [
        model["Properties"]["Schema"]
        for model in resources("AWS::ApiGateway::Model").values()
        if model["Properties"]["Schema"]["title"] == title
    ]
    return schema


def _body_model_of(resources, path: str, http_method: str) -> str:
    paths = _resource_paths(resources)
    (method,) = [
        method
        for method in resources("AWS::ApiGateway::Method").values()
        if paths[method["Properties"]["ResourceId"]["Ref"]] == path
        and method["Properties"]["HttpMethod"] == http_method
    ]
    return method["Properties"]["RequestModels"]["application/json"]["Ref"]


def test_start_run_body_schema(resources, logical_id) -> None:
    schema = _model_schema(resources, CreateRunRequest.__name__)
    assert schema["type"] == "object"
    assert sorted(schema["required"]) == ["repository", "request"]
    # The limits are the pydantic model's, so the edge refuses what the function would.
    declared = CreateRunRequest.model_json_schema()["properties"]["request"]["maxLength"]
    assert schema["properties"]["request"]["maxLength"] == declared
    assert schema["properties"]["environment"]["pattern"] == r"^[A-Za-z0-9_.-]+$"
    assert schema["properties"]["revision"]["maxLength"] == 200
    assert {name: spec["type"] for name, spec in schema["properties"].items()} == {
        "repository": "string",
        "request": "string",
        "revision": "string",
        "environment": "string",
    }
    assert _body_model_of(resources, "/runs", "POST") == logical_id(
        "AWS::ApiGateway::Model", CreateRunRequest.__name__
    )


def test_review_body_schema(resources, logical_id) -> None:
    schema = _model_schema(resources, ReviewRequest.__name__)
    assert sorted(schema["required"]) == ["decision", "plan_digest"]
    assert schema["properties"]["decision"]["type"] == "string"
    assert schema["properties"]["decision"]["enum"] == ["approve", "request_changes"]
    assert schema["properties"]["comment"]["maxLength"] == 4000
    assert schema["properties"]["plan_digest"]["type"] == "string"
    assert schema["properties"]["comment"]["type"] == "string"
    assert _body_model_of(resources, "/runs/{run_id}/review", "POST") == logical_id(
        "AWS::ApiGateway::Model", ReviewRequest.__name__
    )


def test_stage_logs_throttles_traces_and_measures(template: Template, logical_id) -> None:
    access_logs = logical_id("AWS::Logs::LogGroup", "AccessLogs")
    template.has_resource_properties(
        "AWS::ApiGateway::Stage",
        {
            "StageName": "v1",
            "TracingEnabled": True,
            "AccessLogSetting": {
                "DestinationArn": Match.any_value(),
                "Format": Match.string_like_regexp(r'^\{"requestId":"\$context\.requestId".*\}$'),
            },
            "MethodSettings": Match.array_with([
                Match.object_like(
                    {
                        "HttpMethod": "*",
                        "ResourcePath": "/*",
                        "LoggingLevel": "INFO",
                        "MetricsEnabled": True,
                        "ThrottlingRateLimit": Match.any_value(),
                        "ThrottlingBurstLimit": Match.any_value(),
                    }
                )
            ]),
        },
    )
    (stage,) = template.find_resources("AWS::ApiGateway::Stage").values()
    assert access_logs in str(stage["Properties"]["AccessLogSetting"]["DestinationArn"])
    settings = stage["Properties"]["MethodSettings"][0]
    assert 0 < settings["ThrottlingRateLimit"] <= settings["ThrottlingBurstLimit"]


def test_starting_a_run_is_throttled_at_the_start_rate_the_local_api_enforces(template: Template) -> None:
    (stage,) = template.find_resources("AWS::ApiGateway::Stage").values()
    starts = [s for s in stage["Properties"]["MethodSettings"] if (s["ResourcePath"], s["HttpMethod"]) == ("/~1runs",
                                                                                                         "POST")]
    assert [(s["ThrottlingRateLimit"], s["ThrottlingBurstLimit"], s["LoggingLevel"]) for s in starts] == [
        (START_RATE.per_s, START_RATE.burst, "INFO")]


def test_a_throttled_request_is_a_429_with_retry_after_in_the_api_error_body(template: Template) -> None:
    (response,) = template.find_resources("AWS::ApiGateway::GatewayResponse").values()
    properties = response["Properties"]
    body = json.loads(properties["ResponseTemplates"]["application/json"])

    assert (properties["ResponseType"], properties["StatusCode"]) == ("THROTTLED", "429")
    assert int(properties["ResponseParameters"]["gatewayresponse.header.Retry-After"].strip("'")) >= 1
    assert ErrorBody.model_validate(body).error == "Too Many Requests" and "Retry-After" in body["message"]


def test_api_gateway_may_log_to_cloudwatch(template: Template) -> None:
    template.resource_count_is("AWS::ApiGateway::Account", 1)
    template.has_resource_properties(
        "AWS::IAM::Role",
        {
            "AssumeRolePolicyDocument": Match.object_like(
                {
                    "Statement": [
                        Match.object_like({"Principal": {"Service": "apigateway.amazonaws.com"}})
                    ]
                }
            )
        },
    )
