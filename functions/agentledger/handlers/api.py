"""The REST API (API Gateway proxy → Powertools resolver with validation and OpenAPI)."""
from __future__ import annotations

import json
from http import HTTPStatus
from typing import TYPE_CHECKING, Annotated, Any

from aws_lambda_powertools.event_handler import (
    APIGatewayRestResolver,
    Response,
    content_types,
)
from aws_lambda_powertools.event_handler.openapi.exceptions import (
    RequestValidationError,
)
from aws_lambda_powertools.event_handler.openapi.params import Body, Header, Path, Query
from aws_lambda_powertools.logging import correlation_paths
from pydantic import BaseModel
from pydantic import ValidationError as ModelValidationError

from agentledger.api_contract import (
    RUN_ID_PATTERN,
    CancelOutcome,
    CancelRequest,
    CreateRunRequest,
    ErrorBody,
    ResumeOutcome,
    ReviewOutcome,
    ReviewRequest,
    RunPage,
    RunSummary,
    RunView,
    UploadGrant,
    UploadRequest,
)
from agentledger.config import ApiSettings
from agentledger.errors import CallerUnknownError, IdempotencyKeyConflictError, LedgerError
from agentledger.models import RunStatus  # noqa: TC001 — the resolver reads its routes' annotations at run time

from .wiring import assembly, lambda_handler, logger

if TYPE_CHECKING:
    from aws_lambda_powertools.event_handler.exceptions import NotFoundError
    from aws_lambda_powertools.event_handler.openapi.types import OpenAPIResponse, OpenAPIResponseHeader
    from aws_lambda_powertools.utilities.typing import LambdaContext

RunId = Annotated[str, Path(pattern=RUN_ID_PATTERN)]
IDEMPOTENCY_WINDOW_S = 24 * 3600

# No value of this API is a number this long; the interpreter's own refusal of a longer one would
# name its internals (sys.set_int_max_str_digits) to the caller.
MAX_NUMBER_DIGITS = 100


def _bounded_integer(text: str) -> int:
    if len(text.lstrip("-")) > MAX_NUMBER_DIGITS:
        raise ValueError(f"a number in the body has more than {MAX_NUMBER_DIGITS} digits; no value of this API has")
    return int(text)


def _body(text: str) -> dict[str, Any]:
    parsed: dict[str, Any] = json.loads(text, parse_int=_bounded_integer)
    return parsed


app = APIGatewayRestResolver(enable_validation=True, json_body_deserializer=_body)
app.configure_openapi(title="agentledger", version="1.0.0",
                      summary="Restartable, inspectable runs of an engineering agent")


def _error(status: HTTPStatus, message: str) -> Response[dict[str, Any]]:
    return Response(status_code=status, content_type=content_types.APPLICATION_JSON,
                    body=ErrorBody.of(status, message).model_dump())


@app.exception_handler(RequestValidationError)
def _invalid(error: RequestValidationError) -> Response[dict[str, Any]]:
    problems = [f"{'.'.join(str(part) for part in e['loc'])}: {e.get('msg', e['type'])}" for e in error.errors()]
    return _error(HTTPStatus.UNPROCESSABLE_ENTITY, "; ".join(problems))


@app.not_found
def _no_route(error: NotFoundError) -> Response[dict[str, Any]]:
    return _error(HTTPStatus.NOT_FOUND, "no such route; see GET /openapi.json for the routes this API serves")


# A model that does not validate inside a route is our defect, not the caller's: not the 400
# that ValueError, its base class, gets.
@app.exception_handler([Exception, ModelValidationError])
def _unexpected(error: Exception) -> Response[dict[str, Any]]:
    logger.exception("unhandled error")
    return _error(HTTPStatus.INTERNAL_SERVER_ERROR, "internal error; the request id is in the logs")


@app.exception_handler(LedgerError)
def _refused(error: LedgerError) -> Response[dict[str, Any]]:
    """The errors the API answers with their own status (agentledger.errors), each with its message."""
    if error.http_status is None:
        return _unexpected(error)
    return _error(error.http_status, str(error))


