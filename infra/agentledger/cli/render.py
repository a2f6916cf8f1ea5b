"""Human-readable views of API documents. Pure functions, document in and text out, so every view
can be checked without a server."""
from __future__ import annotations

import textwrap
from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime
from typing import Any

from agentledger.hidden_text import printable
from agentledger.states import Stage

STAGE_ORDER: tuple[str, ...] = tuple(stage.value for stage in Stage)
STAGE_GLYPHS = {"complete": "✓", "running": "▸", "failed": "✗", "invalidated": "↺"}
EVIDENCE_GLYPHS = {"valid": "✓", "stale": "✗", "missing": "·"}
CRASH_POINT_MEANINGS = {
    "before_work": "the stage started, nothing produced",
    "after_artifacts": "outputs written to S3, ledger not yet committed",
    "after_commit": "ledger committed, handler not yet returned",
    "before_call": "effect attempt recorded, receiver not called yet (fires once)",
    "after_accept": "receiver accepted the write, response lost before the read-back (fires once)",
    "after_record": "effect confirmed and recorded, handler not yet returned (fires once)",
    "build_running": "test build started and its id recorded, the build still running",
}
EFFECT_FIELDS = ("kind", "status", "receiver", "receiver_id", "attempts", "key", "error")
METRICS_TIMINGS = ("time_to_handoff_s", "review_wait_s")
BOX_WIDTH = 96
REQUEST_COLUMN_WIDTH = 40
REVIEW_DIFF_LINES = 120  # of the diff the review shows after the summary; `agentledger diff` shows all


def printable_document(value: Any) -> Any:
    """Every string of an API document made printable (agentledger.hidden_text: a request, a test's
    name, a model's rationale or a generated test's source could otherwise drive the reader's
    terminal or reorder what it shows), before any view lays it out (wrapping would otherwise
    treat a carriage return as a place to break the line)."""
    if isinstance(value, str):
        return printable(value)
    if isinstance(value, Mapping):
        return {printable(str(key)): printable_document(item) for key, item in value.items()}
    if isinstance(value, list):
        return [printable_document(item) for item in value]
    return value


# -- small formatting helpers ----------------------------------------------------------------
def _parse(timestamp: str | None) -> datetime | None:
    return datetime.fromisoformat(timestamp) if timestamp else None


def when(timestamp: str | None) -> str:
    """A timestamp to the second, in the UTC the ledger records."""
    moment = _parse(timestamp)
    return moment.strftime("%Y-%m-%d %H:%M:%S") if moment else "-"


def duration(started_at: str | None, finished_at: str | None) -> str:
    start, end = _parse(started_at), _parse(finished_at)
    if start is None or end is None:
        return "-"
    seconds = (end - start).total_seconds()
    if seconds < 60:
        return f"{seconds:.2f}s"
    minutes, seconds = divmod(round(seconds), 60)
    return f"{minutes}m{seconds:02d}s"


def size(byte_count: int) -> str:
    if byte_count < 1024:
        return f"{byte_count} B"
    if byte_count < 1024 * 1024:
        return f"{byte_count / 1024:.1f} KiB"
    return f"{byte_count / (1024 * 1024):.1f} MiB"


def truncate(text: str, width: int) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= width else flat[: width - 1] + "…"


def table(headers: Sequence[str], rows: Iterable[Sequence[str]], indent: str = "") -> list[str]:
    rows = [list(row) for row in rows]
    widths = [max(len(str(cell)) for cell in column) for column in zip(headers, *rows, strict=True)]
    return [indent + "  ".join(str(cell).ljust(width) for cell, width in zip(row, widths, strict=True)).rstrip()
            for row in [list(headers), *rows]]


def box(title: str, fields: Sequence[tuple[str, str]]) -> list[str]:
    label_width = max(len(label) for label, _ in fields)
    text_width = BOX_WIDTH - label_width - 6
    lines = [f"┌─ {title} " + "─" * (BOX_WIDTH - len(title) - 4)]
    for label, value in fields:
        wrapped = textwrap.wrap(value, text_width, break_on_hyphens=False) or [""]
        lines.append(f"│ {label.ljust(label_width)}  {wrapped[0]}")
        lines.extend(f"│ {' ' * label_width}  {more}" for more in wrapped[1:])
    lines.append("└" + "─" * (BOX_WIDTH - 1))
    return lines


