"""What the CLI signs for: the region comes from an execute-api URL, loopback APIs are local."""
from __future__ import annotations

import pytest

from agentledger.cli.signing import is_loopback, region_of


@pytest.mark.parametrize(("url", "region"), [
    ("https://a1b2c3d4e5.execute-api.eu-west-1.amazonaws.com/v1", "eu-west-1"),
    ("https://a1b2c3d4e5.execute-api.cn-north-1.amazonaws.com.cn/v1/", "cn-north-1"),
    ("https://api.example.com/v1", None),
    ("http://127.0.0.1:8787", None),
])
def test_the_region_is_read_from_an_execute_api_url(url: str, region: str | None) -> None:
    assert region_of(url) == region


@pytest.mark.parametrize(("url", "local"), [
    ("http://127.0.0.1:8787", True), ("http://localhost:9000/", True), ("http://[::1]:8787", True),
    ("https://a1b2c3d4e5.execute-api.us-east-1.amazonaws.com/v1", False), ("http://10.0.0.5:8787", False),
])
def test_only_loopback_apis_use_the_local_profiles(url: str, local: bool) -> None:
    assert is_loopback(url) is local
