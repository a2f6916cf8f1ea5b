"""A pytest plugin that runs tests against mutmut's mutants (`-p agentledger_mutation`, with
AGENTLEDGER_MUTATION_PLAN naming the plan): the build has put each targeted module's mutants behind
mutmut's trampolines, and MUTANT_UNDER_TEST switches one on.

Instead of running the session's tests once, it:
1. runs them once in a child process with no mutant, recording which pass and which of the
   trampolined functions each runs (a trace of calls into the targeted files, nothing more);
2. for each mutant of the plan, forks a child with that mutant switched on and runs the tests
   that passed and ran its function (and that the plan allows for it): up to the first failure,
   or all of them when the plan wants to know every test that kills it. A child that outlives ten
   times its tests' time, plus a margin, is killed: the mutant timed out, which counts as killed.
   A mutant the plan wants judged by the suite first runs the suite's tests (those the plan does
   not name as candidates) up to the first failure, and its candidates only if none failed;
3. writes what happened (JSON) where the plan says.

The children are forked after collection, as mutmut's own runner does, so a mutant costs its
tests' time, not an interpreter's start. Standard library only, Python 3.9+."""
from __future__ import annotations

import json
import os
import select
import signal
import sys
import threading
import time
from pathlib import Path
from typing import Any

PLAN_VARIABLE = "AGENTLEDGER_MUTATION_PLAN"
TIMEOUT_FACTOR = 10
TIMEOUT_MARGIN_S = 2.0
PROGRESS_EVERY_S = 10.0


class Outcomes:
    """Each test's outcome as this process ran it: failed if any of its phases failed."""

    def __init__(self) -> None:
        self.failed: set[str] = set()

    def pytest_runtest_logreport(self, report: Any) -> None:
        if report.failed:
            self.failed.add(report.nodeid)


def pytest_configure(config: Any) -> None:
    if os.environ.get(PLAN_VARIABLE):
        config.pluginmanager.register(Outcomes(), "agentledger_mutation_outcomes")


def pytest_runtestloop(session: Any) -> bool | None:
    plan_path = os.environ.get(PLAN_VARIABLE)
    if not plan_path or session.config.option.collectonly:
        return None
    plan = json.loads(Path(plan_path).read_text(encoding="utf-8"))
    report = Mutation(session, plan).run()
    Path(plan["output"]).write_text(json.dumps(report), encoding="utf-8")
    return True


