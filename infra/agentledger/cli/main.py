"""`agentledger`: serve the local stack, start and follow runs, review, resume and inspect them.

Every command that talks to the API takes `--api URL` and `--json` (one JSON document on stdout
instead of the human view). Errors are one line on stderr, exit 1; usage errors exit 2."""
from __future__ import annotations

import argparse
import importlib.util
import json
import os
import signal
import socket
import sys
import threading
import uuid
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from agentledger.deploy import CDK_JSON_FILE, former_context_key_problem
from agentledger.faults import CRASH_HEADER, CRASH_POINTS, parse_crash
from agentledger.git_source import is_git_source
from agentledger.limits import MAX_UPLOAD_BYTES, OUTSIDE_ROOTS, REVIEW_KEEPER_INTERVAL_MINUTES
from agentledger.local.profiles import api_port, instance_profiles_dir
from agentledger.local.throttles import THROTTLE_HEADER, THROTTLES
from agentledger.states import RunStatus

from . import render
from .apply import ApplyRefused, apply_change
from .client import ApiClient, ApiError, ApiUnreachable, fetch, upload
from .exit_codes import ExitCode
from .follow import (
    CliError,
    StageMarks,
    follow_run,
    run_path,
    stage_marks,
)
from .packaging import PackagingError, git_source_of, package_repository
from .signing import SigningError, is_loopback, request_signer

if TYPE_CHECKING:
    from collections.abc import Callable

DEFAULT_API = "http://127.0.0.1:8787"
DEFAULT_PORT = 8787
DEFAULT_REQUEST = "Write tests for the functions that lack them"
# Following gives up after half an hour (the run goes on): a slow suite and a test writer's search
# take minutes, and Ctrl-C stops following sooner.
DEFAULT_WAIT_TIMEOUT_S = 1800.0
LISTENING_PROBE_TIMEOUT_S = 2.0
# What `serve` and `demo` import beyond the package: the `local` extra of pyproject.toml.
LOCAL_EXTRA_MODULES = ("moto", "aws_cdk", "constructs", "cdk_nag")
# -- shared pieces -----------------------------------------------------------------------------
def _client(args: argparse.Namespace) -> ApiClient:
    try:
        return ApiClient(args.api, request_signer(args.api, args.profile))
    except SigningError as error:
        # No `serve` on that port wrote profiles because none runs there: that is the thing to say.
        if is_loopback(args.api) and not _listening(args.api):
            raise ApiUnreachable(args.api) from None
        raise CliError(str(error)) from None


def _listening(api_url: str) -> bool:
    try:
        with socket.create_connection((urlsplit(api_url).hostname, api_port(api_url)), LISTENING_PROBE_TIMEOUT_S):
            return True
    except OSError:
        return False


def _emit(args: argparse.Namespace, document: Any, human: Callable[[Any], str]) -> None:
    print(json.dumps(document, indent=2) if args.json else human(render.printable_document(document)), flush=True)


def _follow_and_report(args: argparse.Namespace, client: ApiClient, run_id: str,
                       already_seen: StageMarks | None = None) -> int:
    if not args.json:
        print(f"following {run_id} (Ctrl-C stops following, not the run)", flush=True)
    final = follow_run(client, run_id, timeout_s=args.timeout, show_progress=not args.json, already_seen=already_seen)
    _emit(args, final, render.outcome)
    return ExitCode.NEEDS_PERSON if final["run"]["status"] == RunStatus.NEEDS_PERSON else ExitCode.OK


# -- commands ----------------------------------------------------------------------------------
def _require_local_extra(command: str) -> None:
    """One line naming the extra to install, before anything reaches for a module it holds."""
    missing = [name for name in LOCAL_EXTRA_MODULES if not _importable(name)]
    if missing:
        raise CliError(f"{command} needs the local extra, which holds {', '.join(missing)}: "
                       "pip install 'agentledger[local]'")


def _importable(name: str) -> bool:
    try:
        return importlib.util.find_spec(name) is not None
    except ModuleNotFoundError:  # a finder that refuses the module outright
        return False


