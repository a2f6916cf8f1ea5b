"""Run by a generation build with the project's interpreter and coverage.py importable:

    python -m agentledger_coverage DATA_FILE RC_FILE OUT_FILE

reads one coverage run's data and writes what the build's filters need, as JSON:
- per measured file: its statements, the executed lines, every branch (arc between lines that
  leaves a line with two or more exits) and the executed ones;
- per test (coverage.py's dynamic context `test_function`): the lines and branches it ran.
Standard library and coverage.py only, Python 3.9+."""
from __future__ import annotations

import json
import os
import sys
from typing import Any

import coverage  # type: ignore[import-not-found, unused-ignore]


def main(data_file: str, rc_file: str, out_file: str) -> None:
    cov = coverage.Coverage(data_file=data_file, config_file=rc_file)
    cov.load()
    report_file = f"{out_file}.report.json"
    cov.json_report(outfile=report_file)
    with open(report_file, encoding="utf-8") as opened:
        report = json.load(opened)
    os.unlink(report_file)
    data = cov.get_data()
    files: dict[str, Any] = {}
    for path, entry in report.get("files", {}).items():
        absolute = os.path.abspath(path)
        branches = [tuple(arc) for arc in entry.get("executed_branches", []) + entry.get("missing_branches", [])]
        files[absolute] = {
            "statements": sorted(entry.get("executed_lines", []) + entry.get("missing_lines", [])),
            "executed": sorted(entry.get("executed_lines", [])),
            "branches": sorted(branches),
            "executed_branches": sorted(tuple(arc) for arc in entry.get("executed_branches", [])),
        }
    contexts: dict[str, Any] = {}
    for context in sorted(data.measured_contexts()):
        if not context:
            continue
        data.set_query_contexts([context])
        ran: dict[str, Any] = {}
        for measured in data.measured_files():
            known = files.get(os.path.abspath(measured))
            if known is None:
                continue
            branch_set = {tuple(arc) for arc in known["branches"]}
            lines = sorted(data.lines(measured) or [])
            arcs = sorted(arc for arc in (data.arcs(measured) or []) if arc in branch_set)
            if lines or arcs:
                ran[os.path.abspath(measured)] = {"lines": lines, "branches": arcs}
        contexts[context] = ran
    with open(out_file, "w", encoding="utf-8") as opened:
        json.dump({"files": files, "contexts": contexts}, opened)


if __name__ == "__main__":
    main(*sys.argv[1:4])
