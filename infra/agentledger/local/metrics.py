"""The local stack's CloudWatch metrics, read back from the EMF records the handlers wrote to
their log groups — the same records CloudWatch turns into metrics on AWS."""
from __future__ import annotations

import json
from collections import defaultdict
from typing import TYPE_CHECKING, Any

from agentledger import metric_names as names

if TYPE_CHECKING:
    from .runtime import LocalRuntime


def emitted_metrics(runtime: LocalRuntime) -> list[dict[str, Any]]:
    """Every (name, value, dimensions) the handlers emitted, from the function log groups."""
    logs = runtime.client("logs")
    points: list[dict[str, Any]] = []
    for page in logs.get_paginator("describe_log_groups").paginate():
        for group in page["logGroups"]:
            for events in logs.get_paginator("filter_log_events").paginate(logGroupName=group["logGroupName"]):
                for event in events["events"]:
                    points.extend(_emf_points(event["message"]))
    return points


def _emf_points(line: str) -> list[dict[str, Any]]:
    if '"_aws"' not in line:
        return []
    try:
        record = json.loads(line)
    except json.JSONDecodeError:
        return []
    points = []
    for directive in record["_aws"].get("CloudWatchMetrics", []):
        if directive.get("Namespace") != names.NAMESPACE:
            continue
        dimensions = {d: record.get(d) for group in directive.get("Dimensions", []) for d in group}
        for metric in directive.get("Metrics", []):
            values = record.get(metric["Name"])
            for value in values if isinstance(values, list) else [values]:
                points.append({"name": metric["Name"], "value": float(value), "dimensions": dimensions})
    return points


def _stats(values: list[float]) -> dict[str, float] | None:
    if not values:
        return None
    return {"count": len(values), "avg": round(sum(values) / len(values), 3), "max": round(max(values), 3)}


def summarize(points: list[dict[str, Any]]) -> dict[str, Any]:
    by_name: dict[str, list[float]] = defaultdict(list)
    by_stage: dict[str, list[float]] = defaultdict(list)
    throttled: dict[str, int] = defaultdict(int)
    for point in points:
        by_name[point["name"]].append(point["value"])
        if point["name"] == names.STAGE_DURATION:
            by_stage[point["dimensions"].get(names.STAGE_DIMENSION) or "?"].append(point["value"])
        elif point["name"] == names.THROTTLED:
            throttled[point["dimensions"].get(names.AWS_SERVICE_DIMENSION) or "?"] += int(point["value"])
    total = {name: sum(values) for name, values in by_name.items()}
    resumed = total.get(names.RUNS_RESUMED, 0)
    return {
        "namespace": names.NAMESPACE,
        "runs_started": int(total.get(names.RUNS_STARTED, 0)),
        "runs_resumed": int(resumed),
        "runs_recovered": int(total.get(names.RUNS_RECOVERED, 0)),
        "recovery_rate": round(total.get(names.RUNS_RECOVERED, 0) / resumed, 3) if resumed else None,
        "runs_handed_off": int(total.get(names.RUNS_HANDED_OFF, 0)),
        "duplicated_side_effects": int(total.get(names.DUPLICATED_SIDE_EFFECTS, 0)),
        "duplicates_suppressed": int(total.get(names.DUPLICATES_SUPPRESSED, 0)),
        "stale_plans_rejected": int(total.get(names.STALE_PLANS_REJECTED, 0)),
        "effects_confirmed": int(total.get(names.EFFECTS_CONFIRMED, 0)),
        "throttled_by_aws_service": dict(sorted(throttled.items())),
        "time_to_handoff_s": _stats(by_name.get(names.TIME_TO_HANDOFF, [])),
        "review_wait_s": _stats(by_name.get(names.REVIEW_WAIT, [])),
        "stage_duration_s": {stage: _stats(values) for stage, values in sorted(by_stage.items())},
    }