def cmd_serve(args: argparse.Namespace) -> int:
    _require_local_extra("serve")
    # The runtime pulls in moto, boto3 and the CDK assembly: only `serve` pays for that import.
    from agentledger.local.principals import write_profiles  # noqa: PLC0415
    from agentledger.local.runtime import BEDROCK_PROFILE_VARIABLE, LocalRuntime  # noqa: PLC0415
    from agentledger.local.server import LocalApiServer  # noqa: PLC0415

    profile = os.environ.get(BEDROCK_PROFILE_VARIABLE)
    if _context(args.context).get("writer") == "bedrock" and not profile:
        raise CliError(f"-c writer=bedrock calls the real Bedrock service: set {BEDROCK_PROFILE_VARIABLE} to an AWS "
                       "profile with access to the model (without it, the default planner keeps everything offline)")
    _check_build_sandbox(args.unsafe_local_builds)
    _check_build_cache()
    runtime = LocalRuntime(repository_roots=_repository_roots(args.allow_root), context=_context(args.context),
                           extra_environment={BEDROCK_PROFILE_VARIABLE: profile} if profile else None,
                           unsafe_local_builds=args.unsafe_local_builds)
    try:
        # Bound before the stack starts, so a busy port fails in a moment, not after the deploy.
        server = LocalApiServer(runtime, args.port, args.keeper_interval)
    except OSError as error:
        raise CliError(f"cannot listen on 127.0.0.1:{args.port}: {error.strerror or error}") from None
    print("agentledger: starting the local stack on moto (synthesize if needed, then deploy)...",
          file=sys.stderr, flush=True)
    try:
        runtime.start()
    except Exception as error:  # noqa: BLE001 — any startup failure is reported as one line
        raise CliError(f"the local stack did not start: {_last_line(error)}") from None
    # Keyed by the port, so another `serve` on this machine leaves these callers' keys alone; one
    # left by a stopped `serve` on this port is replaced.
    credentials, _ = write_profiles(instance_profiles_dir(server.url), runtime.principals)
    stopping = threading.Event()
    for signal_number in (signal.SIGINT, signal.SIGTERM):
        signal.signal(signal_number, lambda *_: stopping.set())
    server.start()
    try:
        print(f"agentledger local API on {server.url} (Ctrl-C to stop)", flush=True)
        print(f"state machine: {runtime.state_machine_arn}", flush=True)
        print(f"callers: profiles {', '.join(p.profile for p in runtime.principals)} in {credentials}; the CLI "
              f"signs with them for --api {server.url}, as the requester unless --profile names another", flush=True)
        # As Jupyter prints its token: each link signs a browser in once, as that principal.
        for duty, link in server.console.sign_in_links(server.url).items():
            print(f"console: sign in as the {duty}: {link}", flush=True)
        # Woken twice a second: Python runs a signal's handler in the main thread between bytecodes,
        # and a lock wait without a timeout may sleep through a signal another thread received.
        while not stopping.wait(0.5):
            pass
        print("agentledger: stopping...", file=sys.stderr, flush=True)
    finally:
        server.stop()
        runtime.stop()
    return 0


def _check_build_sandbox(unsafe: bool) -> None:
    """Builds run the code under test: without the sandbox they run only when asked to, loudly."""
    from agentledger.local.sandbox import sandbox_problem  # noqa: PLC0415 — only serve runs builds

    if unsafe:
        print("agentledger: UNSAFE: --unsafe-local-builds: test builds run without a sandbox, as this user, with "
              "this machine's files, processes and ports in reach", file=sys.stderr, flush=True)
        return
    problem = sandbox_problem()
    if problem:
        raise CliError(f"refusing to run test builds: {problem}")


def _check_build_cache() -> None:
    # Both load moto: only serve pays for it.
    from agentledger.local.codebuild import build_cache_problem  # noqa: PLC0415
    from agentledger.local.runtime import default_build_cache  # noqa: PLC0415

    problem = build_cache_problem(default_build_cache())
    if problem:
        raise CliError(f"refusing to start: {problem}")


