"""What every handler module imports: the Powertools decorators each handler gets, its logger
(telemetry.py), and the assembly (handlers/assembly.py) that builds what an invocation works with.

Every cold start pays for this module's imports, so it holds only what decorating a handler
needs. What an invocation alone needs is imported at its first use: the assembly (boto3, the
adapters, the agent, the workflow), the throttling adapter (botocore's client configuration), and
the X-Ray SDK, which building the Tracer imports."""
from __future__ import annotations

from collections.abc import Callable
from functools import cache, wraps
from typing import TYPE_CHECKING, Any

from aws_lambda_powertools import Tracer
from aws_lambda_powertools.utilities.parser import event_parser
from botocore.exceptions import ClientError

from .telemetry import logger, metrics

if TYPE_CHECKING:
    from aws_lambda_powertools.utilities.typing import LambdaContext
    from pydantic import BaseModel

    from agentledger.adapters import throttling
    from agentledger.config import FunctionSettings

    from . import assembly
else:
    from aws_lambda_powertools.shared.lazy_import import LazyLoader

    assembly = LazyLoader("assembly", globals(), "agentledger.handlers.assembly")
    throttling = LazyLoader("throttling", globals(), "agentledger.adapters.throttling")

Handler = Callable[..., Any]
# "module.function" of every handler -> the settings model it reads: what the stack must set for it
# (tests/infra/test_function_settings.py compares each function of the synthesized stack with it).
HANDLER_SETTINGS: dict[str, type[FunctionSettings]] = {}


def lambda_handler(settings: type[FunctionSettings], model: type[BaseModel] | None = None,
                   correlation_id_path: str | None = "run_id") -> Callable[[Handler], Handler]:
    """The one order of Powertools decorators every handler gets: logs correlated by run id,
    a trace segment, metrics flushed as EMF, and the event parsed into `model`. The function's
    `settings` are read before any work (a variable the stack did not pass fails the invocation
    there, named) and handed to it after the event and the context. A throttle that outlasted
    the client's retries fails it as a TransientError, which the state machine retries."""
    def decorate(function: Handler) -> Handler:
        HANDLER_SETTINGS[f"{function.__module__}.{function.__name__}"] = settings

        @wraps(function)
        def configured(event: Any, context: LambdaContext) -> Any:
            loaded = settings.from_env()
            logger.append_keys(environment=loaded.environment)
            try:
                return function(event, context, loaded)
            except ClientError as error:
                transient = throttling.as_transient(error)
                if transient is None:
                    raise
                raise transient from error

        handler = event_parser(model=model)(configured) if model is not None else configured
        handler = metrics.log_metrics(handler)
        handler = _traced(handler)
        return logger.inject_lambda_context(correlation_id_path=correlation_id_path, clear_state=True)(handler)

    return decorate


def _traced(handler: Handler) -> Handler:
    """`tracer.capture_lambda_handler(handler)`, with the tracer built at the first invocation: it
    still comes before any client (the assembly builds them inside the invocation), so boto3 is
    patched for every call, and Powertools' cold-start flag is flipped by this first trace."""
    @wraps(handler)
    def traced(event: Any, context: LambdaContext) -> Any:
        return _captured(handler)(event, context)

    return traced


@cache
def _captured(handler: Handler) -> Handler:
    return _tracer().capture_lambda_handler(handler)


@cache
def _tracer() -> Tracer:
    """One for every handler: Tracer() imports the X-Ray SDK and patches boto3 (auto_patch), which
    a second one would do again."""
    return Tracer()
