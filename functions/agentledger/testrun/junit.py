"""Counts read from the JUnit XML files a suite wrote (pytest, Surefire, Node's reporter...).

The files come out of the sandbox, so they are untrusted: defusedxml refuses entity tricks,
oversized files are not parsed, and a file that cannot be read is named rather than guessed at.
What is kept of them is bounded whatever they hold, since it is stored in a ledger item (at most
400 KB in DynamoDB): each name to MAX_NAME_CHARS, the failing cases named to MAX_FAILING_NAMES
(the rest counted), the packages to MAX_PACKAGES.
"""
from __future__ import annotations

from collections import Counter
from typing import TYPE_CHECKING

from defusedxml import DefusedXmlException
from defusedxml.ElementTree import ParseError, fromstring
from pydantic import BaseModel, ConfigDict

if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence
    from xml.etree.ElementTree import Element

MAX_DOCUMENT_BYTES = 16 << 20
MAX_FAILING_NAMES = 100
MAX_NAME_CHARS = 500  # a case's, a package's or a document's name as kept; a longer one is cut
MAX_PACKAGES = 100  # groups counted apart; the rest are counted together under "…"
SUREFIRE_REPORTS = "target/surefire-reports/"
JUNIT_ROOTS = frozenset({"testsuites", "testsuite"})
# The first child tag a case carries decides its outcome; a case with none passed.
OUTCOME_OF_CHILD = (("failure", "failed"), ("error", "errors"), ("skipped", "skipped"))


class TestCounts(BaseModel):
    model_config = ConfigDict(frozen=True)
    __test__ = False  # a model, not a test class, whatever its name says to pytest

    tests: int
    passed: int
    failed: int
    errors: int
    skipped: int
    failing: list[str]  # failed and errored cases, "classname.name", at most MAX_FAILING_NAMES
    failing_omitted: int = 0  # failed and errored cases past MAX_FAILING_NAMES: counted, not named
    # Outcome counts per group, so what the run added can be told from the suite it joined: for a
    # Python suite, the top-level package of the case's classname (`tests`); for Maven's Surefire,
    # the module and the test class (`core: OptionTest`; `.` for the reactor's root).
    by_package: dict[str, dict[str, int]] = {}
    files: list[str]  # documents read and counted
    unreadable: list[str]  # documents that were not well-formed JUnit XML, or too large to read


def summarize_junit(documents: Mapping[str, bytes], unread: Sequence[str] = ()) -> TestCounts:
    """`unread`: documents the caller did not read (past its limits), named among the unreadable."""
    outcomes: Counter[str] = Counter()
    by_package: dict[str, Counter[str]] = {}
    failing: list[str] = []
    files: list[str] = []
    unreadable: list[str] = []
    for name, data in documents.items():
        root = parse_bounded(data, JUNIT_ROOTS)
        if root is None:
            unreadable.append(bounded_name(name))
            continue
        files.append(bounded_name(name))
        for case in root.iter("testcase"):
            outcome = _outcome(case)
            outcomes[outcome] += 1
            package = bounded_name(_group(name, case.get("classname") or ""))
            if package not in by_package and len(by_package) >= MAX_PACKAGES:
                package = "…"
            by_package.setdefault(package, Counter())[outcome] += 1
            if outcome in ("failed", "errors") and len(failing) < MAX_FAILING_NAMES:
                failing.append(bounded_name(_case_name(case)))
    unreadable.extend(bounded_name(name) for name in unread)
    return TestCounts(tests=outcomes.total(), passed=outcomes["passed"], failed=outcomes["failed"],
                      errors=outcomes["errors"], skipped=outcomes["skipped"], failing=failing,
                      failing_omitted=outcomes["failed"] + outcomes["errors"] - len(failing),
                      files=files, unreadable=unreadable,
                      by_package={name: dict(counts) for name, counts in sorted(by_package.items())})


def _group(document: str, classname: str) -> str:
    """A Surefire report's module and class; another report's top-level package. The build copies
    reports flat, `core/target/surefire-reports/TEST-x.xml` as `core__target__surefire-reports__TEST-x.xml`."""
    path = document.replace("__", "/")
    if SUREFIRE_REPORTS in path or path.rpartition("/")[2].startswith("TEST-"):
        module = path.partition(SUREFIRE_REPORTS)[0].rstrip("/") if SUREFIRE_REPORTS in path else ""
        return f"{module or '.'}: {classname.rpartition('.')[2] or '(none)'}"
    return classname.partition(".")[0] or "(none)"


def bounded_name(name: str) -> str:
    return name if len(name) <= MAX_NAME_CHARS else name[:MAX_NAME_CHARS - 1] + "…"


def parse_bounded(data: bytes, roots: frozenset[str]) -> Element | None:
    """The document's root element, if it is small enough, well-formed and one of `roots`."""
    if len(data) > MAX_DOCUMENT_BYTES:
        return None
    try:
        root = fromstring(data)
    except (ParseError, DefusedXmlException):
        return None
    return root if root.tag in roots else None


def _outcome(case: Element) -> str:
    for tag, outcome in OUTCOME_OF_CHILD:
        if case.find(tag) is not None:
            return outcome
    return "passed"


def _case_name(case: Element) -> str:
    name = case.get("name", "")
    classname = case.get("classname")
    return f"{classname}.{name}" if classname else name