def _effect_line(effect: Mapping[str, Any]) -> str:
    """Effects are shown by whichever identifying fields they carry, so new fields need no change here."""
    shown = [f"{key} {effect[key]}" for key in EFFECT_FIELDS if effect.get(key) is not None]
    return ", ".join(shown) or str(dict(effect))


def _listed(records: Mapping[str, Any] | Sequence[Any] | None) -> list[Any]:
    """The ledger keeps some records by key (a dict) and the API may list them: accept both."""
    if isinstance(records, Mapping):
        return list(records.values())
    return list(records or [])


# -- live progress -----------------------------------------------------------------------------
def stage_progress_line(record: Mapping[str, Any]) -> str:
    status = record["status"]
    detail = "running" if status == "running" else duration(record.get("started_at"), record.get("finished_at"))
    if status == "invalidated":
        detail = "invalidated"
    line = f"  {STAGE_GLYPHS.get(status, '?')} {record['stage']:<13}{detail:>11}  attempt {record.get('attempt', 0)}"
    if status == "failed" and record.get("error"):
        line += f"  {truncate(record['error'], 80)}"
    return line


def build_progress_line(progress: Mapping[str, Any]) -> str:
    """`execute: pynguin writing pricing (round 2) · 13 written, 2 dropped so far`."""
    return f"execute: {progress['description']}"


def elapsed_line(stages: Mapping[str, Mapping[str, Any]], now: datetime,
                 progress: Mapping[str, Any] | None = None) -> str | None:
    """The live line while a stage runs: which one, for how long so far, and where its build is."""
    running = [record for record in stages.values() if record["status"] == "running" and record.get("started_at")]
    if not running:
        return None
    record = max(running, key=lambda r: r["started_at"])
    started = _parse(record["started_at"])
    assert started is not None
    seconds = max(0, int((now - started).total_seconds()))
    shown = f"{seconds}s" if seconds < 60 else f"{seconds // 60}m{seconds % 60:02d}s"
    where = f" · {build_progress_line(progress).removeprefix('execute: ')}" if progress else ""
    return f"  … {record['stage']} running for {shown}{where}"


def outcome(document: Mapping[str, Any]) -> str:  # noqa: PLR0911 — one message per status
    """What a finished wait means for the person watching, and what they can do next."""
    run = document["run"]
    run_id, status = run["run_id"], run["status"]
    if status == "awaiting_review":
        digest = (document.get("review") or {}).get("plan_digest") or run.get("plan_digest") or "?"
        return (f"{run_id} is awaiting review of plan {digest}\n"
                f"  a reviewer other than {run.get('requested_by') or 'the requester'} approves with "
                f"`agentledger review {run_id} --approve --profile REVIEWER` (or --request-changes); "
                f"inspect it with `agentledger show {run_id}`")
    if status == "complete":
        brief = document.get("summary") or {}
        if run.get("outcome") == "nothing_to_do":
            return (f"{run_id} is complete with nothing to do: the plan found nothing to write tests for\n"
                    f"  see why with `agentledger artifact {run_id} plan.json` (its `skipped` list)")
        pull_request = brief.get("pull_request")
        if pull_request:
            return (f"{run_id} is complete; pull request {pull_request}\n"
                    f"  see the ledger with `agentledger show {run_id}`; for a local repository, "
                    f"`agentledger apply {run_id}` writes the change into its working tree")
        return f"{run_id} is complete; see the ledger with `agentledger show {run_id}`"
    if status == "needs_person":
        handoff = document.get("handoff") or {}
        return (f"{run_id}: {handoff.get('summary', 'needs a person')}\n"
                f"  see the handoff with `agentledger show {run_id}`, then `agentledger resume {run_id}`")
    if status == "cancelled":
        return f"{run_id} was cancelled; see who cancelled it and why with `agentledger show {run_id}`"
    if status == "failed":
        return f"{run_id} failed; see `agentledger show {run_id}`, then `agentledger resume {run_id}`"
    return f"{run_id} is {status} (state {run['state']})"


