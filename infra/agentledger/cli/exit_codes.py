"""The CLI's exit codes: what a script that runs `agentledger` branches on. The CLI reference
(docs/gen/reference.py) lists them from here, with what each means."""
from __future__ import annotations

from enum import IntEnum


class ExitCode(IntEnum):
    OK = 0
    USER_ERROR = 1
    NEEDS_PERSON = 3
    STILL_RUNNING = 4
    INTERRUPTED = 130
    CLOSED_PIPE = 141  # 128 + SIGPIPE, as a shell reports a reader that went away


# There is no "failed" run status: every failure ends with a person, so it has no code of its own.
MEANING: dict[ExitCode, str] = {
    ExitCode.OK: "done: the command answered, or the followed run is complete or waits for review",
    ExitCode.USER_ERROR: "a problem to fix; the one line on stderr says what",
    ExitCode.NEEDS_PERSON: ("the followed run (`run`, `resume --wait`, `show --follow`) needs a person; "
                          "every failure ends there"),
    ExitCode.STILL_RUNNING: "following gave up after `--timeout`; the run goes on",
    ExitCode.INTERRUPTED: "interrupted (Ctrl-C)",
    ExitCode.CLOSED_PIPE: "the reader of stdout went away (`show RUN | head`); nothing more is printed",
}
