"""Which cases of a task class did not pass when it was last graded (``grade --lf``).

One small file per bench and task class in ``<cache home>/last-failed``,
kept by the rules of :mod:`codegenie.eval._cache.directory`: a private
directory, files reached through it, written atomically, authenticated with
the directory's keyed checksum. Like every cache, anything off (a missing,
foreign, edited or unreadable file; a platform without the rules) reads as
"nothing known", never as an error.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable
from pathlib import Path

from codegenie.eval._cache import directory as _directory
from codegenie.eval._cache.directory import (
    checksum,
    hash_hex,
    open_directory,
    open_private,
    open_to_read,
    read_key,
    read_or_make_key,
    write_file,
)

__all__ = ("DIRECTORY", "read_last_failed", "write_last_failed")

DIRECTORY = "last-failed"
# A record is a few case ids; anything bigger was not written by us.
_LIMIT = 1 << 20


def _name(manifest: Path, task_class: str, candidates: Path | None) -> str:
    where = f"{os.path.abspath(manifest)}\0{task_class}"
    if candidates is not None:
        where += f"\0{os.path.abspath(candidates)}"
    return hash_hex(where.encode("utf-8", "surrogateescape"))[:40] + ".json"


def read_last_failed(
    manifest: Path, task_class: str, candidates: Path | None = None
) -> frozenset[str] | None:
    """Return the case ids that did not pass last time; ``None`` when nothing is known.

    What is known is kept per bench, task class and ``candidates`` (the
    directory or file graded): grading another model's candidates in
    between forgets nothing of these.
    """
    directory = open_to_read(DIRECTORY)
    if directory is None:
        return None
    try:
        key = read_key(directory)
        opened = open_private(directory, _name(manifest, task_class, candidates), _LIMIT)
        if key is None or opened is None:
            return None
        fd, size = opened
        try:
            data = os.pread(fd, size, 0)
        finally:
            os.close(fd)
    except OSError:
        return None
    finally:
        os.close(directory)
    signature, _, body = data.partition(b"\n")
    if signature.decode("ascii", "replace") != checksum(key, body):
        return None
    try:
        document = json.loads(body)
    except ValueError:
        return None
    if not isinstance(document, dict) or document.get("task_class") != task_class:
        return None
    failed = document.get("failed")
    if not isinstance(failed, list):
        return None
    return frozenset(case for case in failed if isinstance(case, str))


def write_last_failed(
    manifest: Path,
    task_class: str,
    graded: Iterable[str],
    not_passed: Iterable[str],
    candidates: Path | None = None,
) -> None:
    """Record a grading of ``candidates``: ``graded`` ran now, ``not_passed`` of them did not pass.

    Cases not graded now keep what was known of them. Nothing is raised: a
    cache that cannot be written is no cache.
    """
    if not _directory.SUPPORTED:  # looked up here, as every writer does: tests turn it off
        return
    earlier = read_last_failed(manifest, task_class, candidates) or frozenset()
    failed = sorted((earlier - set(graded)) | set(not_passed))
    body = json.dumps({"task_class": task_class, "failed": failed}).encode()
    try:
        directory = open_directory(DIRECTORY, create=True)
        if directory is None:
            return
        try:
            key = read_or_make_key(directory)
            signed = checksum(key, body).encode("ascii") + b"\n" + body
            write_file(directory, _name(manifest, task_class, candidates), signed)
        finally:
            os.close(directory)
    except OSError:
        return