@app.exception_handler(RecursionError)
def _too_deep(error: RecursionError) -> Response[dict[str, Any]]:
    return _error(HTTPStatus.BAD_REQUEST, "the body is nested too deep to be a request of this API")


@app.exception_handler(ValueError)
def _bad_request(error: ValueError) -> Response[dict[str, Any]]:
    return _error(HTTPStatus.BAD_REQUEST, str(error))


def _caller() -> str:
    """The principal API Gateway's IAM authorization proved (the local API verifies SigV4 the
    same way and fills in the same field). Nothing the caller sends in a header or body counts."""
    principal = app.current_event.request_context.identity.user_arn
    if not principal:
        raise CallerUnknownError("the request carries no caller identity; sign it with SigV4 (IAM authorization)")
    return principal


def _create_once(command: dict[str, Any]) -> dict[str, Any]:
    return assembly.service().create(CreateRunRequest.model_validate(command["body"]), command["idempotency_key"],
                                     command["caller"])


def _idempotent_create(command: dict[str, Any], context: LambdaContext | None) -> dict[str, Any]:
    """Powertools idempotency keyed by the caller and the Idempotency-Key header (another principal
    sending the same key and body starts a run of its own, never gets this caller's back); the
    body is validated against the first request's, so a reused key with another body is refused."""
    # Imported here, by the first request that carries a key: the package imports boto3, which the
    # api function's cold start would pay for otherwise.
    from aws_lambda_powertools.utilities.idempotency import (  # noqa: PLC0415
        IdempotencyConfig,
        idempotent_function,
    )
    from aws_lambda_powertools.utilities.idempotency.exceptions import (  # noqa: PLC0415
        IdempotencyAlreadyInProgressError,
        IdempotencyValidationError,
    )

    config = IdempotencyConfig(event_key_jmespath="[caller, idempotency_key]", payload_validation_jmespath="body",
                               expires_after_seconds=IDEMPOTENCY_WINDOW_S)
    if context is not None:
        config.register_lambda_context(context)
    once = idempotent_function(data_keyword_argument="command", config=config,
                               persistence_store=assembly.idempotency_store(ApiSettings.from_env().idempotency_table,
                                                                                "create_run"))(
        _create_once)
    try:
        return once(command=command)
    except IdempotencyValidationError as error:
        raise IdempotencyKeyConflictError("Idempotency-Key was already used with a different body") from error
    except IdempotencyAlreadyInProgressError as error:
        raise IdempotencyKeyConflictError(
            "a request with this Idempotency-Key is still in progress; retry shortly") from error


# What any route may answer, from the API's edge (API Gateway, or the local server in its place)
# or from the function itself.
EVERY_ROUTE: dict[HTTPStatus, str] = {
    HTTPStatus.BAD_REQUEST: "the request cannot be read: a body that is not UTF-8, nested too deep, or not framed "
                            "by one Content-Length",
    HTTPStatus.FORBIDDEN: "the request is not SigV4-signed by a caller the API knows (IAM authorization)",
    HTTPStatus.REQUEST_ENTITY_TOO_LARGE: "the body is larger than the API accepts",
    HTTPStatus.UNSUPPORTED_MEDIA_TYPE: f"a body whose Content-Type is not {content_types.APPLICATION_JSON}",
    HTTPStatus.INTERNAL_SERVER_ERROR: "an error the API did not expect; the request id is in its logs",
    HTTPStatus.BAD_GATEWAY: "the api function failed or did not answer",
}


RETRY_AFTER: OpenAPIResponseHeader = {"description": "whole seconds to wait before sending the same request again",
                                      "schema": {"type": "integer", "minimum": 1}}


def _documented(description: str, model: type[BaseModel], links: dict[str, Any] | None = None) -> OpenAPIResponse:
    response: OpenAPIResponse = {"description": description,
                                 "content": {content_types.APPLICATION_JSON: {"model": model}}}
    if links:
        response["links"] = links
    return response


