"""The AgentLedger dashboard, and the alarms that tell someone through the alarm topic.

Metric names come from agentledger.metric_names, the list the handlers emit from, so a renamed
metric cannot leave a widget or an alarm watching nothing.
"""

from __future__ import annotations

from aws_cdk import ArnFormat, Duration, Stack
from aws_cdk import aws_cloudwatch as cloudwatch
from aws_cdk import aws_cloudwatch_actions as cloudwatch_actions
from aws_cdk import aws_iam as iam
from aws_cdk import aws_kms as kms
from aws_cdk import aws_stepfunctions as sfn
from constructs import Construct

from agentledger import metric_names
from agentledger.deploy.constructs.functions import SERVICE_NAME
from agentledger.deploy.constructs.notifications import encrypted_topic
from agentledger.models import Stage

DASHBOARD_NAME = "AgentLedger"
PERIOD = Duration.minutes(5)  # the review keeper's schedule, so every period has its sample
RATE_PERIOD = Duration.hours(1)  # a resume and the completion it leads to are often minutes apart
WIDGET_WIDTH = 8  # three widgets a row on the dashboard's 24-unit grid
WIDGET_HEIGHT = 6


def _metric(
    name: str, statistic: str = "Sum", label: str | None = None, **dimensions: str
) -> cloudwatch.Metric:
    """An AgentLedger metric as Powertools emits it: with the `service` dimension."""
    return cloudwatch.Metric(
        namespace=metric_names.NAMESPACE,
        metric_name=name,
        dimensions_map={"service": SERVICE_NAME, **dimensions},
        statistic=statistic,
        period=PERIOD,
        label=label,
    )


def _graph(title: str, *metrics: cloudwatch.IMetric, left_y_axis: cloudwatch.YAxisProps | None = None,
           left_annotations: list[cloudwatch.HorizontalAnnotation] | None = None) -> cloudwatch.GraphWidget:
    return cloudwatch.GraphWidget(title=title, left=list(metrics), width=WIDGET_WIDTH, height=WIDGET_HEIGHT,
                                  left_y_axis=left_y_axis, left_annotations=left_annotations)