def _context(given: list[str] | None) -> dict[str, str]:
    """`-c key=value` pairs, as `cdk deploy` takes them."""
    known = sorted(key for key in json.loads(CDK_JSON_FILE.read_text())["context"] if "@" not in key)
    context = {}
    for pair in given or []:
        key, sep, value = pair.partition("=")
        if not sep or not key:
            raise CliError(f"-c {pair}: expected key=value, as `cdk deploy -c` takes it")
        if (renamed := former_context_key_problem(key)) is not None:
            raise CliError(f"-c {pair}: {renamed}")
        if key not in known:
            raise CliError(f"-c {pair}: unknown context key {key!r}; the stack reads {', '.join(known)}")
        context[key] = value
    return context


def _repository_roots(given: list[str] | None) -> tuple[Path, ...] | None:
    if not given:
        return None
    roots = []
    for text in given:
        root = Path(text).expanduser().resolve()
        if not root.is_dir():
            raise CliError(f"--allow-root {text}: not a directory")
        if root == Path(root.anchor):
            raise CliError(f"--allow-root {text}: refusing to allow every file on this machine; "
                           "name a project directory")
        roots.append(root)
    return tuple(roots)


def _last_line(error: Exception) -> str:
    lines = [line.strip() for line in str(error).splitlines() if line.strip()]
    return lines[-1] if lines else type(error).__name__


def cmd_run(args: argparse.Namespace) -> int:
    git_source = is_git_source(args.path)  # git+<url>@<ref>: the API reads the ref itself
    repository = Path(args.path) if git_source else Path(args.path).expanduser().resolve()
    if not git_source and not repository.is_dir():
        raise CliError(f"{args.path} is not a directory; give the path of a repository to work on, "
                       "or a Git source as git+<url>@<ref>")
    # A fresh key per invocation; pass --idempotency-key to make a retried command safe.
    headers = {"Idempotency-Key": args.idempotency_key or str(uuid.uuid4())}
    if args.crash:
        try:
            parse_crash(args.crash)
        except ValueError as error:
            raise CliError(str(error)) from None
        headers[CRASH_HEADER] = args.crash
    if args.throttle:  # the local API checks it against the services and their operations
        headers[THROTTLE_HEADER] = args.throttle
    client = _client(args)
    location = args.path if git_source else _uploaded(client, repository, args) if _should_upload(args) \
        else str(repository)
    body = {"repository": location, "request": args.request, "environment": "dev"}
    try:
        response = client.post("/runs", body, headers=headers)
    except ApiError as refused:
        if git_source or location != str(repository) or OUTSIDE_ROOTS not in refused.message:
            raise
        # `serve` does not read this directory in place: send the tree, as to a deployed API.
        body["repository"] = _uploaded(client, repository, args)
        response = client.post("/runs", body, headers=headers)
    if not args.wait:
        _emit(args, response, render.created)
        return 0
    if not args.json:
        print(render.created(render.printable_document(response)), flush=True)
    return _follow_and_report(args, client, response["run_id"])


def _should_upload(args: argparse.Namespace) -> bool:
    """A deployed API cannot read this machine's disk: the tree is uploaded. A local API reads the
    directory itself unless --upload asks for the deployed path."""
    return args.upload or not is_loopback(args.api)


def _uploaded(client: ApiClient, repository: Path, args: argparse.Namespace) -> str:
    try:
        package = package_repository(repository, MAX_UPLOAD_BYTES)
    except PackagingError as error:
        raise CliError(str(error)) from None
    grant = client.post("/uploads", {"sha256": package.sha256, "size": len(package.data)})
    # This tree, uploaded before by this caller, is not sent again (an upload is never replaced).
    sent = not grant.get("uploaded")
    if not args.json:
        print(f"packaged {package.files} files of {repository} ({package.sha256[:12]}, {len(package.data)} bytes); "
              f"{'uploading...' if sent else 'uploaded before, not sent again'}", file=sys.stderr, flush=True)
    if sent:
        upload(grant, package.data)
    follows = git_source_of(repository)
    if follows and not args.json:
        print(f"this run reads a snapshot, which cannot go stale; to follow the branch the tree came from, "
              f"start it on `agentledger run {follows}`", file=sys.stderr, flush=True)
    return str(grant["repository"])