class Mutation:
    def __init__(self, session: Any, plan: dict[str, Any]) -> None:
        self.session = session
        self.plan = plan
        self.items = {item.nodeid: item for item in session.items}
        self.outcomes: Outcomes = session.config.pluginmanager.get_plugin("agentledger_mutation_outcomes")
        self.files = {os.path.realpath(path) for path in plan["files"]}
        reporter = session.config.pluginmanager.get_plugin("terminalreporter")
        self.say = reporter.write_line if reporter is not None else (lambda line: print(line, file=sys.__stderr__))

    def run(self) -> dict[str, Any]:
        run_ends = time.monotonic() + self.plan["run_budget_s"]
        baseline = self.baseline()
        results: dict[str, dict[str, Any]] = {}
        for group in self.plan["groups"]:
            started = time.monotonic()
            deadline = min(started + group["budget_s"], run_ends)
            last_said = started
            for number, mutant in enumerate(group["mutants"], 1):
                if time.monotonic() >= deadline:
                    results[mutant["id"]] = {"status": "not_checked", "killed_by": []}
                    continue
                results[mutant["id"]] = self.check(mutant, baseline, deadline)
                if time.monotonic() - last_said >= PROGRESS_EVERY_S:
                    last_said = time.monotonic()
                    self.say(f"mutation: {group['module']}: {number} of {len(group['mutants'])} mutants checked")
            statuses = [results[m["id"]]["status"] for m in group["mutants"]]
            self.say(f"mutation: {group['module']}: {len(statuses)} mutants, "
                     + ", ".join(f"{statuses.count(s)} {s}" for s in sorted(set(statuses)))
                     + f" ({time.monotonic() - started:.1f} s)")
        return {"baseline": baseline, "mutants": results}

    # -- the children ---------------------------------------------------------------------------
    def baseline(self) -> dict[str, Any]:
        """nodeid -> {passed, seconds, functions} of every collected test, with no mutant on."""
        entries, _ = self.in_child(self.traced_run, timeout_s=self.plan["baseline_timeout_s"], quiet=False)
        return {entry.pop("nodeid"): entry for entry in entries}

    def traced_run(self, write: Any) -> None:
        functions: set[str] = set()
        files = self.files

        def trace(frame: Any, event: str, arg: Any) -> None:
            code = frame.f_code
            if code.co_name.endswith("__mutmut_orig") and os.path.realpath(code.co_filename) in files:
                functions.add(code.co_name[:-len("__mutmut_orig")])

        items = list(self.items.values())
        for index, item in enumerate(items):
            functions.clear()
            started = time.monotonic()
            sys.settrace(trace)
            threading.settrace(trace)
            self.run_item(item, items[index + 1] if index + 1 < len(items) else None)
            sys.settrace(None)
            threading.settrace(None)
            write({"nodeid": item.nodeid, "passed": item.nodeid not in self.outcomes.failed,
                   "seconds": round(time.monotonic() - started, 4), "functions": sorted(functions)})

    def check(self, mutant: dict[str, Any], baseline: dict[str, Any], deadline: float) -> dict[str, Any]:
        relevant = [nodeid for nodeid, entry in baseline.items()
                    if entry["passed"] and mutant["function"] in entry["functions"]]
        allowed = mutant.get("tests")
        chosen = [nodeid for nodeid in relevant if allowed is None or nodeid in allowed]
        every = bool(mutant.get("every_killer"))
        if not mutant.get("suite_first"):
            return self.run_mutant(mutant, chosen, every, baseline, deadline)
        candidates = set(self.plan.get("candidates", []))
        suite = self.run_mutant(mutant, [nodeid for nodeid in relevant if nodeid not in candidates], False,
                                baseline, deadline)
        if suite["status"] in ("killed", "timeout") or not chosen:
            return {"status": suite["status"], "suite": suite["status"], "killed_by": []}
        return {**self.run_mutant(mutant, chosen, every, baseline, deadline), "suite": suite["status"]}

    def run_mutant(self, mutant: dict[str, Any], tests: list[str], every: bool, baseline: dict[str, Any],
                   deadline: float) -> dict[str, Any]:
        if not tests:
            return {"status": "no_tests", "killed_by": []}

        def run(write: Any) -> None:
            os.environ["MUTANT_UNDER_TEST"] = mutant["id"]
            items = [self.items[nodeid] for nodeid in tests]
            for index, item in enumerate(items):
                self.run_item(item, items[index + 1] if index + 1 < len(items) else None)
                failed = item.nodeid in self.outcomes.failed
                write({"nodeid": item.nodeid, "failed": failed})
                if failed and not every:
                    return

        allowed_s = sum(baseline[nodeid]["seconds"] for nodeid in tests) * TIMEOUT_FACTOR + TIMEOUT_MARGIN_S
        reported, timed_out = self.in_child(run, timeout_s=max(0.1, min(allowed_s, deadline - time.monotonic())))
        killed_by = [entry["nodeid"] for entry in reported if entry["failed"]]
        if timed_out:
            # The test that was running when the child was killed is the one the mutant hung.
            running = tests[len(reported)] if len(reported) < len(tests) else None
            return {"status": "timeout", "killed_by": killed_by + ([running] if running else [])}
        if len(reported) < len(tests) and not killed_by:
            return {"status": "killed", "killed_by": [tests[len(reported)]]}  # the child died in it
        return {"status": "killed" if killed_by else "survived", "killed_by": killed_by}

    def run_item(self, item: Any, nextitem: Any) -> None:
        item.config.hook.pytest_runtest_protocol(item=item, nextitem=nextitem)

    def in_child(self, work: Any, timeout_s: float, quiet: bool = True) -> tuple[list[dict[str, Any]], bool]:
        """`work(write)` in a forked child, whose lines `write` sends back; (the lines, whether it
        was killed for outliving `timeout_s`). The child ends with os._exit: no cleanup of the
        session's runs in it. A quiet child prints nowhere: a mutant's run is judged by its
        outcomes, not read; the run with no mutant prints as the suite prints."""
        read_end, write_end = os.pipe()
        pid = os.fork()
        if pid == 0:  # the child
            os.close(read_end)
            self.outcomes.failed.clear()
            if quiet:
                self.silence()
            with os.fdopen(write_end, "w", encoding="utf-8") as sink:
                def write(entry: dict[str, Any]) -> None:
                    sink.write(json.dumps(entry) + "\n")
                    sink.flush()
                try:
                    work(write)
                finally:
                    sink.flush()
                    os._exit(0)
        os.close(write_end)
        data, timed_out = b"", False
        ends = time.monotonic() + timeout_s
        while True:
            left = ends - time.monotonic()
            if left <= 0:
                timed_out = True
                os.kill(pid, signal.SIGKILL)
                break
            ready, _, _ = select.select([read_end], [], [], left)
            if ready:
                chunk = os.read(read_end, 1 << 16)
                if not chunk:
                    break
                data += chunk
        os.close(read_end)
        os.waitpid(pid, 0)
        entries = []
        for line in data.decode("utf-8", errors="replace").splitlines()[:len(self.items)]:
            try:
                entries.append(json.loads(line))
            except ValueError:
                break  # the line a killed child was writing
        return entries, timed_out

    def silence(self) -> None:
        self.session.config.pluginmanager.unregister(name="terminalreporter")
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, 1)
        os.dup2(devnull, 2)
