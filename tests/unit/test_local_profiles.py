"""Each `serve` writes its callers' profiles in a directory of its own, named by its port, and the
CLI signs for an API with the profiles of the `serve` on that API's port."""
from __future__ import annotations

import configparser
from pathlib import Path

import pytest

from agentledger.cli.signing import SigningError, request_signer
from agentledger.local.profiles import instance_profiles_dir, local_credentials_dir

DUTIES = ("requester", "reviewer")


def serve_wrote(port: int) -> None:
    """The profiles a `serve` on `port` writes: one per duty, the requester also `default`; each
    key names its instance and duty."""
    credentials = configparser.ConfigParser()
    for duty in DUTIES:
        key = {"aws_access_key_id": key_id(port, duty), "aws_secret_access_key": f"secret-{port}-{duty}"}
        credentials[f"agentledger-{duty}"] = key
        if duty == "requester":
            credentials["default"] = key
    directory = instance_profiles_dir(f"http://127.0.0.1:{port}")
    directory.mkdir(parents=True)
    with (directory / "credentials").open("w") as file:
        credentials.write(file)


def key_id(port: int, duty: str) -> str:
    return f"AKIA{port}{duty.upper()}"


def signed_with(api_url: str, profile: str | None = None) -> str:
    """The access key id the CLI's signature for `api_url` carries."""
    headers = request_signer(api_url, profile)("GET", f"{api_url.rstrip('/')}/runs", {}, None)
    return headers["Authorization"].split("Credential=")[1].split("/")[0]


def test_the_profiles_are_kept_per_port_under_the_credentials_directory(profiles_base: Path) -> None:
    assert local_credentials_dir() == profiles_base
    assert instance_profiles_dir("http://127.0.0.1:8787") == profiles_base / "127.0.0.1-8787"
    assert instance_profiles_dir("http://127.0.0.1:8788") == profiles_base / "127.0.0.1-8788"


@pytest.mark.parametrize("api_url", ["http://localhost:8787/", "http://[::1]:8787", "http://127.0.0.1:8787/v1"])
def test_every_name_for_the_same_port_finds_the_same_serve(profiles_base: Path, api_url: str) -> None:
    assert instance_profiles_dir(api_url) == instance_profiles_dir("http://127.0.0.1:8787")


def test_without_a_configured_directory_the_profiles_live_in_the_home_directory(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("AGENTLEDGER_LOCAL_CREDENTIALS_DIR", raising=False)
    assert instance_profiles_dir("http://127.0.0.1:8787") == Path.home() / ".agentledger" / "local" / "127.0.0.1-8787"


def test_the_cli_signs_for_each_api_with_the_keys_of_the_serve_on_its_port(profiles_base: Path) -> None:
    serve_wrote(8787)
    serve_wrote(8788)
    assert signed_with("http://127.0.0.1:8787") == key_id(8787, "requester")
    assert signed_with("http://127.0.0.1:8788") == key_id(8788, "requester")
    assert signed_with("http://localhost:8788", "agentledger-reviewer") == key_id(8788, "reviewer")


def test_a_loopback_api_no_serve_wrote_profiles_for_is_refused_naming_where_they_would_be(profiles_base: Path) -> None:
    serve_wrote(8787)
    with pytest.raises(SigningError, match=r"no profiles for http://127\.0\.0\.1:8788 in .*127\.0\.0\.1-8788"):
        request_signer("http://127.0.0.1:8788", None)