# -- command results ---------------------------------------------------------------------------
def created(response: Mapping[str, Any]) -> str:
    return (f"started {response['run_id']} (execution {response['execution']}) at revision {response['revision']}\n"
            f"  follow it with `agentledger show {response['run_id']}`")


def review_result(response: Mapping[str, Any]) -> str:
    then = ("the execution goes on to complete" if response["decision"] == "approve"
            else "the plan is invalidated; resume the run to replan")
    return f"{response['decision']} recorded for {response['run_id']} (status {response['status']}); {then}"


def cancelled(response: Mapping[str, Any]) -> str:
    stopped = response.get("stopped_execution")
    then = f"execution {stopped} stopped" if stopped else "no execution was running"
    return f"cancelled {response['run_id']} ({response['reason']}); {then}"


def applied(run_id: str, tree: Any, written: Sequence[str], already_there: Sequence[str]) -> str:
    lines = [f"applied {run_id} to {tree}: {len(written)} file(s) written"
             + (f", {len(already_there)} already there" if already_there else "")]
    lines += [f"  + {path}" for path in written]
    lines += [f"  = {path}" for path in already_there]
    return "\n".join(lines)


def assessment(response: Mapping[str, Any]) -> str:
    """The three answers every restart gives: what is complete, what evidence holds, what is next."""
    answers = response["assessment"]
    lines = [f"Resumed {response['run_id']} as execution {response['execution']}",
             f"Complete: {', '.join(answers['complete']) or 'nothing'}",
             "Evidence:"]
    lines.extend(f"  {e['name']}: {e['status']} — {e['reason']}" for e in answers["evidence"])
    lines.append(f"Next: {answers['next']} — {answers['reason']}")
    if answers.get("invalidated"):
        lines.append(f"Invalidated: {', '.join(answers['invalidated'])}")
    changes = answers.get("changed_files") or {}
    counts = answers.get("changed_file_counts") or {}
    if changes:
        described = (f"{change}: {', '.join(files)}{_more(counts.get(change, 0) - len(files))}"
                     for change, files in changes.items())
        lines.append("Changed files: " + "; ".join(described))
    return "\n".join(lines)


def _more(unnamed: int) -> str:
    return f" and {unnamed:,} more" if unnamed > 0 else ""


def crash_points(points: Mapping[str, Sequence[str]]) -> str:
    rows = [(f"{stage}:{point}", CRASH_POINT_MEANINGS.get(point.rpartition(".")[2], ""))
            for stage, stage_points in points.items()
            for point in stage_points]
    return "\n".join(table(("CRASH POINT", "MEANING"), rows))


def runs_table(runs: Sequence[Mapping[str, Any]]) -> str:
    if not runs:
        return "no runs"
    rows = [(r["run_id"], r["status"], r["state"], when(r.get("created_at")), r["repository"],
             truncate(r["request"], REQUEST_COLUMN_WIDTH)) for r in runs]
    return "\n".join(table(("RUN", "STATUS", "STATE", "CREATED", "REPOSITORY", "REQUEST"), rows))


def metrics_summary(summary: Mapping[str, Any]) -> str:
    """The local API's metrics summary (`/_local/metrics`): counts first, then timing statistics."""
    # Timings are picked by name, not by being dicts: one never measured is None, not a count.
    rows = [(key.replace("_", " "), "-" if value is None else str(value)) for key, value in summary.items()
            if key not in METRICS_TIMINGS and key not in ("namespace", "stage_duration_s", "throttled_by_aws_service")]
    throttled = summary.get("throttled_by_aws_service") or {}
    rows.append(("throttled by AWS", ", ".join(f"{service} {count}" for service, count in throttled.items()) or "-"))
    rows += [(key.replace("_", " "), _timing(summary[key])) for key in METRICS_TIMINGS]
    rows += [(f"stage duration {stage} (s)", _timing(stats)) for stage, stats in summary["stage_duration_s"].items()]
    width = max(len(label) for label, _ in rows)
    lines = [f"metrics in namespace {summary['namespace']} (from the EMF records the handlers emitted)"]
    lines += [f"  {label.ljust(width)}  {value}" for label, value in rows]
    return "\n".join(lines)


