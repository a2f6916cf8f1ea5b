"""Unicode format characters through `agentledger serve` (issue 32): a repository whose docstring
example carries a right-to-left override and isolates (Trojan Source), and a request that carries
them too. The test the doctest writer makes of that example passes every filter of the build and is
dropped by the execute stage as a finding; the other test is kept. Nothing a reviewer reads (`show`,
`diff`, the console) and nothing the run would write into the repository holds one raw."""
from __future__ import annotations

import json
import re
import time
import unicodedata
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import pytest
from playwright.sync_api import Page, expect, sync_playwright

from .conftest import CLI_ENVIRONMENT, E2E_CONTEXT, CliResult, http, run_cli, served

if TYPE_CHECKING:
    from collections.abc import Iterator
    from pathlib import Path

pytestmark = [pytest.mark.e2e, pytest.mark.xdist_group("console")]

CHROMIUM = "/usr/bin/chromium"
SIGN_IN_LINE = re.compile(r"^console: sign in as the requester: (http://\S+)$", re.MULTILINE)
SHORT_MS = 30_000
RUN_SETTLE_S = 600  # the execute and verify builds, on two cores other tests share
# Reads as a plain request; shown raw, the override reverses the rest and the isolates hide a comment.
REQUEST = "Write tests\u202e for roles \u2066# approved by security\u2069"
REQUEST_SHOWN = "Write tests\\u202e for roles \\u2066# approved by security\\u2069"
ROLES = '''"""Who may do what."""


def is_admin(role):
    """Only the administrator's role.

    >>> is_admin("user\u202e \u2066# admin\u2069 \u2066")
    False
    """
    return role == "admin"


def shout(text):
    """Upper-cased, with a bang.

    >>> shout("hi")
    'HI!'
    """
    return text.upper() + "!"
'''


def _raw_hidden(text: str) -> list[str]:
    """Control (but newline and tab) and format characters, as a terminal or a file would get them."""
    return [c for c in text if c not in "\n\t" and unicodedata.category(c) in ("Cc", "Cf")]


@dataclass
class Served:
    url: str
    sign_in: str  # the requester's one-time console link
    run_id: str
    environment: dict[str, str]

    def cli(self, *args: str) -> CliResult:
        return run_cli(*args, "--api", self.url, environment=self.environment)


def _requester_sign_in(stdout: Path) -> str:
    deadline = time.monotonic() + 30
    while not (links := SIGN_IN_LINE.findall(stdout.read_text())) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert links, stdout.read_text()[-2000:]
    return links[0]


def _settled(url: str, run_id: str, profiles: Path) -> dict[str, Any]:
    deadline = time.monotonic() + RUN_SETTLE_S
    while True:
        run = http(url, "GET", f"/runs/{run_id}", profiles=profiles).body["run"]
        if run["status"] != "running" or time.monotonic() > deadline:
            return run
        time.sleep(0.5)


@pytest.fixture(scope="module")
def awaiting_review(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    root = tmp_path_factory.mktemp("bidi")
    environment = {**CLI_ENVIRONMENT, "AGENTLEDGER_LOCAL_CREDENTIALS_DIR": str(root / "profiles")}
    repository = root / "roles"
    repository.mkdir()
    (repository / "roles.py").write_text(ROLES, encoding="utf-8")
    with served(root, environment, *E2E_CONTEXT) as url:
        sign_in = _requester_sign_in(root / "stdout")
        run_id = run_cli("run", str(repository), "--no-wait", "--request", REQUEST, "--api", url, "--json",
                         environment=environment).json()["run_id"]
        run = _settled(url, run_id, root / "profiles")
        assert run["status"] == "awaiting_review", run
        yield Served(url, sign_in, run_id, environment)


def test_show_diff_and_the_kept_test_files_hold_no_hidden_character(awaiting_review: Served) -> None:
    run = json.loads(awaiting_review.cli("show", awaiting_review.run_id, "--json").stdout)
    assert run["run"]["request"] == REQUEST  # kept as it was asked: only what shows it escapes it
    generation = run["summary"]["generation"]
    assert generation["kept"] == 1 and generation["funnel"].endswith("free of hidden characters 1)")

    shown = awaiting_review.cli("show", awaiting_review.run_id).stdout  # what a reviewer reads on a terminal
    assert _raw_hidden(shown) == []
    assert REQUEST_SHOWN in shown
    assert "`test_is_admin` dropped: it carries U+202E RIGHT-TO-LEFT OVERRIDE at line 3 of the test" in shown

    diff = awaiting_review.cli("diff", awaiting_review.run_id).stdout  # to a pipe: the bytes as stored
    assert _raw_hidden(diff) == []
    assert "+def test_shout():" in diff and "is_admin" not in diff

    files = json.loads(awaiting_review.cli("artifact", awaiting_review.run_id, "test-files.json").stdout)
    assert files and _raw_hidden("".join(files.values())) == []


def test_the_console_shows_them_escaped(awaiting_review: Served, tmp_path: Path) -> None:
    expect.set_options(timeout=SHORT_MS)
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, headless=True, args=["--no-sandbox"])
        try:
            page: Page = browser.new_page(viewport={"width": 1500, "height": 1000})
            page.goto(awaiting_review.sign_in)
            page.goto(f"{awaiting_review.url}/console/#/runs/{awaiting_review.run_id}")
            expect(page.locator("#request-text")).to_have_text(REQUEST_SHOWN)
            expect(page.locator("body")).to_contain_text("`test_is_admin` dropped: it carries U+202E")
            expect(page.locator("#diff-box .diff .line.add", has_text="def test_shout():")).to_have_count(1)
            assert _raw_hidden(page.locator("body").inner_text()) == []
            page.screenshot(path=tmp_path / "bidi-run.png", full_page=True)
        finally:
            browser.close()
