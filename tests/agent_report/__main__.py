"""`make agent-report`: the reference agent on real code nobody here wrote. A fixed list of small
packages is downloaded as sdists, each goes through the whole workflow on the local stack (inspect
to complete, the reviewer approving), and a table shows what the agent found and wrote and how its
tests fared. The goal (every package with doctest examples gets a passing test, and no failure
comes from a generated test) is reported, never asserted."""
from __future__ import annotations

import json
import subprocess
import sys
import tarfile
import tempfile
import time
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from infra.local.principals import principal_arn
from infra.local.runtime import LocalRuntime

PACKAGES = ("toolz==0.12.1", "humanize==4.9.0", "iso8601==2.1.0", "more-itertools==10.2.0",
            "boltons==23.1.1", "sortedcontainers==2.4.0", "tabulate==0.9.0", "python-slugify==8.0.4")
SETTLED = frozenset({"awaiting_review", "complete", "needs_person"})
RUN_TIMEOUT_S = 600
GENERATED = "agentledger_tests"


@dataclass
class Row:
    package: str
    documented: int = 0  # objects with doctest examples
    candidates: int = 0  # of those, the ones no existing test imports or calls
    written: int = 0
    passed: int | None = None
    failed: int | None = None
    outcome: str = ""
    seconds: float = 0.0
    failing: tuple[str, ...] = ()  # the failing tests of the suite, generated or not (the first few)
    output_tail: str = ""  # the end of the test output, when the suite failed without naming a test


class Report:
    def __init__(self, runtime: LocalRuntime) -> None:
        self.runtime = runtime
        self.s3 = runtime.client("s3")
        self.bucket = runtime.output("ArtifactBucketName")

    def view(self, run_id: str) -> dict[str, Any]:
        return self.runtime.call_api("GET", f"/runs/{run_id}", caller=principal_arn("operator")).json()

    def artifact_bytes(self, view: dict[str, Any], name: str) -> bytes | None:
        found = [a for a in view["artifacts"] if a["name"] == name and a.get("committed")]
        if not found:
            return None
        return self.s3.get_object(Bucket=self.bucket, Key=found[-1]["key"])["Body"].read()

    def artifact(self, view: dict[str, Any], name: str) -> Any:
        data = self.artifact_bytes(view, name)
        return None if data is None else json.loads(data)

    def settle(self, run_id: str, deadline: float, done: frozenset[str] = SETTLED) -> dict[str, Any]:
        while True:
            view = self.view(run_id)
            review = view.get("review") or {}
            status = view["run"]["status"]
            if status in done and (status != "awaiting_review" or review.get("decision") is None):
                return view
            if time.monotonic() > deadline:
                return view
            time.sleep(0.5)

    def measure(self, package: str, repository: Path) -> Row:
        row = Row(package)
        started = time.monotonic()
        deadline = started + RUN_TIMEOUT_S
        created = self.runtime.call_api("POST", "/runs", body={"repository": str(repository),
                                                               "request": "Write tests for what lacks them"},
                                        headers={"Idempotency-Key": str(uuid.uuid4())},
                                        caller=principal_arn("requester")).json()
        view = self.settle(created["run_id"], deadline)
        if view["run"]["status"] == "awaiting_review":
            self.runtime.call_api("POST", f"/runs/{created['run_id']}/review", caller=principal_arn("reviewer"),
                                  body={"decision": "approve", "plan_digest": view["review"]["plan_digest"]})
            view = self.settle(created["run_id"], deadline, frozenset({"complete", "needs_person"}))
        row.seconds = time.monotonic() - started
        inventory = self.artifact(view, "inventory.json") or {"modules": []}
        documented = [obj for module in inventory["modules"] for obj in module["objects"] if obj["examples"]]
        row.documented = len(documented)
        row.candidates = sum(1 for obj in documented if not obj["tested"])
        plan = self.artifact(view, "plan.json") or {"items": []}
        row.written = len(plan["items"])
        row.outcome = view["run"].get("outcome") or view["run"]["status"]
        if view["run"]["status"] == "needs_person":
            row.outcome = f"needs_person: {(view.get('handoff') or {}).get('summary', '?')}"
        results = self.artifact(view, "test-results.json")
        if results:
            row.failing = tuple(results.get("failing", [])[:5])
            ours = (results.get("by_package") or {}).get(GENERATED)
            if ours:
                row.passed = ours.get("passed", 0)
                row.failed = ours.get("failed", 0) + ours.get("errors", 0)
        if view["run"]["status"] == "needs_person" and not row.failing:
            output = self.artifact_bytes(view, "test-output.txt") or b""
            row.output_tail = "\n".join(output.decode(errors="replace").splitlines()[-12:])
        return row


