"""The CLI against a local API port with no profiles of its own: it tells nothing listening (start
`serve`) from a serve whose profiles are not where it looked. Real sockets on loopback."""
from __future__ import annotations

import socket
from typing import TYPE_CHECKING

import pytest

from agentledger.cli.main import main
from agentledger.local.profiles import instance_profiles_dir

if TYPE_CHECKING:
    from collections.abc import Iterator
    from pathlib import Path

pytestmark = pytest.mark.integration


@pytest.fixture
def port_with_nothing_listening() -> Iterator[int]:
    with socket.socket() as bound:  # bound but not listening: a connection is refused
        bound.bind(("127.0.0.1", 0))
        yield bound.getsockname()[1]


@pytest.fixture
def port_with_something_listening() -> Iterator[int]:
    with socket.socket() as listening:
        listening.bind(("127.0.0.1", 0))
        listening.listen()
        yield listening.getsockname()[1]


def test_the_cli_against_a_port_where_nothing_serves_says_to_start_serve(
        profiles_base: Path, port_with_nothing_listening: int, capsys: pytest.CaptureFixture[str]) -> None:
    url = f"http://127.0.0.1:{port_with_nothing_listening}"
    assert main(["runs", "--api", url]) == 1
    assert capsys.readouterr().err == (f"agentledger: cannot reach the agentledger API at {url}; "
                                       "start it with `agentledger serve`\n")


def test_the_cli_against_a_serve_whose_profiles_are_elsewhere_says_where_it_looked(
        profiles_base: Path, port_with_something_listening: int, capsys: pytest.CaptureFixture[str]) -> None:
    url = f"http://127.0.0.1:{port_with_something_listening}"
    assert main(["runs", "--api", url]) == 1
    assert capsys.readouterr().err == (f"agentledger: no profiles for {url} in {instance_profiles_dir(url)}: "
                                       "`agentledger serve` writes them there when it starts on that port\n")