def cmd_runs(args: argparse.Namespace) -> int:
    client = _client(args)
    query = {"status": args.status, "limit": args.limit}
    page = client.get("/runs", query)
    runs = list(page["runs"])
    while args.all and page.get("next_cursor"):
        page = client.get("/runs", {**query, "cursor": page["next_cursor"]})
        runs.extend(page["runs"])
    document = {"runs": runs, "next_cursor": page.get("next_cursor")}

    def human(listing: dict[str, Any]) -> str:
        more = "\n(more runs: add --all)" if listing["next_cursor"] else ""
        return render.runs_table(listing["runs"]) + more

    _emit(args, document, human)
    return 0


def cmd_show(args: argparse.Namespace) -> int:
    client = _client(args)
    if args.follow:
        return _follow_and_report(args, client, args.run_id)
    _emit(args, client.get(run_path(args.run_id)), render.run_timeline)
    return 0


def cmd_artifact(args: argparse.Namespace) -> int:
    data = _artifact_bytes(_client(args), args.run_id, args.name)
    if args.output:
        Path(args.output).write_bytes(data)
        print(f"wrote {len(data)} bytes to {args.output}", file=sys.stderr, flush=True)
    else:
        _write_artifact(data)
    return 0


def cmd_diff(args: argparse.Namespace) -> int:
    _write_artifact(_artifact_bytes(_client(args), args.run_id, "changes.diff"))
    return 0


def _write_artifact(data: bytes) -> None:
    """As stored into a pipe or a file (a patch must apply); on a terminal, without its controls."""
    if sys.stdout.isatty():
        print(render.printable(data.decode(errors="replace")), end="", flush=True)
    else:
        sys.stdout.buffer.write(data)
        sys.stdout.flush()


def _artifact_bytes(client: ApiClient, run_id: str, name: str, document: dict[str, Any] | None = None) -> bytes:
    """The newest committed artifact of that name (else the newest), fetched through its presigned link."""
    artifacts = (document or client.get(run_path(run_id)))["artifacts"]
    matching = [artifact for artifact in artifacts if artifact["name"] == name]
    if not matching:
        names = ", ".join(sorted({artifact["name"] for artifact in artifacts})) or "none yet"
        raise CliError(f"{run_id} has no artifact named {name!r}; it has: {names}")
    newest = max(matching, key=lambda artifact: (bool(artifact.get("committed")), artifact["created_at"]))
    return fetch(newest["url"])


def cmd_apply(args: argparse.Namespace) -> int:
    client = _client(args)
    document = client.get(run_path(args.run_id))
    run, review = document["run"], document.get("review") or {}
    if run.get("outcome") == "nothing_to_do":
        raise CliError(f"{args.run_id} had nothing to do: there is no change to apply")
    if run["status"] != RunStatus.COMPLETE or review.get("decision") != "approve":
        raise CliError(f"{args.run_id} has no approved change yet (status {run['status']}); "
                       "apply takes the change of a run that was approved and completed")
    tree = Path(args.path or run["repository"])
    if not tree.is_dir():
        raise CliError(f"{tree} is not a directory on this machine; pass the working tree: "
                       f"`agentledger apply {args.run_id} PATH`")
    plan = json.loads(_artifact_bytes(client, args.run_id, "plan.json", document))
    files = json.loads(_artifact_bytes(client, args.run_id, "test-files.json", document))
    try:
        applied = apply_change(tree, files, plan.get("files_read") or {})
    except ApplyRefused as refused:
        raise CliError(f"{args.run_id} was not applied to {tree}: {refused}") from None
    _emit(args, {"run_id": args.run_id, "tree": str(tree), "written": applied.written,
                 "already_there": applied.already_there},
          lambda shown: render.applied(shown["run_id"], shown["tree"], shown["written"], shown["already_there"]))
    return ExitCode.OK


