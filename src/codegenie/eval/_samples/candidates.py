"""What ``grade`` grades: each case's samples, where they lie, and the identity of the whole.

:func:`open_candidates` reads ``grade``'s ``CANDIDATES`` argument once,
before any rubric runs, and yields a :class:`Candidates`:

- a directory, one candidate per case (``CANDIDATES/<case-id>/``): each case
  has one sample, without an id;
- a directory of samples (``sampled=True``, ``grade --samples``):
  ``CANDIDATES/<case-id>/<sample-id>/``, read by
  :func:`~codegenie.eval._samples.directory.find_samples`;
- a JSON Lines file of samples (always sampled), read one line at a time
  and checked whole by a :class:`~codegenie.eval._samples.jsonl.SamplesReader`,
  each sample written out as it is read into a private temporary directory
  (so memory holds one line, not the file), removed when the context ends,
  however it ends.

Every problem (a line that is not a sample, a case the task class does not
have, an entry of a case's directory that is not a sample) is reported at
once, as :class:`~codegenie.eval.errors.SamplesInvalid`, before anything runs.
The whole argument's digest (:attr:`Candidates.digest`: every case's
candidates, not only the selected ones) is the run's identity: two reports
of the same candidates carry the same one.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import stat
import tempfile
from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import final

from codegenie.eval._run.digest import DIGEST_LABEL, labelled, tree_digest
from codegenie.eval._samples.directory import Unmatched, find_samples, unmatched
from codegenie.eval._samples.jsonl import FILE_LIMIT, SamplesReader, lines_of, write_files
from codegenie.eval._tree import NO_BOUNDS
from codegenie.eval.errors import CandidatesDirInvalid, SampleProblem, SamplesInvalid

__all__ = ("Candidates", "Sample", "open_candidates")


@final
@dataclass(frozen=True, slots=True)
class Sample:
    """One sample of a case: its id (``None`` for a run's one candidate per case) and its tree."""

    id: str | None
    path: Path


@final
@dataclass(frozen=True, slots=True)
class Candidates:
    """The candidates of one grading: each case's samples, and what they are as a whole.

    ``root`` is the directory that holds one entry per case (for a JSON
    Lines file, the temporary directory it was written out to); ``shown_as``
    how messages name what the user gave (the path as typed); ``sampled``
    whether cases have samples of their own ids; ``digest`` the digest of
    the whole argument (``None`` when it cannot be read whole);
    ``unmatched`` the entries of a directory that name no case (a JSON
    Lines file's unknown cases are problems: it is read whole first).
    """

    root: Path
    shown_as: Path
    sampled: bool
    digest: str | None
    samples_of_case: Mapping[str, tuple[Sample, ...]] = field(default_factory=dict)
    unmatched: tuple[Unmatched, ...] = ()

    @classmethod
    def directory(cls, root: Path, *, shown_as: Path | None = None) -> Candidates:
        """Return one candidate per case under ``root`` (no digest): the library's plain call."""
        return cls(
            root=root, shown_as=root if shown_as is None else shown_as, sampled=False, digest=None
        )

    def samples(self, case_id: str) -> tuple[Sample, ...]:
        """Return the samples of ``case_id``, sorted by id; none when it has no candidate."""
        if self.sampled:
            return self.samples_of_case.get(case_id, ())
        path = self.root / case_id
        return (Sample(None, path),) if os.path.lexists(path) else ()

    def shown(self, case_id: str) -> Path:
        """Return how a message names the candidate (directory) of ``case_id``."""
        return self.shown_as / case_id


@contextmanager
def open_candidates(
    path: Path, case_ids: Iterable[str], *, sampled: bool, shown_as: Path | None = None
) -> Iterator[Candidates]:
    """Yield the candidates at ``path`` for a task class of ``case_ids`` (see the module).

    ``path`` is a directory, or (always sampled) a JSON Lines file.
    ``case_ids`` are every valid case of the task class. Raises
    ``CandidatesDirInvalid`` when ``path`` is neither, and ``SamplesInvalid``
    with every problem found. A JSON Lines file's samples are removed from
    disk when the context ends.
    """
    shown = path if shown_as is None else shown_as
    known = sorted(set(case_ids))
    try:
        status = os.stat(path)
    except FileNotFoundError:
        raise CandidatesDirInvalid(shown, "does not exist") from None
    except OSError as exc:
        raise CandidatesDirInvalid(shown, f"cannot be read: {exc.strerror or exc}") from None
    if stat.S_ISDIR(status.st_mode):
        yield _from_directory(path, shown, known, sampled=sampled)
    elif stat.S_ISREG(status.st_mode):
        with _from_jsonl(path, shown, known) as candidates:
            yield candidates
    else:
        raise CandidatesDirInvalid(shown, "is neither a directory nor a JSON Lines file")


def _from_directory(path: Path, shown: Path, known: list[str], *, sampled: bool) -> Candidates:
    digest = tree_digest(path, bounds=NO_BOUNDS)
    lost = unmatched(os.fspath(path), known)
    if not sampled:
        return Candidates(
            root=path,
            shown_as=shown,
            sampled=False,
            digest=labelled(digest),
            unmatched=lost,
        )
    found = find_samples(os.fspath(path), known)
    if found.problems:
        problems = tuple(
            SampleProblem(_shown(Path(where), path, shown), None, reason, _case_of(where, path))
            for where, reason in found.problems
        )
        raise SamplesInvalid(shown, problems)
    return Candidates(
        root=path,
        shown_as=shown,
        sampled=True,
        digest=labelled(digest),
        samples_of_case={
            case: tuple(Sample(sample, Path(directory)) for sample, directory in samples)
            for case, samples in found.samples.items()
        },
        unmatched=lost,
    )


@contextmanager
def _from_jsonl(path: Path, shown: Path, known: list[str]) -> Iterator[Candidates]:
    """Read, check and write out a JSON Lines file's samples one line at a time.

    Each line's files are written to a directory of its own (by line) as
    soon as the line is checked, and only its case, id and line are kept;
    once the whole file is read and found valid, each line's directory is
    moved to ``<case>/<sample>``. What this holds in memory is bounded by
    the reader's limits, whatever the file holds; a file with any problem
    is refused with all of them, and everything written is removed.
    """
    hasher = hashlib.blake2b(digest_size=32)
    top = Path(tempfile.mkdtemp(prefix="codegenie-samples-"))
    try:
        root = top / "samples"
        staged = top / "lines"
        os.mkdir(root, 0o755)
        os.mkdir(staged, 0o755)
        reader = SamplesReader(known)
        try:
            with open(path, "rb") as file:
                size = os.fstat(file.fileno()).st_size
                if size > FILE_LIMIT:
                    message = f"the file holds more than {FILE_LIMIT:,} bytes"
                    raise SamplesInvalid(shown, (SampleProblem(shown, None, message),))
                for raw in lines_of(file):
                    entry = reader.add(raw)
                    if reader.full:
                        break
                    if raw is None or reader.failed:
                        continue  # refused anyway: neither its digest nor its samples are needed
                    hasher.update(raw)
                    if entry is not None:
                        write_files(entry[2], os.fspath(staged / str(reader.lines)))
        except OSError as exc:
            raise CandidatesDirInvalid(shown, f"cannot be read: {exc.strerror or exc}") from None
        places, problems = reader.finish()
        if problems:
            raise SamplesInvalid(
                shown,
                tuple(SampleProblem(shown, p.line, p.message, p.case) for p in problems),
            )
        by_case: dict[str, list[Sample]] = {}
        for place in places:
            case_directory = root / place.case
            if place.case not in by_case:
                os.mkdir(case_directory, 0o755)
                by_case[place.case] = []
            directory = case_directory / place.sample
            os.rename(staged / str(place.line), directory)
            by_case[place.case].append(Sample(place.sample, directory))
        yield Candidates(
            root=root,
            shown_as=shown,
            sampled=True,
            digest=DIGEST_LABEL + hasher.hexdigest(),
            samples_of_case={
                case: tuple(sorted(found, key=lambda sample: sample.id or ""))
                for case, found in by_case.items()
            },
        )
    finally:
        shutil.rmtree(top, ignore_errors=True)


def _case_of(where: str, root: Path) -> str | None:
    """Return the case id a problem's path lies under (its first part below ``root``)."""
    relative = os.path.relpath(where, root)
    first = relative.split(os.sep, 1)[0]
    return None if first in {".", ".."} else first


def _shown(where: Path, root: Path, shown: Path) -> Path:
    """Return ``where`` (under ``root``) as the user names it: under ``shown``."""
    try:
        return shown / where.relative_to(root)
    except ValueError:
        return where
