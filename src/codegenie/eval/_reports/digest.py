"""What proves that reports were made from one bench: a digest of its files.

``bench_digest`` hashes the manifest's bytes and every file under the roots
it declares (registrations, rubrics, and each case's ``case.toml``,
``input/`` and ``expected/``), by relative path, so every shard of one
checkout gets the same digest and a shard run on another commit does not.
Each root is hashed as the validation ledger hashes a tree
(:func:`codegenie.eval._run.digest.whole_tree_digest`, a walk of
:mod:`codegenie.eval._tree`): ``__pycache__`` is left out (running a bench
writes it), a symbolic link counts by its text, never followed, a special
file by its kind. Unlike a run's copies, a root is hashed whole whatever its
number of entries or bytes (streamed: a root of a million files costs time,
not memory); what the walk holds in memory is bounded (at most
:data:`HELD_NAMES` names listed at once, :data:`~codegenie.eval._tree.DEPTH_LIMIT`
levels). A root that cannot be hashed whole (a directory that cannot be
read, one beyond those bounds) gives no digest at all, and says which root
and why (:class:`BenchDigest`): a digest that two different benches could
share would let ``merge`` take their shards for one bench.
"""

from __future__ import annotations

import hashlib
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final, final

from codegenie.eval._manifest.read import read_manifest_bytes
from codegenie.eval._paths import fs_path
from codegenie.eval._run.digest import whole_tree_digest
from codegenie.eval._toml.read import TomlUnreadable, parse_toml
from codegenie.eval._tree import DEPTH_LIMIT, ENTRIES_LIMIT, TreeBeyondBounds, TreeBounds
from codegenie.eval.errors import EvalError

__all__ = ("HELD_NAMES", "BenchDigest", "bench_digest", "bench_digest_of")


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


#: The most names a root's walk holds in memory at once (a directory listed whole, and the
#: ones above it not yet gone through): about 25 MiB of them.
HELD_NAMES: Final = ENTRIES_LIMIT


@final
@dataclass(frozen=True, slots=True)
class BenchDigest:
    """A bench's digest, or why it has none.

    ``value`` is ``sha256:<hex>``, ``None`` when a root could not be hashed
    whole; ``refused`` then names each such root (as the manifest writes
    it) and why, in words (``…: the tree is deeper than 512 levels``).
    """

    value: str | None
    refused: tuple[tuple[str, str], ...] = ()

    def warning(self) -> str | None:
        """Return the one line that says why there is no digest; ``None`` when there is one."""
        if not self.refused:
            return None
        roots = "; ".join(f"root {root!r}: {reason}" for root, reason in self.refused)
        return f"no bench_digest (merge cannot prove one bench with this report): {roots}"


def bench_digest(manifest: Path) -> str | None:
    """Return ``sha256:<hex>`` of the manifest's bytes and the trees of its roots; ``None``: none.

    :func:`bench_digest_of`'s value.
    """
    return bench_digest_of(manifest).value


def bench_digest_of(manifest: Path) -> BenchDigest:
    """Return the digest of the manifest's bytes and the trees of its roots, or why there is none.

    A manifest that cannot be read hashes as empty; a root outside the
    manifest's directory, or missing, adds nothing. Each root's tree is
    hashed whole (every entry, every byte, streamed), symbolic links by
    their text, special files by their kind (never opened), ``__pycache__``
    left out; a root that cannot be (a directory that cannot be listed,
    more than :data:`HELD_NAMES` names to hold at once, deeper than the
    walk goes) leaves the bench without a digest. Never raises.
    """
    hasher = hashlib.sha256()
    data = _read(manifest)
    hasher.update(b"manifest\0%d\0" % len(data) + data)
    base = manifest.absolute().parent
    bounds = TreeBounds(entries=sys.maxsize, bytes=sys.maxsize, depth=DEPTH_LIMIT, held=HELD_NAMES)
    refused: list[tuple[str, str]] = []
    for root in _roots(data):
        top = (base / fs_path(root)).resolve()
        if not top.is_relative_to(base.resolve()) or not top.is_dir():
            continue
        try:
            tree = whole_tree_digest(top, bounds=bounds)
        except TreeBeyondBounds as exc:
            refused.append((root, f"{_shown(exc.path, base)}: {exc.reason}"))
            continue
        except OSError as exc:
            where = _shown(exc.filename, base) if isinstance(exc.filename, str) else root
            refused.append((root, f"{where}: {exc.strerror or exc}"))
            continue
        hasher.update(f"root\0{root}\0{tree}\0".encode("utf-8", "surrogateescape"))
    if refused:
        return BenchDigest(None, tuple(refused))
    return BenchDigest(f"sha256:{hasher.hexdigest()}")


def _shown(path: str, base: Path) -> str:
    """Return ``path`` relative to the manifest's directory when it lies under it."""
    try:
        return str(Path(path).relative_to(base.resolve()))
    except ValueError:
        return path
