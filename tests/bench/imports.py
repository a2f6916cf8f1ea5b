"""(f) The cold import time of each handler module, as a Lambda cold start pays it.

Each measurement is a fresh interpreter started in the code asset's root (`functions/`, from
where the Lambda runtime imports the handler) with the function's own environment, timing
`import handlers.<module>` inside it, so the interpreter's own start is left out; the median of a
few. The handler modules are those the deployed functions name. The heaviest package each pulls
in comes from one more start with `-X importtime`. The CLI (`agentledger --help` imports
`agentledger.cli.main`) is measured the same way from the project root."""
from __future__ import annotations

import os
import statistics
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import agentledger
from agentledger.deploy import PROJECT_ROOT

from .report import Table, Target, short_function_name

FUNCTIONS_DIR = Path(agentledger.__file__).resolve().parent.parent
CLI_MODULE = "agentledger.cli.main"
HOST_VARIABLES = ("PATH", "HOME", "LANG", "AWS_DEFAULT_REGION")
TIMED_IMPORT = "import time; started = time.perf_counter(); import {module}; print(time.perf_counter() - started)"
OWN_PACKAGES = ("agentledger",)


@dataclass(frozen=True)
class Measured:
    module: str
    functions: list[str]
    seconds: float  # median
    heaviest: str  # the third-party package that took longest, with its cumulative time


def measure(deployed: dict[str, dict[str, Any]], repeats: int) -> list[Measured]:
    """`deployed`: function name -> its configuration (Handler, Environment)."""
    by_module: dict[str, list[str]] = {}
    environments: dict[str, dict[str, str]] = {}
    for function, configuration in sorted(deployed.items()):
        module = configuration["Handler"].rpartition(".")[0]
        by_module.setdefault(module, []).append(function)
        environments.setdefault(module, configuration.get("Environment", {}).get("Variables", {}))
    measured = [_measure(module, functions, FUNCTIONS_DIR, environments[module], repeats)
                for module, functions in sorted(by_module.items())]
    measured.append(_measure(CLI_MODULE, ["agentledger (the CLI)"], PROJECT_ROOT, {}, repeats))
    return measured


def goal(cli_target_s: float) -> str:
    return f"CLI import for `agentledger --help` <= {cli_target_s:g} s"


def handler_goal(handler_target_s: float) -> str:
    return f"each handler module's cold import <= {handler_target_s:g} s"


def table(measured: list[Measured], repeats: int, cli_target_s: float, handler_target_s: float) -> Table:
    result = Table(f"(f) Cold import of each handler module (a fresh interpreter each; median of {repeats})",
                   ["module", "import (s)", "heaviest third-party import", "functions"])
    for row in measured:
        result.add(row.module, row.seconds, row.heaviest, ", ".join(map(short_function_name, row.functions)))
    cli = next(row for row in measured if row.module == CLI_MODULE)
    result.target(f"{cli.seconds:.3f} s", Target(goal(cli_target_s), cli.seconds <= cli_target_s))
    handlers = [row for row in measured if row.module != CLI_MODULE]
    slowest = max(handlers, key=lambda row: row.seconds)
    result.target(f"slowest {slowest.module}: {slowest.seconds:.3f} s",
                  Target(handler_goal(handler_target_s), slowest.seconds <= handler_target_s))
    over = [row for row in handlers if row.seconds > handler_target_s]
    if over:
        slow = "; ".join(f"{row.module} {row.seconds:.3f} s, heaviest {row.heaviest}" for row in over)
        result.notes.append(f"missed because: {slow}: what decorating a handler needs is imported at module load, "
                            "which every cold start pays (pydantic and the models it validates, Powertools' logger, "
                            "metrics and parser, the api's resolver); boto3, the X-Ray SDK and what an invocation "
                            "builds load at the first invocation (handlers/assembly.py)")
    return result


def _measure(module: str, functions: list[str], root: Path, variables: dict[str, str], repeats: int) -> Measured:
    environment = {**{name: os.environ[name] for name in HOST_VARIABLES if name in os.environ}, **variables}
    timings = [float(_python(["-c", TIMED_IMPORT.format(module=module)], root, environment).stdout)
               for _ in range(repeats)]
    profile = _python(["-X", "importtime", "-c", f"import {module}"], root, environment).stderr
    return Measured(module, functions, statistics.median(timings), _heaviest(profile))


def _python(arguments: list[str], root: Path, environment: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, *arguments], cwd=root, env=environment, capture_output=True,
                          text=True, check=True)


def _heaviest(importtime: str) -> str:
    """From `-X importtime` lines (`import time: self [us] | cumulative | package`): the package
    outside this project with the largest cumulative time, which is one imported directly."""
    best_name, best_us = "-", 0
    for line in importtime.splitlines():
        fields = line.removeprefix("import time:").split("|")
        if len(fields) != 3 or not fields[1].strip().isdigit():
            continue
        name, cumulative = fields[2].strip(), int(fields[1])
        if name.split(".")[0] not in OWN_PACKAGES and cumulative > best_us:
            best_name, best_us = name, cumulative
    return f"{best_name} ({best_us / 1e6:.3f} s)"