def _timing(stats: Mapping[str, Any] | None) -> str:
    return "-" if stats is None else f"avg {stats['avg']}  max {stats['max']}  n={stats['count']}"


# -- the whole ledger of a run -----------------------------------------------------------------
def run_timeline(document: Mapping[str, Any]) -> str:
    sections = [
        summary(document.get("summary")),
        _handoff(document.get("handoff")),
        _header(document),
        _stages(document.get("stages") or {}, (document.get("run") or {}).get("outcome") == "nothing_to_do",
                document.get("progress")),
        _tests(document.get("test_runs") or {}),
        _evidence(document.get("evidence") or {}, document.get("evidence_status") or {}),
        _artifacts(document.get("artifacts") or [], document.get("artifact_location")),
        _section("Effects", [f"  {_effect_line(effect)}" for effect in _listed(document.get("effects"))]),
        _section("Decisions", [f"  {when(d['at'])}  {d['kind']:<20} {d['summary']}"
                               + (f"  (by {d['actor']})" if d.get("actor") else "")
                               for d in document.get("decisions") or []]),
        _transitions(document.get("transitions") or []),
    ]
    return "\n\n".join("\n".join(section) for section in sections if section)


def summary(brief: Mapping[str, Any] | None) -> list[str]:
    """The run in a few lines: asked for, planned, written, shown."""
    if not brief:
        return []
    lines = ["Summary", f"  asked    {truncate(brief['request'], BOX_WIDTH)}"]
    if brief.get("source"):
        lines.append(f"  source   {brief['source']}")
    if brief.get("outcome") == "nothing_to_do":
        lines.append("  outcome  nothing to do: the plan writes no files, so nothing is reviewed, ticketed or opened")
    if brief.get("outcome") == "no_tests_kept":
        lines.append("  outcome  no candidate test passed the filters: the findings are the result, no pull request")
    if brief.get("pull_request"):
        lines.append(f"  pull     {brief['pull_request']}")
    lines += _value(brief.get("generation"))
    plan = brief.get("plan")
    if plan is None:
        lines.append("  plan     not made yet")
    else:
        lines.append(f"  plan     {plan['targets']} target(s) to test, {plan['skipped']} skipped ({plan['planner']})")
        lines += [f"             {item['target']} → {item['test_path']}: {truncate(item['rationale'], 60)}"
                  for item in plan["first"]]
        if plan["targets"] > len(plan["first"]):
            more = plan["targets"] - len(plan["first"])
            lines.append(f"             … and {more} more (`agentledger artifact RUN plan.json`)")
    changed = brief.get("files_changed") or []
    idle = brief.get("outcome") == "nothing_to_do"
    listed = ": " + ", ".join(f"{f['path']} (+{f['lines']})" for f in changed)
    # "none yet" only while the run may still write some: these outcomes say it never will.
    never = {"empty_plan_reviewed": ": none, the plan writes no files", "no_tests_kept": ": none, no test was kept"}
    lines.append(f"  files    {len(changed)} written" + (
        listed if changed else "" if idle else never.get(brief.get("outcome") or "", ": none yet")))
    tests = brief["tests"]
    shown = (f"{tests['outcome']}: {tests['passed']} passed, {tests['failed']} failed, {tests['errors']} errored, "
             f"{tests['skipped']} skipped" if tests.get("passed") is not None
             else (tests.get("outcome") or ("none run" if idle else "not run yet")))
    lines.append(f"  tests    {tests['written']} written; {shown}")
    if tests.get("coverage"):
        lines.append(f"  coverage {tests['coverage']}")
    return lines


