"""Coverage read from JaCoCo XML reports, and the documents that are not counted."""
from __future__ import annotations

from agentledger.testrun.jacoco import MAX_REPORT_NAMES, summarize_jacoco
from agentledger.testrun.junit import MAX_DOCUMENT_BYTES

# The shape JaCoCo's report task writes: counters per method, class, source file and package,
# and the report's own totals as the report element's last children.
REPORT = b'''<?xml version="1.0" encoding="UTF-8" standalone="yes"?>
<!DOCTYPE report PUBLIC "-//JACOCO//DTD Report 1.1//EN" "report.dtd">
<report name="shapes"><sessioninfo id="host-1" start="1" dump="2"/>
<package name="demo"><class name="demo/Shapes" sourcefilename="Shapes.java">
<method name="sign" desc="(D)Ljava/lang/String;" line="6"><counter type="LINE" missed="2" covered="2"/></method>
<counter type="LINE" missed="4" covered="4"/><counter type="BRANCH" missed="5" covered="3"/></class>
<counter type="LINE" missed="4" covered="4"/><counter type="BRANCH" missed="5" covered="3"/></package>
<counter type="INSTRUCTION" missed="13" covered="18"/><counter type="BRANCH" missed="5" covered="3"/>
<counter type="LINE" missed="4" covered="4"/><counter type="METHOD" missed="0" covered="2"/></report>
'''
MODULE = b'''<report name="api"><counter type="LINE" missed="10" covered="30"/>
<counter type="BRANCH" missed="0" covered="4"/></report>'''


def test_the_report_totals_are_counted_not_every_level_again() -> None:
    counts = summarize_jacoco({"jacoco.xml": REPORT})
    assert (counts.lines_covered, counts.lines, counts.branches_covered, counts.branches) == (4, 8, 3, 8)
    assert counts.line() == "lines 50% (4 of 8), branches 38% (3 of 8), from 1 JaCoCo report"


def test_the_reports_of_several_modules_add_up() -> None:
    counts = summarize_jacoco({"core.xml": REPORT, "api.xml": MODULE})
    assert (counts.lines_covered, counts.lines, counts.branches_covered, counts.branches) == (34, 48, 7, 12)
    assert counts.files == ["core.xml", "api.xml"] and counts.unreadable == []


def test_what_is_not_a_jacoco_report_is_named_unreadable_and_counts_nothing() -> None:
    entities = (b'<?xml version="1.0"?><!DOCTYPE r [<!ENTITY a "aaaaaaaaaa">]>'
                b'<report><counter type="LINE" missed="&a;" covered="1"/></report>')
    junit = b'<testsuite name="x" tests="1"><testcase name="t"/></testsuite>'
    counts = summarize_jacoco({"entities.xml": entities, "junit.xml": junit, "broken.xml": b"<report",
                               "huge.xml": b"<report>" + b" " * MAX_DOCUMENT_BYTES + b"</report>"},
                              unread=["past-the-total.xml"])
    assert (counts.lines, counts.branches) == (0, 0)
    assert counts.unreadable == ["entities.xml", "junit.xml", "broken.xml", "huge.xml", "past-the-total.xml"]
    assert counts.line() == ("lines none measured, branches none measured, from 0 JaCoCo reports, "
                             "5 unreadable")


def test_counter_values_that_are_not_plain_counts_count_as_zero() -> None:
    odd = b'''<report><counter type="LINE" missed="-5" covered="1e9"/>
    <counter type="BRANCH" missed="99999999999999999999999" covered="2"/></report>'''
    counts = summarize_jacoco({"odd.xml": odd})
    assert (counts.lines_covered, counts.lines, counts.branches_covered, counts.branches) == (0, 0, 2, 2)


def test_the_names_kept_are_bounded_in_number_and_length() -> None:
    documents = {f"{'m' * 600}-{n}.xml": MODULE for n in range(MAX_REPORT_NAMES + 5)}
    counts = summarize_jacoco(documents)
    assert counts.lines == 40 * (MAX_REPORT_NAMES + 5)  # every report counted
    assert len(counts.files) == MAX_REPORT_NAMES and all(len(name) <= 500 for name in counts.files)
