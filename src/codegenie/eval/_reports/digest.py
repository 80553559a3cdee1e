"""What proves that reports were made from one bench: a digest of its files.

``bench_digest`` hashes the manifest's bytes and every file under the roots
it declares (registrations, rubrics, and each case's ``case.toml``,
``input/`` and ``expected/``), by relative path, so every shard of one
checkout gets the same digest and a shard run on another commit does not.
Each root is hashed as the validation ledger hashes a tree
(:func:`codegenie.eval._run.digest.tree_digest`, a walk of
:mod:`codegenie.eval._tree`): ``__pycache__`` is left out (running a bench
writes it), a symbolic link counts by its text, never followed, a special
file by its kind, and a root beyond the walk's bounds (entries, bytes,
depth) or unreadable counts as ``unreadable``.
"""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

from codegenie.eval._manifest.read import read_manifest_bytes
from codegenie.eval._paths import fs_path
from codegenie.eval._run.digest import tree_digest
from codegenie.eval._toml.read import TomlUnreadable, parse_toml
from codegenie.eval.errors import EvalError

__all__ = ("bench_digest",)


def _document(data: bytes) -> dict[str, Any]:
    """Return the manifest's TOML document, read within its bounds; empty when unreadable."""
    try:
        return parse_toml(data)[1]
    except TomlUnreadable:
        return {}


def _read(manifest: Path) -> bytes:
    """Return the manifest's bytes through the one bounded reader (never a FIFO)."""
    try:
        return read_manifest_bytes(manifest)
    except EvalError:
        return b""


def _roots(data: bytes) -> list[str]:
    entries = _document(data).get("task-classes")
    if not isinstance(entries, dict):
        return []
    roots = {entry.get("root") for entry in entries.values() if isinstance(entry, dict)}
    return sorted(root for root in roots if isinstance(root, str))


def bench_digest(manifest: Path) -> str:
    """Return ``sha256:<hex>`` of the manifest's bytes and the trees of its roots.

    A manifest that cannot be read hashes as empty; a root outside the
    manifest's directory, or missing, adds nothing. Each root's tree is
    hashed as the validation ledger hashes a tree: bounded in entries, bytes
    and depth, symbolic links by their text, special files by their kind
    (never opened), ``__pycache__`` left out.
    """
    hasher = hashlib.sha256()
    data = _read(manifest)
    hasher.update(b"manifest\0%d\0" % len(data) + data)
    base = manifest.absolute().parent
    for root in _roots(data):
        top = (base / fs_path(root)).resolve()
        if not top.is_relative_to(base.resolve()) or not top.is_dir():
            continue
        tree = tree_digest(top) or "unreadable"
        hasher.update(f"root\0{root}\0{tree}\0".encode("utf-8", "surrogateescape"))
    return f"sha256:{hasher.hexdigest()}"
