"""The AgentLedger dashboard and the alarms that notify the alarm topic."""

from __future__ import annotations

import json
from typing import Any

import pytest
from aws_cdk.assertions import Match, Template

from agentledger import metric_names
from agentledger.models import Stage

pytestmark = pytest.mark.infra

DASHBOARD_METRICS = [
    metric_names.RUNS_RECOVERED,
    metric_names.RUNS_RESUMED,
    metric_names.DUPLICATED_SIDE_EFFECTS,
    metric_names.DUPLICATES_SUPPRESSED,
    metric_names.STALE_PLANS_REJECTED,
    metric_names.RECEIVER_PACED,
    metric_names.TIME_TO_HANDOFF,
    metric_names.STAGE_DURATION,
    metric_names.REVIEW_WAIT,
    "ExecutionsFailed",
    "ExecutionsTimedOut",
]
SERVICE_DIMENSION = [{"Name": "service", "Value": "agentledger"}]


def _in_body(*strings: str) -> str:
    """Consecutive JSON strings of the dashboard body as they read once the body is serialized
    again (its quotes escaped): a metric reads namespace, name, then dimension names and values."""
    return ",".join(f'\\"{string}\\"' for string in strings)


@pytest.fixture(scope="module")
def dashboard_body(resources) -> str:
    """The DashboardBody (an Fn::Join of JSON and references), serialized to search in."""
    (dashboard,) = resources("AWS::CloudWatch::Dashboard").values()
    return json.dumps(dashboard["Properties"]["DashboardBody"])


@pytest.fixture(scope="module")
def alarms(resources) -> dict[str, dict[str, Any]]:
    """Every alarm's properties, by the name of the metric it watches."""
    found = {
        alarm["Properties"]["MetricName"]: alarm["Properties"]
        for alarm in resources("AWS::CloudWatch::Alarm").values()
    }
    assert len(found) == len(resources("AWS::CloudWatch::Alarm"))
    return found


def test_dashboard_is_named_agentledger(template: Template) -> None:
    template.resource_count_is("AWS::CloudWatch::Dashboard", 1)
    template.has_resource_properties("AWS::CloudWatch::Dashboard", {"DashboardName": "AgentLedger"})


@pytest.mark.parametrize("metric", DASHBOARD_METRICS)
def test_dashboard_shows_metric(dashboard_body: str, metric: str) -> None:
    assert _in_body(metric) in dashboard_body


def test_dashboard_metrics_carry_the_powertools_service_dimension(dashboard_body: str) -> None:
    for metric in DASHBOARD_METRICS[:-2]:  # all but the state machine's
        assert _in_body(metric_names.NAMESPACE, metric) in dashboard_body
    assert dashboard_body.count(_in_body(metric_names.NAMESPACE)) == dashboard_body.count(
        _in_body("service", "agentledger")
    )


def test_dashboard_shows_each_aws_service_that_throttled_the_functions_and_lambdas_own_throttles(resources) -> None:
    (dashboard,) = resources("AWS::CloudWatch::Dashboard").values()
    parts = dashboard["Properties"]["DashboardBody"]["Fn::Join"][1]
    body = json.loads("".join(part if isinstance(part, str) else "ref" for part in parts))
    [widget] = [w for w in body["widgets"] if w["properties"].get("title", "").startswith("Throttled")]
    [[search], lambda_throttles] = widget["properties"]["metrics"]
    dimensions = f"{metric_names.NAMESPACE},service,{metric_names.AWS_SERVICE_DIMENSION}"
    assert search["expression"] == (
        f"""SEARCH('{{{dimensions}}} MetricName="{metric_names.THROTTLED}" service="agentledger"', 'Sum', 300)""")
    assert lambda_throttles[:2] == ["AWS/Lambda", "Throttles"]


def test_dashboard_computes_the_recovery_rate(dashboard_body: str) -> None:
    assert "IF(resumed > 0, recovered / resumed, 0)" in dashboard_body
    for metric_id, metric in (
        ("recovered", metric_names.RUNS_RECOVERED),
        ("resumed", metric_names.RUNS_RESUMED),
    ):
        assert (
            _in_body(metric, "service", "agentledger") + ',{\\"id\\":' + _in_body(metric_id) in dashboard_body
        )


@pytest.mark.parametrize("stage", [stage.value for stage in Stage])
def test_dashboard_shows_stage_duration_per_stage(dashboard_body: str, stage: str) -> None:
    assert _in_body(metric_names.STAGE_DURATION, "Stage", stage, "service", "agentledger") in dashboard_body