def _contract(success: HTTPStatus, model: type[BaseModel], description: str, refusals: dict[HTTPStatus, str],
              links: dict[str, Any] | None = None) -> dict[str, Any]:
    """A route's success status and every response it documents: its own refusals and EVERY_ROUTE's,
    each with ErrorBody, the one model every error is built from."""
    reasons = {status: [why] for status, why in EVERY_ROUTE.items()}
    for status, why in refusals.items():
        reasons.setdefault(status, []).insert(0, why)
    responses = {success.value: _documented(description, model, links)}
    responses |= {status.value: _documented("; or ".join(whys), ErrorBody) for status, whys in sorted(reasons.items())}
    if HTTPStatus.TOO_MANY_REQUESTS in responses:
        responses[HTTPStatus.TOO_MANY_REQUESTS]["headers"] = {"Retry-After": RETRY_AFTER}
    return {"status_code": success.value, "responses": responses}


def _run_links(run_id: str, *operations: str) -> dict[str, Any]:
    """OpenAPI links to the operations on the run this response names (`run_id`, a runtime expression)."""
    return {operation: {"operationId": operation, "parameters": {"run_id": run_id}} for operation in operations}


NO_SUCH_RUN = "no run with this id"
NOT_A_RUN_ID = "the run id does not validate"


@app.post("/runs", summary="Start a run", operation_id="create_run", **_contract(
    HTTPStatus.CREATED, RunSummary, "the run, started (or the one this Idempotency-Key started before)",
    {HTTPStatus.CONFLICT: "this Idempotency-Key was used with another body, or its first request is still in progress",
     HTTPStatus.UNPROCESSABLE_ENTITY: "the body does not validate, or the repository cannot be used as given",
     HTTPStatus.TOO_MANY_REQUESTS: "runs are being started faster than the API's start rate (answered at its edge): "
                                   "nothing was started; send the same request again after Retry-After seconds"},
    links=_run_links("$response.body#/run_id", "get_run", "review_run", "resume_run", "cancel_run")))
def create_run(
    body: Annotated[CreateRunRequest, Body()],
    idempotency_key: Annotated[str | None, Header(alias="Idempotency-Key", max_length=200)] = None,
) -> dict[str, Any]:
    command = {"idempotency_key": idempotency_key, "body": body.model_dump(mode="json"), "caller": _caller()}
    result = _idempotent_create(command, app.lambda_context) if idempotency_key else _create_once(command)
    logger.append_keys(run_id=result["run_id"])
    return result


@app.post("/uploads", summary="A presigned POST to upload a repository tarball for a run", operation_id="grant_upload",
          **_contract(HTTPStatus.CREATED, UploadGrant, "the upload grant",
                      {HTTPStatus.UNPROCESSABLE_ENTITY: "the body does not validate"}))
def grant_upload(body: Annotated[UploadRequest, Body()]) -> dict[str, Any]:
    return assembly.service().grant_upload(body, _caller())  # only a signed caller gets a grant, under its own prefix


@app.get("/runs", summary="List runs, newest first", operation_id="list_runs", **_contract(
    HTTPStatus.OK, RunPage, "a page of runs",
    {HTTPStatus.BAD_REQUEST: "a cursor this API did not issue",
     HTTPStatus.UNPROCESSABLE_ENTITY: "a query parameter does not validate"},
    links=_run_links("$response.body#/runs/0/run_id", "get_run")))
def list_runs(
    status: Annotated[RunStatus | None, Query()] = None,
    limit: Annotated[int, Query(ge=1, le=100)] = 20,
    cursor: Annotated[str | None, Query(max_length=2000)] = None,
) -> dict[str, Any]:
    return assembly.service().list_runs(status, limit, cursor)


@app.get("/runs/<run_id>", summary="The whole ledger of a run", operation_id="get_run", **_contract(
    HTTPStatus.OK, RunView, "the run's ledger, with its evidence checked against the repository now",
    {HTTPStatus.NOT_FOUND: NO_SUCH_RUN, HTTPStatus.UNPROCESSABLE_ENTITY: NOT_A_RUN_ID}))