def _value(generation: Mapping[str, Any] | None) -> list[str]:
    """What the kept tests are worth, before anything else: the mutation score, the mutants the kept
    tests kill and those that survive, then the funnel, coverage, findings."""
    if not generation:
        return []
    lines = [f"  {'mutation' if number == 0 else '':<8} {truncate(line, BOX_WIDTH)}"
             for number, line in enumerate(generation.get("mutation") or [])]
    if generation.get("mutation"):
        lines.append(f"           {generation['mutants_killed']} mutants killed by the kept tests, "
                     f"{generation['mutation_score_gained']:+.1f} points of mutation score")
    lines += [f"  {'kills' if number == 0 else '':<8} {truncate(line, BOX_WIDTH)}"
              for number, line in enumerate(generation.get("killed") or [])]
    survivors = generation.get("survivors") or []
    lines += [f"  {'survives' if number == 0 else '':<8} {truncate(line, BOX_WIDTH)}"
              for number, line in enumerate(survivors)]
    if generation.get("survivors_total", 0) > len(survivors):
        lines.append(f"           … and {generation['survivors_total'] - len(survivors)} more "
                     "(`agentledger artifact RUN generation.json`)")
    lines.append(f"  kept     {generation['funnel']}")
    lines += [f"  covers   {line}" if number == 0 else f"           {line}"
              for number, line in enumerate(generation["coverage"] or ["no targeted module measured"])]
    if generation["coverage"]:
        gained = generation['coverage_gained']
        lines.append(f"           {gained:+.1f} points of line coverage over the targeted modules")
    failures = generation.get("writer_failures") or []
    lines += [f"  {'no test' if number == 0 else '':<8} {truncate(line, BOX_WIDTH)}"
              for number, line in enumerate(failures)]
    findings = generation["findings"]
    if findings:
        lines.append(f"  findings {generation['findings_total']} for the reviewer to judge:")
        lines += [f"           {truncate(line, BOX_WIDTH)}" for line in findings]
        if generation["findings_total"] > len(findings):
            lines.append(f"           … and {generation['findings_total'] - len(findings)} more "
                         "(`agentledger artifact RUN generation.json`)")
    return lines


def diff_stat(diff: str) -> list[tuple[str, int, int]]:
    """(file, lines added, lines removed) for each file of a unified diff."""
    stats: dict[str, list[int]] = {}
    current = None
    for line in diff.splitlines():
        if line.startswith("+++ "):
            current = line[4:].removeprefix("b/")
            stats.setdefault(current, [0, 0])
        elif current and line.startswith("+") and not line.startswith("+++"):
            stats[current][0] += 1
        elif current and line.startswith("-") and not line.startswith("---"):
            stats[current][1] += 1
    return [(path, added, removed) for path, (added, removed) in stats.items()]


def review_brief(document: Mapping[str, Any], diff: str) -> str:
    """What a reviewer approves: the plan, the change, the test results and the evidence that holds."""
    run, review = document["run"], document.get("review") or {}
    stat = diff_stat(diff)
    statuses = document.get("evidence_status") or {}
    unchanged = review.get("unchanged_after")
    sections = [
        [f"Review of {run['run_id']}: plan {review.get('plan_digest') or run.get('plan_digest')}",
         f"  requested by {run.get('requested_by') or 'unknown'}"],
        [] if not unchanged else [
            "Unchanged plan",
            f"  {unchanged.get('decided_by') or 'a reviewer'} asked for changes to this very plan"
            + (f": {truncate(unchanged['comment'], BOX_WIDTH)}" if unchanged.get("comment") else ""),
            "  the planner made it again; approve it, or request changes with a comment it can act on"],
        summary(document.get("summary")),
        ["Change", *[f"  {path}  +{added} -{removed}" for path, added, removed in stat],
         f"  {len(stat)} file(s), +{sum(a for _, a, _ in stat)} -{sum(r for _, _, r in stat)}"],
        _tests(document.get("test_runs") or {}),
        ["Evidence", *[f"  {EVIDENCE_GLYPHS.get(s['status'], '?')} {name:<13} {s['status']:<8} {s['reason']}"
                       for name, s in statuses.items()]],
        _diff_excerpt(diff),
    ]
    return "\n\n".join("\n".join(section) for section in sections if section)


