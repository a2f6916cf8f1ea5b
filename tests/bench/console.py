"""(g) The console's run page of the largest run (d) ran, rendered in a real browser.

The local API server is started on this bench's stack, an operator signs in through a console
link, and Debian's chromium (Playwright, headless) opens the run page a few times. Each figure
is the time from asking for the page to the page marking itself rendered (`data-rendered="run"`
on its body, set once the run, its history and the state machine are drawn: the reviewer's
section, the graph, the timeline and the artifact list). The first load is apart: it also
fetches the script and style sheet. The median of the others is judged."""
from __future__ import annotations

import statistics
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING

from playwright.sync_api import sync_playwright

from agentledger.local.server import LocalApiServer

from .report import Table, Target

if TYPE_CHECKING:
    from agentledger.local.runtime import LocalRuntime

CHROMIUM = "/usr/bin/chromium"  # Debian's (make browser-tools); Playwright's own is never downloaded
RENDERED = 'body[data-rendered="run"]'
LOAD_TIMEOUT_MS = 120_000


@dataclass(frozen=True)
class Measured:
    files: int
    first_s: float
    seconds: list[float]  # the loads after the first

    @property
    def median_s(self) -> float:
        return statistics.median(self.seconds)


def goal(files: int, target_s: float) -> str:
    return f"run page of {files:,} files <= {target_s:g} s"


def measure(runtime: LocalRuntime, run_id: str, files: int, repeats: int) -> Measured:
    server = LocalApiServer(runtime, port=0, keeper_interval_s=0).start()
    try:
        link = server.console.sign_in_links(server.url)["operator"]
        with sync_playwright() as playwright:
            browser = playwright.chromium.launch(executable_path=CHROMIUM, headless=True, args=["--no-sandbox"])
            try:
                page = browser.new_page()
                page.goto(link)
                loads = []
                for _ in range(repeats + 1):
                    page.goto("about:blank")
                    started = time.perf_counter()
                    page.goto(f"{server.url}/console/#/runs/{run_id}")
                    page.wait_for_selector(RENDERED, timeout=LOAD_TIMEOUT_MS, state="attached")
                    loads.append(time.perf_counter() - started)
            finally:
                browser.close()
    finally:
        server.stop()
    return Measured(files, loads[0], loads[1:])


def table(measured: Measured, target_s: float, largest: int) -> Table:
    result = Table("(g) The console's run page in chromium (from asking for it to drawn)",
                   ["files", "first load (s)", "later loads, median (s)", "later loads"])
    result.add(f"{measured.files:,}", measured.first_s, measured.median_s,
               ", ".join(f"{seconds:.3f}" for seconds in measured.seconds))
    result.target(f"{measured.median_s:.3f} s" + ("" if measured.files == largest else f" at {measured.files:,}"),
                  Target(goal(largest, target_s), measured.median_s <= target_s if measured.files == largest else None))
    result.notes.append("the page fetches the run's ledger view, its execution histories and the state machine "
                        "through the console's session, as a person's browser does")
    return result
