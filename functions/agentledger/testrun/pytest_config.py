"""pytest's configuration as pytest reads it: the first of its files that configures it, and the
plugins its options need, so that a suite starts as its maintainers run it."""
from __future__ import annotations

import configparser
import re
import shlex
import tomllib
from typing import TYPE_CHECKING, Any

from .files import ConfigError, read_bounded

if TYPE_CHECKING:
    from collections.abc import Callable
    from pathlib import Path

# Where pytest reads its configuration, in the order it looks: (file, section).
PYTEST_CONFIGS: tuple[tuple[str, str], ...] = (
    ("pytest.ini", "pytest"), ("pyproject.toml", "tool.pytest.ini_options"), ("tox.ini", "pytest"),
    ("setup.cfg", "tool:pytest"),
)
# The options of `addopts` that only a plugin knows, by the distribution that provides it: without
# it pytest stops with "unrecognized arguments" before running a test.
PLUGIN_OPTIONS: dict[str, tuple[str, ...]] = {
    "pytest-cov": ("--cov", "--cov-report", "--cov-config", "--cov-branch", "--cov-fail-under", "--no-cov",
                   "--cov-append", "--cov-context"),
    "pytest-xdist": ("-n", "--numprocesses", "--dist", "--maxprocesses", "--max-worker-restart"),
    "pytest-timeout": ("--timeout", "--timeout-method", "--timeout_method"),
    "pytest-rerunfailures": ("--reruns", "--reruns-delay", "--only-rerun"),
    "pytest-benchmark": ("--benchmark-skip", "--benchmark-only", "--benchmark-disable", "--benchmark-autosave",
                         "--benchmark-json", "--benchmark-columns", "--benchmark-sort"),
    "pytest-randomly": ("--randomly-seed", "--randomly-dont-reset-seed", "--randomly-dont-reorganize"),
    "pytest-asyncio": ("--asyncio-mode",),
    "pytest-html": ("--html", "--self-contained-html"),
    "pytest-mypy": ("--mypy",),
    "pytest-instafail": ("--instafail",),
    "pytest-sugar": ("--force-sugar",),
    "pytest-doctestplus": ("--doctest-rst", "--doctest-plus", "--doctest-ufunc"),
    "hypothesis": ("--hypothesis-profile", "--hypothesis-show-statistics", "--hypothesis-seed",
                   "--hypothesis-verbosity"),
}
# pytest's own `required_plugins`: requirements as pip reads them, without markers or URLs.
REQUIRED_PLUGIN = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,99}([<>=!~]=?[0-9A-Za-z.*+]{1,30})?")


def pytest_section(root: Path, present: Callable[[str], bool]) -> tuple[dict[str, Any] | None, str | None, bytes]:
    """The settings of the first configuration file pytest would read (among the files `present`
    says the repository has), its name and bytes; (None, None, b"") when none configures pytest.
    A file that cannot be read or parsed is passed over, as pytest passes over one without its
    section: the test run refuses a bad file with its reason."""
    for name, section in PYTEST_CONFIGS:
        if not present(name):
            continue
        try:
            data = read_bounded(root / name)
        except ConfigError:
            continue
        if data is None:
            continue
        values = _section(name, section, data)
        if values is not None:
            return values, name, data
    return None, None, b""


def plugins_needed(settings: dict[str, Any] | None) -> list[str]:
    """The distributions the suite's own configuration needs beyond pytest: each plugin whose option
    `addopts` passes, and each of `required_plugins`."""
    if not settings:
        return []
    needed = [requirement for requirement in _words(settings.get("required_plugins"))
              if REQUIRED_PLUGIN.fullmatch(requirement)]
    options = {word.split("=", 1)[0] for word in _words(settings.get("addopts"))}
    options |= {"-n" for word in options if re.fullmatch(r"-n(\d+|auto|logical)", word)}
    needed += [plugin for plugin, known in PLUGIN_OPTIONS.items() if options & set(known)]
    return list(dict.fromkeys(needed))


def _words(value: Any) -> list[str]:
    """A setting as pytest splits it: a list as written (pyproject.toml), else shell words."""
    if isinstance(value, list):
        return [word for item in value if isinstance(item, str) for word in _split(item)]
    return _split(value) if isinstance(value, str) else []


def _split(text: str) -> list[str]:
    try:
        return shlex.split(text)
    except ValueError:
        return text.split()


def _section(name: str, section: str, data: bytes) -> dict[str, Any] | None:
    if name.endswith(".toml"):
        try:
            table: Any = tomllib.loads(data.decode("utf-8"))
        except (tomllib.TOMLDecodeError, UnicodeDecodeError):
            return None
        for key in section.split("."):
            table = table.get(key) if isinstance(table, dict) else None
        return table if isinstance(table, dict) else None
    parser = configparser.ConfigParser(interpolation=None)
    try:
        parser.read_string(data.decode("utf-8"))
    except (configparser.Error, UnicodeDecodeError):
        return None
    return dict(parser.items(section)) if parser.has_section(section) else None