def test_the_four_alarms(alarms) -> None:
    assert set(alarms) == {
        metric_names.DUPLICATED_SIDE_EFFECTS,
        "ExecutionsFailed",
        "ExecutionsTimedOut",
        metric_names.OLDEST_PENDING_REVIEW,
    }


@pytest.mark.parametrize(
    ("metric", "threshold"),
    [
        (metric_names.DUPLICATED_SIDE_EFFECTS, 0),  # any duplicate at all
        ("ExecutionsFailed", 0),
        ("ExecutionsTimedOut", 0),
        (metric_names.OLDEST_PENDING_REVIEW, 86400),  # cdk.json's reviewAlarmSeconds
    ],
)
def test_alarm_fires_above_its_threshold_and_notifies_the_alarm_topic(
    alarms, logical_id, metric: str, threshold: int
) -> None:
    alarm = alarms[metric]
    assert alarm["Threshold"] == threshold
    assert alarm["ComparisonOperator"] == "GreaterThanThreshold"
    assert alarm["TreatMissingData"] == "notBreaching"
    assert alarm["AlarmActions"] == [{"Ref": logical_id("AWS::SNS::Topic", "AlarmTopic")}]


@pytest.mark.parametrize("metric", [metric_names.DUPLICATED_SIDE_EFFECTS, metric_names.OLDEST_PENDING_REVIEW])
def test_agentledger_alarms_watch_the_powertools_metric(alarms, metric: str) -> None:
    assert alarms[metric]["Namespace"] == metric_names.NAMESPACE
    assert alarms[metric]["Dimensions"] == SERVICE_DIMENSION
    assert alarms[metric]["Statistic"] == (
        "Maximum" if metric == metric_names.OLDEST_PENDING_REVIEW else "Sum"
    )


@pytest.mark.parametrize("metric", ["ExecutionsFailed", "ExecutionsTimedOut"])
def test_execution_alarms_watch_the_run_state_machine(alarms, logical_id, metric: str) -> None:
    assert alarms[metric]["Namespace"] == "AWS/States"
    assert alarms[metric]["Statistic"] == "Sum"
    assert alarms[metric]["Dimensions"] == [
        {
            "Name": "StateMachineArn",
            "Value": {"Ref": logical_id("AWS::StepFunctions::StateMachine", "RunStateMachine")},
        }
    ]


def test_alarm_topic_is_standard_and_encrypted_with_a_rotating_key(resources, logical_id) -> None:
    topic = resources("AWS::SNS::Topic")[logical_id("AWS::SNS::Topic", "AlarmTopic")]["Properties"]
    key = logical_id("AWS::KMS::Key", "AlarmTopicKey")
    assert "FifoTopic" not in topic
    assert topic["KmsMasterKeyId"] == {"Fn::GetAtt": [key, "Arn"]}
    assert resources("AWS::KMS::Key")[key]["Properties"]["EnableKeyRotation"] is True


CLOUDWATCH_ALARMS_OF_THIS_ACCOUNT = {
    "Effect": "Allow",
    "Principal": {"Service": "cloudwatch.amazonaws.com"},
    "Condition": {
        "StringEquals": {"aws:SourceAccount": {"Ref": "AWS::AccountId"}},
        "ArnLike": {"aws:SourceArn": Match.any_value()},
    },
}


def test_cloudwatch_alarms_may_publish_to_the_alarm_topic_and_use_its_key(
    template: Template, resources, logical_id
) -> None:
    topic = logical_id("AWS::SNS::Topic", "AlarmTopic")
    template.has_resource_properties(
        "AWS::SNS::TopicPolicy",
        {
            "Topics": [{"Ref": topic}],
            "PolicyDocument": {
                "Statement": Match.array_with(
                    [Match.object_like({"Action": "sns:Publish", **CLOUDWATCH_ALARMS_OF_THIS_ACCOUNT})]
                )
            },
        },
    )
    key_policy = resources("AWS::KMS::Key")[logical_id("AWS::KMS::Key", "AlarmTopicKey")]["Properties"][
        "KeyPolicy"
    ]
    (statement,) = [
        s
        for s in key_policy["Statement"]
        if Match.object_like(CLOUDWATCH_ALARMS_OF_THIS_ACCOUNT).test(s).is_success
    ]
    assert sorted(statement["Action"]) == ["kms:Decrypt", "kms:GenerateDataKey*"]
    assert ":alarm:*" in json.dumps(statement["Condition"]["ArnLike"])
