"""Reading a repository's configuration files: bounded, never through a link, and refused with a
message a person can act on."""
from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pathlib import Path

MAX_CONFIG_FILE_BYTES = 1 << 20


class ConfigError(ValueError):
    """A configuration a person must fix; the message names the file and the key."""


def read_bounded(path: Path) -> bytes | None:
    """The file's bytes, or None when there is none. A link is refused rather than followed: the
    repository could point it at /dev/zero or at a file of the host."""
    if path.is_symlink():
        raise ConfigError(f"{path.name} is a symbolic link; configuration files must be regular files")
    if not path.is_file():
        return None
    if path.stat().st_size > MAX_CONFIG_FILE_BYTES:
        raise ConfigError(f"{path.name} is larger than {MAX_CONFIG_FILE_BYTES} bytes")
    return path.read_bytes()