def _diff_excerpt(diff: str) -> list[str]:
    lines = diff.splitlines()
    if not lines:
        return []
    shown = lines[:REVIEW_DIFF_LINES]
    more = [f"… {len(lines) - len(shown)} more line(s): `agentledger diff RUN`"] if len(lines) > len(shown) else []
    return ["Diff", *shown, *more]


def _section(title: str, lines: list[str]) -> list[str]:
    return [title, *(lines or ["  none"])]


def _handoff(handoff: Mapping[str, Any] | None) -> list[str]:
    if not handoff:
        return []
    details = handoff.get("details") or {}
    attempted = details.get("attempted") or {}
    response = details.get("response") or {}
    partial = details.get("partial_effect") or {}
    external = _listed(partial.get("external_effects"))
    fields = [
        ("what", handoff["summary"]),
        ("attempted", f"{attempted.get('operation', '?')}, attempt {attempted.get('attempt', '?')}, "
                      f"execution {attempted.get('execution', '?')}, started {when(attempted.get('started_at'))}"),
        ("response", f"{response.get('error', '?')}: {response.get('message', '')}"),
        ("partial effect", f"complete stages: {', '.join(partial.get('complete_stages') or []) or 'none'}; "
                           f"uncommitted artifacts: {', '.join(partial.get('uncommitted_artifacts') or []) or 'none'}; "
                           f"external effects: {'; '.join(_effect_line(e) for e in external) or 'none'}"),
        ("recovery", str(details.get("recovery", "?"))),
        ("handed off", when(details.get("handoff_at") or handoff.get("at"))),
    ]
    return box("NEEDS A PERSON", fields)


def _header(document: Mapping[str, Any]) -> list[str]:
    run = document["run"]
    review = document.get("review") or {}
    if review:
        review_line = (f"{review['decision']} at {when(review.get('decided_at'))}"
                       f" by {review.get('decided_by') or 'unknown'}" if review.get("decision")
                       else f"pending since {when(review.get('requested_at'))}")
    else:
        review_line = "not requested"
    fields = [
        ("run", run["run_id"]),
        ("status", f"{run['status']} (state {run['state']}, ledger version {run['version']})"),
        ("repository", run["repository"]),
        ("revision", run.get("revision") or "-"),
        ("request", run["request"]),
        ("requested by", run.get("requested_by") or "unknown (before identities were recorded)"),
        ("environment", run["environment"]),
        ("executions", ", ".join(run.get("executions") or []) or "-"),
        ("plan digest", run.get("plan_digest") or "-"),
        ("review", review_line),
        ("created", f"{when(run.get('created_at'))}, updated {when(run.get('updated_at'))}"),
    ]
    width = max(len(label) for label, _ in fields)
    return [f"{label.ljust(width)}  {value}" for label, value in fields]


def _stages(stages: Mapping[str, Mapping[str, Any]], nothing_to_do: bool = False,
            progress: Mapping[str, Any] | None = None) -> list[str]:
    rows = []
    for name in STAGE_ORDER:
        record = stages.get(name)
        if record is None:
            rows.append(("·", name, "not needed" if nothing_to_do else "not started", "", "", "", ""))
            continue
        rows.append((STAGE_GLYPHS.get(record["status"], "?"), name, record["status"], str(record.get("attempt", 0)),
                     when(record.get("started_at")), when(record.get("finished_at")),
                     duration(record.get("started_at"), record.get("finished_at"))))
    header, *stage_lines = table(("", "STAGE", "STATUS", "ATTEMPT", "STARTED", "FINISHED", "DURATION"), rows,
                                 indent="  ")
    lines = ["Stages", header]
    for name, line in zip(STAGE_ORDER, stage_lines, strict=True):
        lines.append(line)
        error = (stages.get(name) or {}).get("error")
        if error:
            lines.append(f"      error: {truncate(error, BOX_WIDTH)}")
        if name == "execute" and progress:
            lines.append(f"      now: {build_progress_line(progress).removeprefix('execute: ')}")
    return lines


