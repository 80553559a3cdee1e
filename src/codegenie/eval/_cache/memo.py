"""Reading a manifest the cheap way: remembered in this process, else served from the cache.

:func:`load_manifest_cached` is how the loader and every command read the
manifest. It answers what :meth:`BenchManifest.load` would, and the cache is
read here (:func:`codegenie.eval._cache.entry.open_entry`) and written here
(:func:`codegenie.eval._cache.store.store_listing`) only; the fast ``list``
reads the same entries through the same reader.
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path
from typing import Final, final

from codegenie.eval._cache.entry import digest as entry_digest
from codegenie.eval._cache.entry import open_entry
from codegenie.eval._cache.served import ServedManifest
from codegenie.eval._cache.store import store_listing
from codegenie.eval._manifest.model import BenchManifest, ManifestEntry, parse_manifest
from codegenie.eval._manifest.read import read_manifest
from codegenie.eval._toml.positions import OPTIONAL_ENTRY_KEYS

__all__ = ("clear_manifest_cache", "load_manifest_cached")

_StatKey = tuple[int, int, int, int, int]


@final
class _Remembered:
    """A manifest read in this process: the file's stat when read, its digest, the manifest."""

    __slots__ = ("digest", "manifest", "settled", "stat")

    def __init__(self, stat: _StatKey, digest: str, settled: bool, manifest: BenchManifest) -> None:
        self.stat = stat
        self.digest = digest
        # Whether an unchanged stat proves unchanged bytes (see load_manifest_cached).
        self.settled = settled
        self.manifest = manifest


_cache: dict[str, _Remembered] = {}
#: Manifests remembered at once; a long-lived process loading from many roots
#: keeps the most recently read ones.
_CACHE_SIZE: Final = 64
#: A file changed less than this long before it was read may be changed again
#: within the same tick of the file system's clock (a jiffy; 2 s on FAT)
#: without its stat changing: until then, its bytes are compared instead.
_RACY_SECONDS: Final = 3.0


def _stat_key(st: os.stat_result) -> _StatKey:
    return (st.st_ino, st.st_dev, st.st_size, st.st_mtime_ns, st.st_ctime_ns)


def load_manifest_cached(path: str) -> BenchManifest:
    """Like :meth:`BenchManifest.load` of the absolute ``path``, without validating it again.

    Two caches answer, and neither can change the answer:

    - in this process, the manifest last read from ``path`` is returned again
      (the same object) while the file's inode, size, modification and
      change times are those of the bytes last read (taken from the open
      file) — provided the file had not changed for 3 seconds when it was
      read; a file changed more recently could change again within the same
      tick of the file system's clock, so its bytes are read again and
      compared (by digest). At most 64 manifests are remembered.
    - otherwise the bytes are read (through :func:`read_manifest_bytes`'s
      checks) and looked up by their BLAKE2b digest in the user's cache of
      validated manifests, shared with ``codegenie-bench list``
      (:mod:`codegenie.eval._cache.entry`, under ``$XDG_CACHE_HOME``). A hit
      answers without validating: the manifest reads its entries from the
      cache as they are asked for, one at a time, and equals — in every
      observable way — what validation would give. A miss validates, and a
      manifest that validates is written to that cache (an invalid one never
      is): the same ``BenchManifestNotFound`` or ``BenchManifestInvalid``,
      with the same problems and lines, as :meth:`BenchManifest.load`.
    """
    try:
        key = _stat_key(os.stat(path))
    except OSError:
        key = None
    hit = _cache.get(path)
    if hit is not None and hit.settled and hit.stat == key:
        return hit.manifest
    _cache.pop(path, None)
    file = Path(path).absolute()
    data, status = read_manifest(file)
    digest = entry_digest(data)
    if hit is not None and hit.digest == digest:
        manifest = hit.manifest
    else:
        manifest = _from_cache_or_validated(data, digest, file)
    settled = time.time() - max(status.st_mtime, status.st_ctime) > _RACY_SECONDS
    while len(_cache) >= _CACHE_SIZE:
        del _cache[next(iter(_cache))]
    _cache[path] = _Remembered(_stat_key(status), digest, settled, manifest)
    return manifest


def _from_cache_or_validated(data: bytes, digest: str, path: Path) -> BenchManifest:
    """Return the manifest of ``data``: from the cache, else validated (then cached).

    The cache keeps every entry whole: its module and root, and the optional
    keys it sets (``accept``, ``environment``, ``python``, ``command``).
    """
    entry = open_entry(digest)
    if entry is not None:
        return ServedManifest.serve(entry, data, path)
    manifest = parse_manifest(data, path)
    entries = manifest.task_classes.values()
    listing = (
        list(manifest.task_classes),
        [entry.module for entry in entries],
        [entry.root for entry in entries],
    )
    optional = [_optional_keys(entry) for entry in entries]
    store_listing(
        data,
        listing,
        version=manifest.schema_version,
        optional=optional if any(optional) else None,
    )
    return manifest


def _optional_keys(entry: ManifestEntry) -> dict[str, str]:
    """Return the optional keys ``entry`` sets, each value as the cache keeps it (text)."""
    kept: dict[str, str] = {}
    for key in OPTIONAL_ENTRY_KEYS:
        if key in entry.model_fields_set:
            value = getattr(entry, key)
            if key == "accept":
                kept[key] = " ".join(value)
            elif key == "command":  # JSON: no tab or newline, whatever the words hold
                kept[key] = json.dumps(list(value))
            else:
                kept[key] = value
    return kept


def clear_manifest_cache() -> None:
    """Forget every manifest :func:`load_manifest_cached` remembers in this process."""
    _cache.clear()
