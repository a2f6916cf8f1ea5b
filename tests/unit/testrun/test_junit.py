"""Counts read from the JUnit XML real runners write, and the documents that are not counted."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from agentledger.testrun.junit import MAX_DOCUMENT_BYTES, TestCounts, summarize_junit

# A suite with one case of each outcome, run by a subprocess pytest to get a real JUnit report.
# Kept as data: its skipped case belongs to that report, not to this project's suite.
TINY_SUITE = (Path(__file__).parent / "data" / "tiny_suite.txt").read_text()

SUREFIRE = b'''<?xml version="1.0" encoding="UTF-8"?>
<testsuite name="com.example.CalcTest" tests="4" failures="1" errors="1" skipped="1">
  <properties><property name="java.version" value="21"/></properties>
  <testcase name="adds" classname="com.example.CalcTest" time="0.01"/>
  <testcase name="divides" classname="com.example.CalcTest" time="0.01">
    <failure message="expected 2" type="org.opentest4j.AssertionFailedError">trace</failure>
  </testcase>
  <testcase name="reads" classname="com.example.CalcTest" time="0.01">
    <error message="boom" type="java.io.IOException">trace</error>
  </testcase>
  <testcase name="later" classname="com.example.CalcTest" time="0"><skipped/></testcase>
</testsuite>
'''

NODE = b'''<?xml version="1.0" encoding="utf-8"?>
<testsuites>
  <testsuite name="math" tests="2" failures="1" skipped="0" errors="0">
    <testcase name="adds" time="0.001" classname="test"/>
    <testsuite name="nested">
      <testcase name="subtracts" time="0.001" classname="test">
        <failure type="testCodeFailure" message="2 !== 3">trace</failure>
      </testcase>
    </testsuite>
  </testsuite>
  <testcase name="top level" time="0.001" classname="test">
    <skipped type="skipped" message="# SKIP"/>
  </testcase>
</testsuites>
'''

BILLION_LAUGHS = b'''<?xml version="1.0"?>
<!DOCTYPE lolz [
  <!ENTITY lol "lol">
  <!ENTITY lol2 "&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;">
  <!ENTITY lol3 "&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;">
]>
<testsuite><testcase name="&lol3;"/></testsuite>
'''


def pytest_junit(tmp_path: Path) -> bytes:
    (tmp_path / "test_tiny.py").write_text(TINY_SUITE)
    report = tmp_path / "pytest.xml"
    # -c os.devnull: this repository's pytest configuration must not reach the tiny suite.
    subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-c", os.devnull,
                    f"--rootdir={tmp_path}", f"--junitxml={report}", "test_tiny.py"],
                   cwd=tmp_path, capture_output=True, check=False, timeout=120)
    return report.read_bytes()


def test_a_real_pytest_report_counts_each_outcome(tmp_path: Path) -> None:
    assert summarize_junit({"pytest.xml": pytest_junit(tmp_path)}) == TestCounts(
        tests=4, passed=1, failed=1, errors=1, skipped=1,
        failing=["test_tiny.test_fails", "test_tiny.test_errors"],
        files=["pytest.xml"], unreadable=[],
        by_package={"test_tiny": {"passed": 1, "failed": 1, "errors": 1, "skipped": 1}})


def test_outcomes_are_counted_per_top_level_package_so_the_written_tests_are_told_apart() -> None:
    report = b'''<testsuites><testsuite>
      <testcase classname="agentledger_tests.test_calc" name="test_add"/>
      <testcase classname="agentledger_tests.test_calc" name="test_div"><failure/></testcase>
      <testcase classname="tests.test_calc" name="test_sub"/>
      <testcase classname="" name="bare"><error/></testcase>
    </testsuite></testsuites>'''
    assert summarize_junit({"r.xml": report}).by_package == {
        "(none)": {"errors": 1}, "agentledger_tests": {"passed": 1, "failed": 1}, "tests": {"passed": 1}}


def test_a_surefire_report_counts_each_outcome() -> None:
    counts = summarize_junit({"TEST-com.example.CalcTest.xml": SUREFIRE})
    assert (counts.tests, counts.passed, counts.failed, counts.errors, counts.skipped) == (4, 1, 1, 1, 1)
    assert counts.failing == ["com.example.CalcTest.divides", "com.example.CalcTest.reads"]


def test_surefire_reports_are_counted_per_module_and_test_class_not_under_org() -> None:
    other = SUREFIRE.replace(b"com.example.CalcTest", b"com.example.io.ReaderTest")
    counts = summarize_junit({"core__target__surefire-reports__TEST-com.example.CalcTest.xml": SUREFIRE,
                              "io__target__surefire-reports__TEST-com.example.io.ReaderTest.xml": other,
                              "target__surefire-reports__TEST-com.example.CalcTest.xml": SUREFIRE,
                              "TEST-com.example.CalcTest.xml": SUREFIRE})

    assert set(counts.by_package) == {"core: CalcTest", "io: ReaderTest", ".: CalcTest"}
    assert counts.by_package["io: ReaderTest"] == {"passed": 1, "failed": 1, "errors": 1, "skipped": 1}
    assert counts.by_package[".: CalcTest"]["passed"] == 2  # the root's report and the bare one


def test_nested_node_suites_are_counted_once_each() -> None:
    counts = summarize_junit({"node.xml": NODE})
    assert (counts.tests, counts.passed, counts.failed, counts.errors, counts.skipped) == (3, 1, 1, 0, 1)
    assert counts.failing == ["test.subtracts"]


def test_documents_add_up_and_the_unreadable_are_named_not_counted() -> None:
    counts = summarize_junit({
        "node.xml": NODE,
        "laughs.xml": BILLION_LAUGHS,
        "broken.xml": b"<testsuite><testcase name='a'>",
        "html.xml": b"<html><testcase name='a'/></html>",
        "TEST-calc.xml": SUREFIRE,
    })
    assert (counts.tests, counts.passed, counts.failed, counts.errors, counts.skipped) == (7, 2, 2, 1, 2)
    assert counts.files == ["node.xml", "TEST-calc.xml"]
    assert counts.unreadable == ["laughs.xml", "broken.xml", "html.xml"]


def test_entity_declarations_are_refused() -> None:
    assert summarize_junit({"laughs.xml": BILLION_LAUGHS}) == TestCounts(
        tests=0, passed=0, failed=0, errors=0, skipped=0, failing=[], files=[], unreadable=["laughs.xml"])


def test_an_oversized_document_is_not_parsed() -> None:
    padding = b" " * (MAX_DOCUMENT_BYTES - len(SUREFIRE) + 1)
    counts = summarize_junit({"big.xml": SUREFIRE + padding})
    assert (counts.tests, counts.unreadable) == (0, ["big.xml"])


def test_failing_names_stop_at_one_hundred_but_counts_do_not() -> None:
    cases = "".join(f'<testcase name="t{i}"><failure/></testcase>' for i in range(150))
    counts = summarize_junit({"many.xml": f"<testsuites><testsuite>{cases}</testsuite></testsuites>".encode()})
    assert (counts.tests, counts.failed) == (150, 150)
    assert counts.failing == [f"t{i}" for i in range(100)]