def test_counts(counts: Mapping[str, Any] | None) -> str:
    if not counts:
        return "no JUnit XML, so no counts"
    noun = "test" if counts["tests"] == 1 else "tests"
    return (f"{counts['tests']} {noun}: {counts['passed']} passed, {counts['failed']} failed, "
            f"{counts['errors']} errored, {counts['skipped']} skipped")


def _tests(test_runs: Mapping[str, Mapping[str, Any]]) -> list[str]:
    """The newest test build first: what it showed, in counts a person can read."""
    if not test_runs:
        return []
    lines = ["Tests"]
    for run in sorted(test_runs.values(), key=lambda r: r.get("created_at") or "", reverse=True):
        report = run.get("report") or {}
        build = f"build {run.get('build_id') or '(starting)'} {run.get('status', '?')}"
        purpose = "writes tests" if run.get("stage") == "execute" else "runs the suite"
        lines.append(f"  {report.get('outcome', 'running'):<14} {build} ({purpose}), inputs {run['digest'][:12]}")
        if run.get("stage") == "execute":
            if report.get("reason"):
                lines.append(f"    {report['reason']}")
            continue
        if report:
            lines.append(f"    {report.get('reason', '')}")
            counts = report.get("counts")
            lines.append(f"    {test_counts(counts)}")
            lines += _groups((counts or {}).get("by_package") or {})
            for name in (counts or {}).get("failing", [])[:10]:
                lines.append(f"    ✗ {name}")
    return lines


GROUPS_SHOWN = 20


def _groups(by_group: Mapping[str, Mapping[str, int]]) -> list[str]:
    """Counts per package (Python) or per module and class (Maven), those with failures first; one
    group alone says nothing the total does not."""
    if len(by_group) < 2:
        return []

    def failures(item: tuple[str, Mapping[str, int]]) -> tuple[int, str]:
        return (-(item[1].get("failed", 0) + item[1].get("errors", 0)), item[0])

    ordered = sorted(by_group.items(), key=failures)
    lines = [f"      {truncate(name, 60):<60} "
             + ", ".join(f"{count} {outcome}" for outcome, count in sorted(counts.items()))
             for name, counts in ordered[:GROUPS_SHOWN]]
    if len(ordered) > GROUPS_SHOWN:
        lines.append(f"      … and {len(ordered) - GROUPS_SHOWN} more (`agentledger artifact RUN test-results.json`)")
    return lines


def _evidence(recorded: Mapping[str, Any], statuses: Mapping[str, Mapping[str, Any]]) -> list[str]:
    names = [*statuses, *(name for name in recorded if name not in statuses)]
    rows = []
    for name in names:
        status = statuses.get(name) or {"status": "unknown", "reason": "not assessed"}
        fingerprint = (recorded.get(name) or {}).get("fingerprint", "-")
        rows.append((EVIDENCE_GLYPHS.get(status["status"], "?"), name, status["status"], fingerprint[:19],
                     status["reason"]))
    if not rows:
        return _section("Evidence (current validity)", [])
    return ["Evidence (current validity)",
            *table(("", "NAME", "STATUS", "FINGERPRINT", "REASON"), rows, indent="  ")]


def _transitions(transitions: Sequence[Mapping[str, Any]]) -> list[str]:
    rows = [(f"v{t['version']}", when(t.get("at")), f"{t['from_state']} → {t['to_state']}", t["reason"])
            for t in transitions]
    return ["Transitions", *table(("VERSION", "AT", "FROM → TO", "REASON"), rows, indent="  ")] if rows \
        else _section("Transitions", [])


def _artifacts(artifacts: Sequence[Mapping[str, Any]], location: str | None) -> list[str]:
    title = f"Artifacts ({location})" if location else "Artifacts"
    if not artifacts:
        return _section(title, [])
    rows = [(a["stage"], a["name"], size(a["size"]), a["sha256"][:12],
             "committed" if a.get("committed") else "uncommitted") for a in artifacts]
    return [title, *table(("STAGE", "NAME", "SIZE", "SHA256", "LEDGER"), rows, indent="  ")]
