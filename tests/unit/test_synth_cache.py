"""The synthesized assemblies kept on this machine: one `serve` never removes an assembly another
may be deploying from (another context, other sources), only those nothing has used for a day."""
from __future__ import annotations

import os
import time
from typing import TYPE_CHECKING

from agentledger.local import synth

if TYPE_CHECKING:
    from pathlib import Path

    import pytest


def test_only_assemblies_unused_for_a_day_are_removed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(synth, "CACHE_ROOT", tmp_path)
    in_use, kept, forgotten = (tmp_path / name for name in ("other-context", "default", "last-month"))
    for assembly in (in_use, kept, forgotten):
        assembly.mkdir()
        (assembly / synth.STACK_TEMPLATE).write_text("{}")
    day_and_more = time.time() - synth.UNUSED_ASSEMBLY_SECONDS - 60
    for assembly in (kept, forgotten):
        os.utime(assembly, (day_and_more, day_and_more))
    synth._used(in_use)  # another serve's assembly: just used

    synth._remove_unused(keep={"default"})
    assert sorted(path.name for path in tmp_path.iterdir()) == ["default", "other-context"]
