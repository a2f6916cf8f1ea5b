"""A Maven project's classes and their JUnit tests, as far as the orchestrator reads them: by name,
never compiled or run here (the build compiles and runs them in the sandbox).

A public method counts as tested when some test source calls a method of that name; a class when
some test source names it. That is coarser than Python's imports, and errs towards "tested", so
a writer targets only what no test mentions."""
from __future__ import annotations

import re
from pathlib import PurePosixPath

MAIN_SOURCES = "src/main/java/"
TEST_SOURCES = "src/test/java/"
PACKAGE = re.compile(r"^\s*package\s+([A-Za-z_][\w.]*)\s*;", re.MULTILINE)
PUBLIC_TYPE = re.compile(r"^\s*public\s+(?:final\s+|abstract\s+)*(?:class|record|enum|interface)\s+([A-Za-z_]\w*)",
                         re.MULTILINE)
PUBLIC_METHOD = re.compile(r"^\s*public\s+(?:static\s+|final\s+|synchronized\s+)*[\w<>\[\]?, .]+?\s+"
                           r"([a-z_]\w*)\s*\(", re.MULTILINE)
TEST_ANNOTATION = re.compile(r"@(?:Test|ParameterizedTest|RepeatedTest|TestFactory)\b")
TEST_CLASS_NAME = re.compile(r"^[A-Z]\w*Test$")  # what Surefire runs by default, of the names it knows


def is_main_source(path: str) -> bool:
    return path.endswith(".java") and _root_and_rest(path, MAIN_SOURCES) is not None


def is_test_source(path: str) -> bool:
    return path.endswith(".java") and _root_and_rest(path, TEST_SOURCES) is not None


def _root_and_rest(path: str, marker: str) -> tuple[str, str] | None:
    """('module/', 'demo/Shapes.java') for 'module/src/main/java/demo/Shapes.java'."""
    root, found, rest = path.partition(marker)
    if not found or (root and not root.endswith("/")) or not rest:
        return None
    return root, rest


def class_name(path: str) -> str | None:
    """'demo.Shapes' for '[module/]src/main/java/demo/Shapes.java'; None for any other path."""
    parts = _root_and_rest(path, MAIN_SOURCES) if path.endswith(".java") else None
    if parts is None:
        return None
    names = PurePosixPath(parts[1]).with_suffix("").parts
    return ".".join(names) if all(name.isidentifier() for name in names) else None


def public_methods(source: str) -> list[tuple[str, str, int]]:
    """(qualified name, kind, line) of the public class and its public methods."""
    found: list[tuple[str, str, int]] = []
    declared = PUBLIC_TYPE.search(source)
    if declared is None:
        return found
    owner = declared.group(1)
    found.append((owner, "class", source.count("\n", 0, declared.start(1)) + 1))
    for match in PUBLIC_METHOD.finditer(source, declared.end()):
        found.append((f"{owner}.{match.group(1)}", "method", source.count("\n", 0, match.start(1)) + 1))
    return found


def is_named_in(qualname: str, tests: str) -> bool:
    owner, _, method = qualname.partition(".")
    if method:
        return re.search(rf"\b{re.escape(method)}\s*\(", tests) is not None
    return re.search(rf"\b{re.escape(owner)}\b", tests) is not None


def junit_test_path(source_path: str, code: str) -> str:
    """Where the model's JUnit class goes: its package's folder under the test sources of the
    source's own module, named after the class. The class must be in the source's package (so
    it reaches package-private members as a team's own tests do) and named as Surefire runs it."""
    parts = _root_and_rest(source_path, MAIN_SOURCES)
    if parts is None:
        raise ValueError(f"{source_path} is not a class under {MAIN_SOURCES}")
    expected = ".".join(PurePosixPath(parts[1]).parent.parts)
    declared = PACKAGE.search(code)
    if (declared.group(1) if declared else "") != expected:
        raise ValueError(f"the test class for {source_path} must declare `package {expected};`")
    names = re.findall(r"^\s*(?:public\s+|final\s+)*class\s+([A-Za-z_]\w*)", code, re.MULTILINE)
    if not names or not TEST_CLASS_NAME.match(names[0]):
        raise ValueError(f"the test class for {source_path} must be a top-level class whose name ends in Test")
    if not TEST_ANNOTATION.search(code):
        raise ValueError(f"the test class for {source_path} has no @Test method")
    return f"{parts[0]}{TEST_SOURCES}{PurePosixPath(parts[1]).parent / names[0]}.java".replace("/./", "/")