class Observability(Construct):
    """Recovery, side effects, stale plans, handoffs, stage and review times, executions."""

    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        state_machine: sfn.StateMachine,
        review_alarm_seconds: int,
    ) -> None:
        super().__init__(scope, construct_id)

        self.alarm_topic, alarm_key = encrypted_topic(self, "AlarmTopic", description="alarms")
        self._let_cloudwatch_alarms_publish(alarm_key)

        recovery_rate = cloudwatch.MathExpression(
            expression="IF(resumed > 0, recovered / resumed, 0)",
            using_metrics={
                "recovered": _metric(metric_names.RUNS_RECOVERED),
                "resumed": _metric(metric_names.RUNS_RESUMED),
            },
            label="Recovery rate (runs recovered / runs resumed)",
            period=RATE_PERIOD,
        )
        duplicated = _metric(metric_names.DUPLICATED_SIDE_EFFECTS)
        oldest_review = _metric(metric_names.OLDEST_PENDING_REVIEW, statistic="Maximum")
        # One line per AWS service that refused the functions' calls, whichever quota binds first;
        # beside it Lambda's own count of the invokes it refused (the state machine's, retried).
        throttled = cloudwatch.MathExpression(
            expression=(f"SEARCH('{{{metric_names.NAMESPACE},service,{metric_names.AWS_SERVICE_DIMENSION}}} "
                        f"MetricName=\"{metric_names.THROTTLED}\" service=\"{SERVICE_NAME}\"', 'Sum', "
                        f"{int(PERIOD.to_seconds())})"),
            using_metrics={},
            label="",
            period=PERIOD,
        )
        lambda_throttles = cloudwatch.Metric(namespace="AWS/Lambda", metric_name="Throttles", statistic="Sum",
                                             period=PERIOD, label="lambda invokes refused")
        failed = state_machine.metric_failed(statistic="Sum", period=PERIOD)
        timed_out = state_machine.metric_timed_out(statistic="Sum", period=PERIOD)

        self.alarms = {
            "DuplicatedSideEffects": self._alarm(
                "DuplicatedSideEffectsAlarm",
                duplicated,
                threshold=0,
                description="A receiver holds more than one record for one idempotency key: "
                "an external write was duplicated. Look up the effect records of the run.",
            ),
            "ExecutionsFailed": self._alarm(
                "ExecutionsFailedAlarm",
                failed,
                threshold=0,
                description="A run execution failed. Its handoff record in the ledger says "
                "what was attempted and the recovery path.",
            ),
            "ExecutionsTimedOut": self._alarm(
                "ExecutionsTimedOutAlarm",
                timed_out,
                threshold=0,
                description="A run execution timed out.",
            ),
            "OldestPendingReviewAge": self._alarm(
                "PendingReviewTooOldAlarm",
                oldest_review,
                threshold=review_alarm_seconds,
                description=f"A run has waited for review for more than {review_alarm_seconds} s.",
            ),
        }

        # No alarm status widget: it would reference the alarms' ARNs (Fn::GetAtt), which the
        # local runtime's moto CloudFormation cannot resolve, as it does not model alarms.
        self.dashboard = cloudwatch.Dashboard(
            self,
            "Dashboard",
            dashboard_name=DASHBOARD_NAME,
            widgets=[
                [
                    _graph("Recovery rate", recovery_rate, left_y_axis=cloudwatch.YAxisProps(min=0)),
                    _graph(
                        "Runs",
                        _metric(metric_names.RUNS_STARTED),
                        _metric(metric_names.RUNS_RESUMED),
                        _metric(metric_names.RUNS_RECOVERED),
                        _metric(metric_names.RUNS_HANDED_OFF),
                    ),
                    _graph("Executions failed / timed out", failed, timed_out),
                ],
                [
                    _graph(
                        "Side effects",
                        duplicated,
                        _metric(metric_names.DUPLICATES_SUPPRESSED),
                        _metric(metric_names.EFFECTS_CONFIRMED),
                        _metric(metric_names.EFFECTS_UNCONFIRMED),
                        _metric(metric_names.RECEIVER_RATE_LIMITED),
                        _metric(metric_names.RECEIVER_PACED),
                    ),
                    _graph("Stale plans rejected", _metric(metric_names.STALE_PLANS_REJECTED)),
                    _graph(
                        "Time to handoff (s)",
                        _metric(metric_names.TIME_TO_HANDOFF, statistic="Average", label="average"),
                        _metric(metric_names.TIME_TO_HANDOFF, statistic="Maximum", label="maximum"),
                    ),
                ],
                [
                    _graph(
                        "Stage duration (s, average)",
                        *(
                            _metric(
                                metric_names.STAGE_DURATION,
                                statistic="Average",
                                label=stage.value,
                                **{metric_names.STAGE_DIMENSION: stage.value},
                            )
                            for stage in Stage
                        ),
                    ),
                    _graph(
                        "Review wait (s)",
                        _metric(metric_names.REVIEW_WAIT, statistic="Average", label="review wait, average"),
                        oldest_review,
                        left_annotations=[
                            cloudwatch.HorizontalAnnotation(
                                value=review_alarm_seconds, label="pending review alarm"
                            )
                        ],
                    ),
                    _graph("Throttled by AWS (calls refused, retried)", throttled, lambda_throttles),
                ],
            ],
        )

    def _alarm(
        self, construct_id: str, metric: cloudwatch.IMetric, *, threshold: float, description: str
    ) -> cloudwatch.Alarm:
        alarm = cloudwatch.Alarm(
            self,
            construct_id,
            metric=metric,
            threshold=threshold,
            comparison_operator=cloudwatch.ComparisonOperator.GREATER_THAN_THRESHOLD,
            evaluation_periods=1,
            # No data is no event: nothing duplicated, failed or waiting in that period.
            treat_missing_data=cloudwatch.TreatMissingData.NOT_BREACHING,
            alarm_description=description,
        )
        alarm.add_alarm_action(cloudwatch_actions.SnsAction(self.alarm_topic))
        return alarm

    def _let_cloudwatch_alarms_publish(self, key: kms.Key) -> None:
        """CloudWatch publishes alarm notifications as its service principal: it needs the topic
        and its key, on behalf of this account's alarms in this region only."""
        stack = Stack.of(self)
        principal = iam.ServicePrincipal("cloudwatch.amazonaws.com")
        conditions = {
            "StringEquals": {"aws:SourceAccount": stack.account},
            "ArnLike": {
                "aws:SourceArn": stack.format_arn(
                    service="cloudwatch",
                    resource="alarm",
                    resource_name="*",
                    arn_format=ArnFormat.COLON_RESOURCE_NAME,
                )
            },
        }
        self.alarm_topic.add_to_resource_policy(
            iam.PolicyStatement(
                principals=[principal],
                actions=["sns:Publish"],
                resources=[self.alarm_topic.topic_arn],
                conditions=conditions,
            )
        )
        key.add_to_resource_policy(
            iam.PolicyStatement(
                principals=[principal],
                actions=["kms:Decrypt", "kms:GenerateDataKey*"],
                resources=["*"],  # in a key policy, "*" is this key
                conditions=conditions,
            )
        )