def cmd_review(args: argparse.Namespace) -> int:
    client = _client(args)
    plan_digest = args.plan_digest
    decision = "approve" if args.approve else "request_changes" if args.request_changes else None
    if plan_digest is None or decision is None:
        document = client.get(run_path(args.run_id))
        plan_digest = (plan_digest or (document.get("review") or {}).get("plan_digest")
                       or document["run"].get("plan_digest"))
        if not plan_digest:
            raise CliError(f"{args.run_id} has no plan to review yet (status {document['run']['status']})")
        if decision is None:
            decision, comment = _ask_for_decision(args, client, document)
            if decision is None:
                return ExitCode.OK
            args.comment = args.comment or comment
    body = {"decision": decision, "plan_digest": plan_digest, "comment": args.comment}
    _emit(args, client.post(f"{run_path(args.run_id)}/review", body), render.review_result)
    return 0


def _ask_for_decision(args: argparse.Namespace, client: ApiClient,
                      document: dict[str, Any]) -> tuple[str | None, str | None]:
    """What is being approved, then the question, on a terminal only."""
    if document["run"]["status"] != RunStatus.AWAITING_REVIEW:
        raise CliError(f"{args.run_id} is not waiting for review (status {document['run']['status']})")
    diff = _artifact_bytes(client, args.run_id, "changes.diff").decode(errors="replace")
    print(render.review_brief(render.printable_document(document), render.printable(diff)), flush=True)
    if not sys.stdin.isatty():
        raise CliError("no terminal to ask on: decide with --approve or --request-changes [--comment TEXT]")
    while True:
        answer = input("\napprove, request changes, or quit without deciding? [a/r/q] ").strip().lower()
        if answer in ("a", "approve"):
            return "approve", None
        if answer in ("r", "request changes"):
            return "request_changes", input("what should the planner change? ").strip() or None
        if answer in ("q", "quit", ""):
            print("no decision recorded", flush=True)
            return None, None


def cmd_resume(args: argparse.Namespace) -> int:
    client = _client(args)
    # Stage lines already in the ledger are not news: only what this execution changes is shown.
    before = stage_marks(client.get(run_path(args.run_id))) if args.wait else None
    response = client.post(f"{run_path(args.run_id)}/resume", {})
    if not args.wait:
        _emit(args, response, render.assessment)
        return 0
    if not args.json:
        print(render.assessment(render.printable_document(response)), flush=True)
    return _follow_and_report(args, client, args.run_id, already_seen=before)


def cmd_cancel(args: argparse.Namespace) -> int:
    response = _client(args).post(f"{run_path(args.run_id)}/cancel", {"reason": args.reason})
    _emit(args, response, render.cancelled)
    return 0


def cmd_crash_points(args: argparse.Namespace) -> int:
    points = [f"{stage}:{point}" for stage, stage_points in CRASH_POINTS.items() for point in stage_points]
    _emit(args, {"crash_points": points}, lambda _: render.crash_points(CRASH_POINTS))
    return 0


def cmd_demo(args: argparse.Namespace) -> int:
    _require_local_extra("demo")
    from agentledger.cli import demo  # noqa: PLC0415 — starts the whole local stack; loaded only for this command

    _check_build_sandbox(args.unsafe_local_builds)
    return demo.main(args)


def cmd_metrics(args: argparse.Namespace) -> int:
    _emit(args, _client(args).get("/_local/metrics"), render.metrics_summary)
    return 0


# -- the parser --------------------------------------------------------------------------------
def _positive_seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of seconds") from None
    if value <= 0:
        raise argparse.ArgumentTypeError("must be more than 0 seconds")
    return value


