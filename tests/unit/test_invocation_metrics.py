"""Two local invocations at once (the API's beside a stage function's, in one process) each flush
their own metrics, as two Lambda environments would: neither takes the other's, and neither finds
its own gone."""
from __future__ import annotations

import threading
from typing import Any

from agentledger.handlers.telemetry import metrics
from agentledger.local import invocation_metrics

WAIT_S = 10


def _names(serialized: dict[str, Any]) -> set[str]:
    return {metric["Name"] for metric in serialized["_aws"]["CloudWatchMetrics"][0]["Metrics"]}


def test_an_invocation_flushing_beside_another_flushes_only_its_own_metrics() -> None:
    first_added, second_flushed = threading.Event(), threading.Event()
    emitted: dict[str, set[str]] = {}
    raised: dict[str, BaseException] = {}

    def invocation(name: str, before_adding: threading.Event | None, before_flushing: threading.Event | None,
                   added: threading.Event, flushed: threading.Event) -> None:
        try:
            if before_adding is not None and not before_adding.wait(WAIT_S):
                raise TimeoutError(f"{name} waited in vain to add")
            with invocation_metrics.own_metrics():
                metrics.add_metric(name=name, unit="Count", value=1)
                added.set()
                if before_flushing is not None and not before_flushing.wait(WAIT_S):
                    raise TimeoutError(f"{name} waited in vain to flush")
                emitted[name] = _names(metrics.provider.serialize_metric_set())
                metrics.flush_metrics(raise_on_empty_metrics=True)
        except Exception as error:  # noqa: BLE001 — reported by the assertion below
            raised[name] = error
        finally:
            added.set()
            flushed.set()

    undo = invocation_metrics.install()
    try:
        # The first adds its metric and waits; the second adds its own and flushes before it.
        first = threading.Thread(target=invocation,
                                 args=("First", None, second_flushed, first_added, threading.Event()))
        second = threading.Thread(target=invocation,
                                  args=("Second", first_added, None, threading.Event(), second_flushed))
        first.start()
        second.start()
        second.join(WAIT_S)
        first.join(WAIT_S)
    finally:
        undo()
    assert raised == {}
    assert emitted == {"First": {"First"}, "Second": {"Second"}}
    assert not isinstance(metrics.provider.metric_set, invocation_metrics.InvocationMapping)
