"""What the build reports, assembled by the kit in a directory only it writes: the reports the
tests wrote (checked, copied), the output's tail, the kit's own record of what ran."""
from __future__ import annotations

import json
import shutil
from dataclasses import asdict
from pathlib import Path
from typing import TYPE_CHECKING

from .layout import OUTPUT_LIMIT_BYTES, RESULT_FILE
from .processes import Outcome, say
from .workspace import Workspace, contained_regular_file, glob_inside

if TYPE_CHECKING:
    from .install import InstallResult

MAX_REPORT_FILES = 200
MAX_REPORT_FILE_BYTES = 16 << 20


def collect_reports(workspace: Workspace, patterns: list[str], kind: str, directory: str) -> list[str]:
    """The XML reports the tests wrote where they were asked to, and those the globs match in the
    repository, copied into the results: regular files only (never a link the orchestrator might
    follow), each within the size bound, at most MAX_REPORT_FILES."""
    destination = workspace.results / directory
    destination.mkdir(parents=True, exist_ok=True)
    written = workspace.reports / directory
    sources = [path for path in sorted(written.rglob("*.xml")) if not path.is_symlink()] if written.is_dir() else []
    sources += [match for pattern in patterns for match in glob_inside(workspace.repository, pattern, kind)]
    kept: list[str] = []
    copied: set[Path] = set()
    for source in sources:
        within = written if source.is_relative_to(written) else workspace.repository
        resolved = contained_regular_file(within, source)
        if resolved is None or resolved in copied or resolved.stat().st_size > MAX_REPORT_FILE_BYTES:
            continue
        if len(kept) >= MAX_REPORT_FILES:
            say(f"more than {MAX_REPORT_FILES} {kind} files, keeping the first")
            break
        copied.add(resolved)
        kept.append(copy_flat(resolved, within.resolve(), destination))
    return sorted(kept)


def copy_flat(source: Path, within: Path, destination: Path) -> str:
    stem = source.relative_to(within).as_posix().replace("/", "__")
    name, number = stem, 1
    while (destination / name).exists():
        number += 1
        name = f"{Path(stem).stem}-{number}{Path(stem).suffix}"
    shutil.copyfile(source, destination / name)
    return name


def write_output_tail(log: Path, destination: Path, failure: str | None = None) -> None:
    omitted = max(0, log.stat().st_size - OUTPUT_LIMIT_BYTES) if log.is_file() else 0
    tail = b""
    if log.is_file():
        with log.open("rb") as raw:
            raw.seek(omitted)
            tail = raw.read()
    note = f"[agentledger: output truncated, first {omitted} bytes omitted]\n" if omitted else ""
    ending = f"agentledger: {failure}\n" if failure and failure.encode() not in tail else ""
    destination.write_text(note + tail.decode("utf-8", errors="replace") + ending, encoding="utf-8")


def write_result(results: Path, install: InstallResult, test: Outcome | None, command: str,
                 junit_files: list[str], coverage_files: list[str]) -> None:
    document = {
        "install": asdict(install),
        "test": None if test is None else {"command": command, **asdict(test)},
        "junit_files": junit_files,
        "coverage_files": coverage_files,
    }
    (results / RESULT_FILE).write_text(json.dumps(document, indent=2) + "\n", encoding="utf-8")


def make_private(directory: Path) -> None:
    """Root's alone: the output log and the kit's records are no one else's to read or write."""
    directory.mkdir(parents=True, exist_ok=True)
    directory.chmod(0o700)