def _global_options(defaults: bool) -> argparse.ArgumentParser:
    """--api and --json, accepted before or after the command. The copy on each command has no
    defaults, so an option given before the command is not reset by the command's parser."""
    options = argparse.ArgumentParser(add_help=False)
    api_default = os.environ.get("AGENTLEDGER_API", DEFAULT_API) if defaults else argparse.SUPPRESS
    options.add_argument("--api", metavar="URL", default=api_default,
                         help=f"the agentledger API (default: $AGENTLEDGER_API, else {DEFAULT_API})")
    options.add_argument("--json", action="store_true", default=False if defaults else argparse.SUPPRESS,
                         help="print one JSON document instead of the human view")
    profile_default = os.environ.get("AWS_PROFILE") if defaults else argparse.SUPPRESS
    options.add_argument("--profile", metavar="NAME", default=profile_default,
                         help="the AWS profile whose credentials sign each request (default: botocore's "
                              "chain; for a local API, the requester the `serve` on its port wrote)")
    return options


def _add_wait_options(command: argparse.ArgumentParser, *, by_default: bool) -> None:
    follows = "follow the run until it settles, stage by stage"
    command.add_argument("--wait", action=argparse.BooleanOptionalAction, default=by_default,
                         help=f"{follows} (--no-wait: print the new run and return)" if by_default else follows)
    _add_timeout_option(command)


