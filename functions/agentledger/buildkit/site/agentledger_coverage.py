"""Run by a generation build with the project's interpreter and coverage.py importable:

    python -m agentledger_coverage OUT_FILE DATA_FILE RC_FILE [DATA_FILE RC_FILE ...]

reads each coverage run's data and writes, as a JSON list (one entry a run), what the build's
filters need:
- per measured file: its statements, the executed lines, every branch (arc between lines that
  leaves a line with two or more exits) and the executed ones;
- per test (coverage.py's dynamic context `test_function`), and for what ran outside any test
  (the context ""), the lines and branches it ran.
Standard library and coverage.py only, Python 3.9+."""
from __future__ import annotations

import json
import os
import re
import sys
from pathlib import Path
from typing import Any

import coverage  # type: ignore[import-not-found, unused-ignore]

OUTSIDE_ANY_TEST = "^$"  # the query that matches the empty context alone


def measured(data_file: str, rc_file: str) -> dict[str, Any]:
    cov = coverage.Coverage(data_file=data_file, config_file=rc_file)
    cov.load()
    report_file = f"{data_file}.report.json"
    try:
        cov.json_report(outfile=report_file)
    except coverage.exceptions.NoDataError:  # nothing ran and no source file was found: nothing covered
        return {"files": {}, "contexts": {}}
    report = json.loads(Path(report_file).read_text(encoding="utf-8"))
    Path(report_file).unlink()
    files: dict[str, Any] = {}
    for path, entry in report.get("files", {}).items():
        branches = [tuple(arc) for arc in entry.get("executed_branches", []) + entry.get("missing_branches", [])]
        files[os.path.abspath(path)] = {
            "statements": sorted(entry.get("executed_lines", []) + entry.get("missing_lines", [])),
            "executed": sorted(entry.get("executed_lines", [])),
            "branches": sorted(branches),
            "executed_branches": sorted(tuple(arc) for arc in entry.get("executed_branches", [])),
        }
    data = cov.get_data()
    contexts: dict[str, Any] = {}
    for context in sorted(data.measured_contexts()):
        # Queries are regular expressions searched for: anchored, or test_a would also match test_a_2.
        data.set_query_contexts([f"^{re.escape(context)}$" if context else OUTSIDE_ANY_TEST])
        ran: dict[str, Any] = {}
        for path in data.measured_files():
            known = files.get(os.path.abspath(path))
            if known is None:
                continue
            branch_set = {tuple(arc) for arc in known["branches"]}
            lines = sorted(data.lines(path) or [])
            arcs = sorted(arc for arc in (data.arcs(path) or []) if arc in branch_set)
            if lines or arcs:
                ran[os.path.abspath(path)] = {"lines": lines, "branches": arcs}
        contexts[context] = ran
    return {"files": files, "contexts": contexts}


def main(out_file: str, *runs: str) -> None:
    reports = [measured(runs[index], runs[index + 1]) for index in range(0, len(runs) - 1, 2)]
    Path(out_file).write_text(json.dumps(reports), encoding="utf-8")


if __name__ == "__main__":
    main(*sys.argv[1:])
