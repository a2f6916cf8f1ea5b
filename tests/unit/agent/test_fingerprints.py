from __future__ import annotations

import hashlib

import pytest

from agentledger.fingerprints import canonical_json, digest, sha256_bytes, sha256_file


def test_sha256_bytes_is_the_hex_digest():
    assert sha256_bytes(b"agentledger") == hashlib.sha256(b"agentledger").hexdigest()


def test_sha256_file_matches_hashing_the_whole_content(tmp_path):
    content = bytes(range(256)) * 10_000  # larger than one read buffer
    path = tmp_path / "blob.bin"
    path.write_bytes(content)
    assert sha256_file(path) == hashlib.sha256(content).hexdigest()


def test_canonical_json_sorts_keys_compactly_in_utf8():
    assert canonical_json({"b": 1, "a": ["é", None]}) == '{"a":["é",null],"b":1}'.encode()


def test_digest_ignores_key_order_but_not_values():
    assert digest({"a": 1, "b": 2}) == digest({"b": 2, "a": 1})
    assert digest({"a": 1, "b": 2}) != digest({"a": 1, "b": 3})
    assert digest({"a": 1}) == "sha256:" + hashlib.sha256(b'{"a":1}').hexdigest()


def test_canonical_json_refuses_nan():
    with pytest.raises(ValueError):
        canonical_json({"score": float("nan")})