def download(package: str, into: Path) -> Path:
    """The package's sdist, extracted; its top directory is the repository."""
    subprocess.run([sys.executable, "-m", "pip", "download", "--quiet", "--no-binary", ":all:", "--no-deps",
                    "--dest", str(into), package], check=True, capture_output=True, text=True, timeout=300)
    (archive,) = into.glob("*.tar.gz")
    with tarfile.open(archive) as sdist:
        sdist.extractall(into, filter="data")
    (top,) = [path for path in into.iterdir() if path.is_dir()]
    return top


def table(rows: list[Row]) -> str:
    header = ("PACKAGE", "DOCUMENTED", "UNTESTED", "WRITTEN", "PASSED", "FAILED", "TIME (s)", "OUTCOME")
    cells = [header] + [(r.package, str(r.documented), str(r.candidates), str(r.written),
                         "-" if r.passed is None else str(r.passed),
                         "-" if r.failed is None else str(r.failed), f"{r.seconds:.1f}", r.outcome[:70])
                        for r in rows]
    widths = [max(len(row[i]) for row in cells) for i in range(len(header))]
    return "\n".join("  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=True)) for row in cells)


def goal(rows: list[Row]) -> str:
    """The goal over the packages with examples on objects no test covers yet: a package whose
    documented objects are all tested already has nothing for the agent to add."""
    with_examples = [r for r in rows if r.candidates]
    reached = [r for r in with_examples if r.passed]
    generated_failures = sum(r.failed or 0 for r in rows)
    missed = ", ".join(r.package for r in with_examples if not r.passed) or "none"
    return (f"goal: {len(reached)} of {len(with_examples)} packages with doctest examples on untested objects got "
            f"at least one passing test (missed: {missed}); failing generated tests: {generated_failures}")


def main() -> int:
    packages = tuple(sys.argv[1:]) or PACKAGES  # `python -m tests.agent_report NAME==VERSION ...` for a few
    with tempfile.TemporaryDirectory(prefix="agentledger-agent-report-") as tmp:
        root = Path(tmp)
        print(f"agentledger agent-report: {len(packages)} packages, the local stack starting...", flush=True)
        runtime = LocalRuntime(workspace_root=root / "workspaces").start()
        rows = []
        try:
            report = Report(runtime)
            for number, package in enumerate(packages, start=1):
                print(f"[{number}/{len(packages)}] {package}: downloading, then the whole workflow...", flush=True)
                try:
                    repository = download(package, root / package.partition("==")[0])
                except (subprocess.SubprocessError, ValueError, tarfile.TarError) as error:
                    rows.append(Row(package, outcome=f"not downloaded: {error}"))
                    continue
                rows.append(report.measure(package, repository))
                print(f"  {rows[-1].outcome} in {rows[-1].seconds:.1f}s", flush=True)
        finally:
            runtime.stop()
    print()
    print(table(rows))
    print(goal(rows))
    for row in rows:
        if row.failing:
            print(f"{row.package}: failing tests include {', '.join(row.failing)}")
        if row.output_tail:
            print(f"{row.package}: the test output ends\n{row.output_tail}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
