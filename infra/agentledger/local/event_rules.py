"""EventBridge, locally: the stack's event-pattern rules as moto's CloudFormation created them,
matched by moto's own pattern matcher, and their Lambda targets invoked asynchronously, as
EventBridge invokes a function (moto's EventBridge delivers to queues and log groups, not to
functions). A target that fails is invoked again, as Lambda retries an asynchronous invocation
twice; then the event is dropped with a line on stderr, as it would go to a dead-letter queue."""
from __future__ import annotations

import sys
import threading
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from moto.events.models import EventPattern

from agentledger.hidden_text import printable

if TYPE_CHECKING:
    from collections.abc import Callable, Mapping

    from moto.events.utils import EventMessageType

ATTEMPTS = 3
RETRY_DELAY_S = 1.0


@dataclass(frozen=True)
class _Rule:
    name: str
    pattern: EventPattern
    functions: tuple[str, ...]  # the target functions' names


class LocalEventRules:
    def __init__(self, events_client: Any, invoke: Callable[[str, Mapping[str, Any]], str | None]) -> None:
        """`invoke(function name, event)` returns the function's error, if it failed."""
        self._invoke = invoke
        self._rules = [_Rule(rule["Name"], EventPattern.load(rule["EventPattern"]),
                             tuple(target["Arn"].rsplit(":", 1)[1]
                                   for target in events_client.list_targets_by_rule(Rule=rule["Name"])["Targets"]
                                   if ":lambda:" in target["Arn"]))
                       for rule in events_client.list_rules()["Rules"] if rule.get("EventPattern")]
        self.closed = False

    def put(self, event: EventMessageType) -> None:
        """Deliver to every matching rule's targets, each on a thread of its own; returns at once."""
        for rule in self._rules:
            if rule.pattern.matches_event(event):
                for function in rule.functions:
                    threading.Thread(target=self._deliver, args=(rule.name, function, event),
                                     name=f"event-{rule.name[-12:]}", daemon=True).start()

    def _deliver(self, rule: str, function: str, event: EventMessageType) -> None:
        for attempt in range(1, ATTEMPTS + 1):
            if self.closed:
                return
            error = self._invoke(function, event)
            if error is None:
                return
            if attempt < ATTEMPTS:
                time.sleep(RETRY_DELAY_S * attempt)
            else:
                print(printable(f"agentledger: rule {rule} could not deliver {event.get('detail-type')} to "
                                f"{function} after {ATTEMPTS} attempts: {error[:300]}"), file=sys.stderr, flush=True)