def _add_timeout_option(command: argparse.ArgumentParser) -> None:
    command.add_argument("--timeout", type=_positive_seconds, default=DEFAULT_WAIT_TIMEOUT_S, metavar="SECONDS",
                         help="give up following after this long (default %(default)g)")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="agentledger", description=__doc__.splitlines()[0],
                                     parents=[_global_options(defaults=True)])
    commands = parser.add_subparsers(title="commands", metavar="COMMAND", required=True)
    common = _global_options(defaults=False)

    def command(name: str, handler: Callable[[argparse.Namespace], int], summary: str) -> argparse.ArgumentParser:
        sub = commands.add_parser(name, parents=[common], help=summary, description=summary)
        sub.set_defaults(handler=handler)
        return sub

    serve = command("serve", cmd_serve, "run the local stack (moto) and its HTTP API until Ctrl-C")
    serve.add_argument("--port", type=int, default=DEFAULT_PORT, help="port on 127.0.0.1 (default %(default)s)")
    serve.add_argument("--keeper-interval", type=float, default=5.0, metavar="SECONDS",
                       help=f"how often the review keeper runs (AWS: every {REVIEW_KEEPER_INTERVAL_MINUTES} minutes; "
                            "default %(default)g s)")
    serve.add_argument("-c", "--context", action="append", metavar="KEY=VALUE",
                       help="a CDK context value for the local stack, exactly as `cdk deploy -c` takes it "
                            "(the documentation's settings reference); repeatable")
    serve.add_argument("--unsafe-local-builds", action="store_true",
                       help="run test builds without the sandbox (bubblewrap and pasta): the code under test runs "
                            "as you, with this machine's files, processes and ports in reach; said on every build")
    serve.add_argument("--allow-root", action="append", metavar="DIR",
                       help="a directory the local API reads repositories from in place; repeatable (default: "
                            "the directory serve starts in and the temporary directory's agentledger folder; "
                            "`run` uploads any other directory, as to a deployed API)")

    run = command("run", cmd_run, "start a run on a repository")
    run.add_argument("path", metavar="PATH", help="the repository directory, or a Git source: git+<url>@<ref>")
    run.add_argument("--request", default=DEFAULT_REQUEST, help="what the agent is asked to do (default: %(default)r)")
    run.add_argument("--crash", metavar="STAGE:POINT", help="local runtime only: crash that stage at that point "
                                                             "(see `agentledger crash-points`)")
    run.add_argument("--throttle", metavar="SERVICE:OPERATION[:COUNT]",
                     help="local runtime only: the run's next COUNT (default 1) calls of that operation are "
                          f"refused as AWS refuses them when a quota binds (SERVICE: {', '.join(THROTTLES)}; "
                          "OPERATION as the API names it, e.g. dynamodb:TransactWriteItems)")
    run.add_argument("--upload", action="store_true",
                     help="package and upload the working tree (always, against a deployed API; "
                          ".gitignore is honoured)")
    run.add_argument("--idempotency-key", metavar="KEY",
                     help="names the run: repeating the command with the same key and body returns the same run")
    # A run is followed until it settles unless --no-wait: what a person who starts one wants to see.
    _add_wait_options(run, by_default=True)

    runs = command("runs", cmd_runs, "list runs, newest first")
    runs.add_argument("--status", choices=[status.value for status in RunStatus])
    runs.add_argument("--limit", type=int, metavar="N", help="runs per page (API default 20, at most 100)")
    runs.add_argument("--all", action="store_true", help="follow the pages to the last run")

    show = command("show", cmd_show, "the whole ledger of a run: handoff, stages, evidence, artifacts, history")
    show.add_argument("run_id", metavar="RUN")
    show.add_argument("--follow", action="store_true",
                      help="pick the run up again: follow it from where it stands until it settles")
    _add_timeout_option(show)

    artifact = command("artifact", cmd_artifact, "print or save one of a run's artifacts")
    artifact.add_argument("run_id", metavar="RUN")
    artifact.add_argument("name", metavar="NAME", help="as `show` lists it, e.g. test-output.txt")
    artifact.add_argument("-o", "--output", metavar="FILE", help="write it to FILE instead of stdout")

    diff = command("diff", cmd_diff, "print the change the run made (changes.diff)")
    diff.add_argument("run_id", metavar="RUN")

    review = command("review", cmd_review, "approve the run's plan or request changes")
    review.add_argument("run_id", metavar="RUN")
    decision = review.add_mutually_exclusive_group()
    decision.add_argument("--approve", action="store_true")
    decision.add_argument("--request-changes", action="store_true")
    review.add_argument("--comment")
    review.add_argument("--plan-digest", metavar="DIGEST",
                        help="the plan being judged (default: the one the run is waiting on)")

    apply = command("apply", cmd_apply, "write a run's approved change into a local working tree")
    apply.add_argument("run_id", metavar="RUN")
    apply.add_argument("path", metavar="PATH", nargs="?",
                       help="the working tree (default: the run's repository, when it is a local directory)")

    resume = command("resume", cmd_resume, "resume a stopped run from what is still valid")
    resume.add_argument("run_id", metavar="RUN")
    _add_wait_options(resume, by_default=False)

    cancel = command("cancel", cmd_cancel, "stop a run for good, with a recorded decision (before it writes its "
                                           "pull request)")
    cancel.add_argument("run_id", metavar="RUN")
    cancel.add_argument("--reason", help="why, recorded in the ledger (default: who cancelled it)")

    command("crash-points", cmd_crash_points, "the STAGE:POINT values `run --crash` accepts")

    demo = command("demo", cmd_demo, "start the local stack and walk through interrupted and resumed runs")
    demo.add_argument("--keep", action="store_true", help="keep the sample repository")
    demo.add_argument("--port", type=int, default=0, help="API port (default: a free port)")
    demo.add_argument("--unsafe-local-builds", action="store_true",
                      help="run the demo's test builds without the sandbox, as serve's option does")

    command("metrics", cmd_metrics, "recovery rate, duplicated side effects, stale plans, time to handoff")
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exit_:
        return exit_.code if isinstance(exit_.code, int) else ExitCode.USER_ERROR
    try:
        return args.handler(args)
    except BrokenPipeError:
        # The reader went away (`show RUN | head`): nothing more to say, and nowhere to say it.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return ExitCode.CLOSED_PIPE
    except CliError as error:
        print(render.printable(f"agentledger: {error}"), file=sys.stderr)
        return error.exit_code
    except (ApiError, ApiUnreachable) as error:
        print(render.printable(f"agentledger: {error}"), file=sys.stderr)
    except KeyboardInterrupt:
        print("agentledger: interrupted", file=sys.stderr)
        return ExitCode.INTERRUPTED
    except Exception as error:  # noqa: BLE001 — users get one line, never a traceback
        print(render.printable(f"agentledger: unexpected {type(error).__name__}: {error}"), file=sys.stderr)
    return ExitCode.USER_ERROR


if __name__ == "__main__":
    sys.exit(main())
