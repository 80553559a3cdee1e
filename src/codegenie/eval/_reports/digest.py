"""What proves that reports were made from one bench: a digest of its files.

``bench_digest`` hashes the manifest's bytes and every file under the roots
it declares (registrations, rubrics, and each case's ``case.toml``,
``input/`` and ``expected/``), by relative path, so every shard of one
checkout gets the same digest and a shard run on another commit does not.
``__pycache__`` and hidden directories are left out (running a bench
writes them); a symbolic link counts by its target's name, never followed.
"""

from __future__ import annotations

import hashlib
import os
import tomllib
from pathlib import Path

__all__ = ("bench_digest", "declared_slugs")


def _roots(data: bytes) -> list[str]:
    try:
        document = tomllib.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, tomllib.TOMLDecodeError):
        return []
    entries = document.get("task-classes")
    if not isinstance(entries, dict):
        return []
    roots = {entry.get("root") for entry in entries.values() if isinstance(entry, dict)}
    return sorted(root for root in roots if isinstance(root, str))


def declared_slugs(manifest: Path) -> list[str]:
    """Return the slugs the manifest's ``[task-classes]`` declares (none when unreadable)."""
    try:
        document = tomllib.loads(manifest.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError):
        return []
    entries = document.get("task-classes")
    return sorted(entries) if isinstance(entries, dict) else []


def bench_digest(manifest: Path) -> str:
    """Return ``sha256:<hex>`` of the manifest's bytes and the files under its roots.

    A manifest that cannot be read hashes as empty; a root outside the
    manifest's directory, or missing, adds nothing.
    """
    hasher = hashlib.sha256()
    try:
        data = manifest.read_bytes()
    except OSError:
        data = b""
    hasher.update(b"manifest\0%d\0" % len(data) + data)
    base = manifest.absolute().parent
    for root in _roots(data):
        top = (base / root).resolve()
        if not top.is_relative_to(base.resolve()) or not top.is_dir():
            continue
        for directory, subdirectories, files in os.walk(top):
            subdirectories[:] = sorted(
                d for d in subdirectories if d != "__pycache__" and not d.startswith(".")
            )
            for name in sorted(files):
                path = Path(directory, name)
                relative = path.relative_to(base).as_posix().encode("utf-8", "surrogateescape")
                hasher.update(b"file\0" + relative + b"\0")
                if path.is_symlink():
                    hasher.update(b"link\0" + os.fsencode(os.readlink(path)) + b"\0")
                    continue
                try:
                    content = path.read_bytes()
                except OSError:
                    content = b""
                hasher.update(b"%d\0" % len(content) + content)
    return f"sha256:{hasher.hexdigest()}"
