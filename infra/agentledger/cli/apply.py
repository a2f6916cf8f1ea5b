"""`agentledger apply`: write an approved change into a local working tree, refusing when the tree
is no longer the one the plan read. The files come from the run (generated, so untrusted): every
path must stay inside the tree, and nothing already there is overwritten with other content."""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from agentledger.fingerprints import sha256_file


class ApplyRefused(Exception):
    """The change was not applied; nothing was written."""


@dataclass
class Applied:
    written: list[str] = field(default_factory=list)
    already_there: list[str] = field(default_factory=list)


def apply_change(tree: Path, files: dict[str, str], files_read: dict[str, str]) -> Applied:
    """Write `files` (path -> content) under `tree` if every file the plan read (path -> sha256)
    is still as it was. All checks come before the first write."""
    root = tree.resolve()
    changed = sorted(path for path, sha in files_read.items() if _digest_of(_inside(root, path)) != sha)
    if changed:
        raise ApplyRefused(f"files the plan read have changed since: {', '.join(changed)}; "
                           "start a new run on the tree as it is now")
    applied = Applied()
    targets = {path: _inside(root, path) for path in sorted(files)}
    conflicts = []
    for path, target in targets.items():
        if not target.exists():
            continue
        if not target.is_file():
            conflicts.append(path)
        elif target.read_text(encoding="utf-8", errors="replace") == files[path]:
            applied.already_there.append(path)
        else:
            conflicts.append(path)
    if conflicts:
        raise ApplyRefused(f"these files exist with other content: {', '.join(conflicts)}; "
                           "move them aside or start a new run")
    for path, target in targets.items():
        if path in applied.already_there:
            continue
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(files[path], encoding="utf-8")
        applied.written.append(path)
    return applied


def _inside(root: Path, relative: str) -> Path:
    target = (root / relative).resolve()
    if not relative or Path(relative).is_absolute() or not target.is_relative_to(root) or target == root:
        raise ApplyRefused(f"the run names a path outside the working tree: {relative!r}")
    return target


def _digest_of(path: Path) -> str | None:
    return sha256_file(path) if path.is_file() else None