def get_run(run_id: RunId) -> dict[str, Any]:
    logger.append_keys(run_id=run_id)
    return assembly.service().view(run_id)


@app.post("/runs/<run_id>/review", summary="Approve the plan or request changes", operation_id="review_run",
          **_contract(HTTPStatus.OK, ReviewOutcome, "the decision, recorded",
                      {HTTPStatus.FORBIDDEN: "the run's own requester may not approve it",
                       HTTPStatus.NOT_FOUND: NO_SUCH_RUN,
                       HTTPStatus.CONFLICT: "the run does not wait for a review of this plan: it is in another "
                                            "state, the plan digest is another, the plan went stale, or the run "
                                            "changed meanwhile",
                       HTTPStatus.UNPROCESSABLE_ENTITY: "the run id or the body does not validate"}))
def review_run(run_id: RunId, body: Annotated[ReviewRequest, Body()]) -> dict[str, Any]:
    logger.append_keys(run_id=run_id)
    return assembly.service().review(run_id, body, _caller())


@app.post("/runs/<run_id>/resume", summary="Resume a stopped run from what is still valid", operation_id="resume_run",
          **_contract(HTTPStatus.OK, ResumeOutcome, "the new execution and the restart assessment it starts from",
                      {HTTPStatus.NOT_FOUND: NO_SUCH_RUN,
                       HTTPStatus.CONFLICT: "the run is not stopped: it is complete, waits for review, or runs",
                       HTTPStatus.UNPROCESSABLE_ENTITY: NOT_A_RUN_ID}))
def resume_run(run_id: RunId) -> dict[str, Any]:
    logger.append_keys(run_id=run_id)
    return assembly.service().resume(run_id, _caller())


@app.post("/runs/<run_id>/cancel", summary="Stop a run for good", operation_id="cancel_run",
          **_contract(HTTPStatus.OK, CancelOutcome, "the run, cancelled, and the execution stopped (or the answer "
                                                     "the first cancel got, to a repeated one)",
                      {HTTPStatus.NOT_FOUND: NO_SUCH_RUN,
                       HTTPStatus.CONFLICT: "the run is complete, or writing its pull request, ticket and "
                                            "notifications, or changed meanwhile",
                       HTTPStatus.UNPROCESSABLE_ENTITY: "the run id or the body does not validate"}))
def cancel_run(run_id: RunId, body: Annotated[CancelRequest, Body()]) -> dict[str, Any]:
    logger.append_keys(run_id=run_id)
    return assembly.service().cancel(run_id, body.reason, _caller())


@app.get("/openapi.json", summary="This API's OpenAPI document", include_in_schema=False)
def openapi() -> Response[str]:
    return Response(status_code=HTTPStatus.OK, content_type=content_types.APPLICATION_JSON,
                    body=app.get_openapi_json_schema())


def _unsupported_media_type(event: dict[str, Any]) -> dict[str, Any] | None:
    """A body in anything but JSON is refused before validation reads it as JSON."""
    headers = {name.lower(): value for name, value in (event.get("headers") or {}).items()}
    if not event.get("body") or (headers.get("content-type") or "").startswith(content_types.APPLICATION_JSON):
        return None
    body = ErrorBody.of(HTTPStatus.UNSUPPORTED_MEDIA_TYPE, f"Content-Type must be {content_types.APPLICATION_JSON}")
    return {"statusCode": HTTPStatus.UNSUPPORTED_MEDIA_TYPE,
            "headers": {"Content-Type": content_types.APPLICATION_JSON},
            "body": body.model_dump_json(), "isBase64Encoded": False}


@lambda_handler(ApiSettings, correlation_id_path=correlation_paths.API_GATEWAY_REST)
def handler(event: dict[str, Any], context: LambdaContext, settings: ApiSettings) -> dict[str, Any]:
    # The routes read the same settings again where they need them (ApiSettings.from_env is cached).
    return _unsupported_media_type(event) or app.resolve(event, context)
