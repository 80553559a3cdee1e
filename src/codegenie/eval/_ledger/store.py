"""The validation ledger's store: rubric results by run key, under the cache's rules.

An unchanged case is never run again: ``check --rubrics`` and ``grade`` look
a run up by its key (:func:`codegenie.eval._run.spec.RunSpec.key`) before they
start it, and store what a finished run gave. The store is a private cache
directory beside the manifest cache and follows the same rules
(:mod:`codegenie.eval._cache.directory`): private directory, entries
authenticated with the directory's keyed checksum, written atomically,
bounded in number and size, and anything off — missing, foreign, damaged,
edited — is a miss, never an error. A result is stored as the JSON document
its caller gives; what to store (never a flaky run, never an interrupted one)
is the caller's decision.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from typing import Any, Final, final

from codegenie.eval._cache import directory as _directory
from codegenie.eval._cache.directory import (
    checksum,
    open_directory,
    open_private,
    prune,
    read_or_make_key,
    write_file,
)
from codegenie.eval._version import __version__

__all__ = ("DIRECTORY", "ResultStore")

#: The store's directory under the cache home, beside the manifests'.
DIRECTORY: Final = "results"
_MAGIC: Final = f"codegenie-eval result 1 {__version__}"
_SUFFIX: Final = ".result"
_HEX: Final = frozenset("0123456789abcdef")
#: The largest entry read: a result holds at most 1 MiB of verdict and 64 KiB of stderr.
_MAX_ENTRY: Final = 4 * 1024 * 1024
_KEEP: Final = 200_000
_KEEP_BYTES: Final = 512 * 1024 * 1024


def _owned(name: str) -> bool:
    return len(name) == 64 + len(_SUFFIX) and name.endswith(_SUFFIX) and _HEX.issuperset(name[:64])


@final
class ResultStore:
    """An open result store. Use :meth:`open`; :meth:`close` when done (prunes once).

    Never raises for what is on disk: :meth:`get` answers ``None`` for
    anything it cannot trust, :meth:`put` does nothing when it cannot write.
    """

    def __init__(self, directory: int, key: bytes) -> None:
        self._directory = directory
        self._key = key
        self._written = 0

    @classmethod
    def open(cls) -> ResultStore | None:
        """Open (creating it private) the user's result store; ``None`` when it cannot be used."""
        if not _directory.SUPPORTED:
            return None
        try:
            directory = open_directory(DIRECTORY, create=True)
        except OSError:
            return None
        if directory is None:
            return None
        try:
            key = read_or_make_key(directory)
        except OSError:
            os.close(directory)
            return None
        return cls(directory, key)

    def __enter__(self) -> ResultStore:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def get(self, run_key: str) -> dict[str, Any] | None:
        """Return the result stored under ``run_key``; ``None`` for a miss of any kind."""
        if len(run_key) != 64 or not _HEX.issuperset(run_key):
            return None
        opened = open_private(self._directory, run_key + _SUFFIX, _MAX_ENTRY)
        if opened is None:
            return None
        fd, size = opened
        try:
            data = os.pread(fd, size, 0)
        except OSError:
            return None
        finally:
            os.close(fd)
        try:
            magic, recorded, signature, payload = data.split(b"\n", 3)
            if magic.decode() != _MAGIC or recorded.decode() != run_key:
                return None
            if checksum(self._key, b"\n".join((magic, recorded, payload))) != signature.decode():
                return None
            value = json.loads(payload)
        except (ValueError, UnicodeDecodeError):
            return None
        if not isinstance(value, dict):
            return None
        return value

    def put(self, run_key: str, result: Mapping[str, Any]) -> None:
        """Store ``result`` (a JSON-ready mapping) under ``run_key``; never raises."""
        if len(run_key) != 64 or not _HEX.issuperset(run_key):
            return
        try:
            payload = json.dumps(result, sort_keys=True, allow_nan=False).encode()
        except (TypeError, ValueError):
            return
        head = b"\n".join((_MAGIC.encode(), run_key.encode()))
        signature = checksum(self._key, head + b"\n" + payload).encode()
        content = b"\n".join((head, signature, payload))
        if len(content) > _MAX_ENTRY:
            return
        try:
            write_file(self._directory, run_key + _SUFFIX, content)
        except OSError:
            return
        self._written += 1

    def close(self) -> None:
        """Prune the store (when this run wrote to it), then close it."""
        if self._directory < 0:
            return
        try:
            if self._written:
                prune(self._directory, _owned, keep=_KEEP, keep_bytes=_KEEP_BYTES)
        except OSError:
            pass
        finally:
            os.close(self._directory)
            self._directory = -1
