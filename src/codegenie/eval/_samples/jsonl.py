"""Samples given as JSON Lines: one sample a line, every line checked before anything runs.

A line is ``{"case": "<case-id>", "files": {"<relative path>": "<text>"}}``
with an optional ``"sample": "<id>"``; a line without one is numbered in
file order within its case (``"1"``, ``"2"``, …, skipping the ids other
lines give). :func:`read_samples` reads the whole file and returns the
samples *and* every problem, each with its line, so that a user fixes a
file in one go:

- a line that is not one JSON object, or whose keys or values are not the
  ones above (another key, a ``files`` that is not an object of strings);
- a case id that is not a case of the task class (with the closest ids);
- a sample id that breaks the case-id rules, or a ``(case, sample)`` given
  twice;
- a path that is absolute, empty, has an empty, ``.`` or ``..`` part, a
  NUL, a backslash or a lone surrogate, more parts than a candidate may
  have levels (:data:`~codegenie.eval._tree.DEPTH_LIMIT`) or a part over
  :data:`NAME_LIMIT` bytes, or names a file and a directory at once (``a``
  and ``a/b``), and a key given twice in one ``files`` object;
- more than :data:`LINES_LIMIT` lines, a line over :data:`LINE_LIMIT`
  bytes, a file that is not UTF-8.

:func:`write_sample` then writes one sample's files under a directory of
its own (never following a link, never over an existing file), where it is
graded as any candidate directory.
"""

from __future__ import annotations

import contextlib
import difflib
import json
import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Final, final

from codegenie.eval._tree import DEPTH_LIMIT
from codegenie.eval.cases import case_id_problem

__all__ = (
    "FILE_LIMIT",
    "LINES_LIMIT",
    "LINE_LIMIT",
    "NAME_LIMIT",
    "JsonlProblem",
    "JsonlSample",
    "path_problem",
    "read_samples",
    "write_sample",
)

#: The most lines (samples) one file may hold: 164 problems x 200 samples fit many times.
LINES_LIMIT: Final = 1_000_000
#: The most bytes one line (one sample's files, as JSON) may hold.
LINE_LIMIT: Final = 16 * 1024 * 1024
#: The most bytes one file of samples may hold.
FILE_LIMIT: Final = 4 * 1024 * 1024 * 1024
#: The most bytes one part of a path may take (``NAME_MAX``): a longer name cannot be made.
NAME_LIMIT: Final = 255
_KEYS: Final = frozenset({"case", "files", "sample"})


@final
@dataclass(frozen=True, slots=True)
class JsonlSample:
    """One sample of a JSON Lines file: its case, its id, its files, and the line it is on."""

    case: str
    sample: str
    files: Mapping[str, str]
    line: int


@final
@dataclass(frozen=True, slots=True)
class JsonlProblem:
    """What is wrong with one line: ``line`` (1-based), ``message``, and the ``case`` if known."""

    line: int
    message: str
    case: str | None = None


def path_problem(path: str) -> str | None:
    """Return why ``path`` cannot name a file of a sample, or ``None`` when it can."""
    if not path:
        return "the path is empty"
    if "\0" in path:
        return "the path holds a NUL character"
    if "\\" in path:
        return "the path holds a backslash; separate its parts with '/'"
    if path.startswith("/"):
        return "the path is absolute; give it relative to the sample's directory"
    if any("\ud800" <= char <= "\udfff" for char in path):
        return "the path holds a lone surrogate (an unpaired \\ud800-\\udfff escape): not text"
    parts = path.split("/")
    if any(part in ("", ".", "..") for part in parts):
        return "the path has an empty, '.' or '..' part; it must stay inside the sample"
    if len(parts) > DEPTH_LIMIT:
        return f"the path is deeper than {DEPTH_LIMIT} levels (a candidate may be no deeper)"
    if any(len(part.encode()) > NAME_LIMIT for part in parts):
        return f"a part of the path is longer than {NAME_LIMIT} bytes (as UTF-8)"
    return None


def read_samples(
    lines: Iterable[bytes], case_ids: Iterable[str]
) -> tuple[list[JsonlSample], list[JsonlProblem]]:
    """Read samples from ``lines`` (a file's lines, as bytes) for a task class of ``case_ids``.

    Returns the valid samples in file order and every problem in line
    order; a sample with a problem is left out. Blank lines are passed
    over.
    """
    known = sorted(set(case_ids))
    known_set = frozenset(known)
    parsed: list[tuple[int, str, str | None, dict[str, str]]] = []
    problems: list[JsonlProblem] = []
    for number, raw in enumerate(lines, start=1):
        if number > LINES_LIMIT:
            problems.append(JsonlProblem(number, f"the file has more than {LINES_LIMIT:,} lines"))
            break
        if len(raw) > LINE_LIMIT:
            problems.append(JsonlProblem(number, f"the line is longer than {LINE_LIMIT:,} bytes"))
            continue
        if not raw.strip():
            continue
        entry = _parse(number, raw, known, known_set, problems)
        if entry is not None:
            parsed.append(entry)
    return _number(parsed, problems), sorted(problems, key=lambda problem: problem.line)


def _parse(
    number: int,
    raw: bytes,
    known: list[str],
    known_set: frozenset[str],
    problems: list[JsonlProblem],
) -> tuple[int, str, str | None, dict[str, str]] | None:
    """Return one line's ``(line, case, sample or None, files)``, or record its problems."""
    try:
        text = raw.decode("utf-8")
        value = json.loads(text, object_pairs_hook=_pairs)
    except UnicodeDecodeError:
        problems.append(JsonlProblem(number, "the line is not UTF-8"))
        return None
    except (ValueError, RecursionError) as exc:
        problems.append(JsonlProblem(number, f"the line is not JSON: {_short(exc)}"))
        return None
    if not isinstance(value, _Object):
        problems.append(JsonlProblem(number, "the line is not a JSON object"))
        return None
    fields = value.fields
    before = len(problems)
    for key in value.repeated:
        problems.append(JsonlProblem(number, f"the key {key!r} is given twice"))
    extra = sorted(set(fields) - _KEYS)
    if extra:
        listed = ", ".join(repr(key) for key in extra)
        problems.append(
            JsonlProblem(number, f"unknown key(s) {listed}; a line has 'case', 'files', 'sample'")
        )
    case = fields.get("case")
    if not isinstance(case, str):
        problems.append(JsonlProblem(number, "'case' must be a string: the case id"))
        return None
    if case not in known_set:
        close = difflib.get_close_matches(case, known, n=3, cutoff=0.6)
        hint = f"; did you mean {', '.join(map(repr, close))}?" if close else ""
        problems.append(JsonlProblem(number, f"no case {case!r} in this task class{hint}", case))
    sample = fields.get("sample")
    if sample is not None:
        if not isinstance(sample, str):
            problems.append(JsonlProblem(number, "'sample' must be a string", case))
            sample = None
        elif (reason := case_id_problem(sample)) is not None:
            problems.append(JsonlProblem(number, f"invalid sample id {sample!r}: {reason}", case))
    files = _files(number, case, fields.get("files"), problems)
    if files is None or len(problems) != before:
        return None
    return number, case, sample, files


def _files(
    number: int, case: str, value: Any, problems: list[JsonlProblem]
) -> dict[str, str] | None:
    """Return a line's ``files``, or record what is wrong with them."""
    if not isinstance(value, _Object):
        problems.append(JsonlProblem(number, "'files' must be an object of path: text", case))
        return None
    for key in value.repeated:
        problems.append(JsonlProblem(number, f"the file {key!r} is given twice", case))
    files: dict[str, str] = {}
    for path, text in value.fields.items():
        reason = path_problem(path)
        if reason is not None:
            problems.append(JsonlProblem(number, f"{path!r}: {reason}", case))
        elif not isinstance(text, str):
            problems.append(JsonlProblem(number, f"{path!r}: a file's content must be text", case))
        else:
            files[path] = text
    directories = {"/".join(p.split("/")[:i]) for p in files for i in range(1, p.count("/") + 1)}
    for path in sorted(directories & files.keys()):
        problems.append(JsonlProblem(number, f"{path!r} is both a file and a directory", case))
    return files


def _number(
    parsed: list[tuple[int, str, str | None, dict[str, str]]], problems: list[JsonlProblem]
) -> list[JsonlSample]:
    """Give each sample its id (file order within its case), refusing ids given twice."""
    given: dict[str, set[str]] = {}
    for _, case, sample, _ in parsed:
        if sample is not None:
            given.setdefault(case, set()).add(sample)
    counters: dict[str, int] = {}
    seen: dict[tuple[str, str], int] = {}
    samples: list[JsonlSample] = []
    for line, case, given_id, files in parsed:
        sample = given_id
        if sample is None:
            taken = given.get(case, set())
            count = counters.get(case, 0) + 1
            while str(count) in taken:
                count += 1
            counters[case] = count
            sample = str(count)
        first = seen.setdefault((case, sample), line)
        if first != line:
            message = f"sample {sample!r} of case {case!r} is given twice (first on line {first})"
            problems.append(JsonlProblem(line, message, case))
            continue
        samples.append(JsonlSample(case, sample, files, line))
    return samples


def write_sample(sample: JsonlSample, directory: str) -> None:
    """Write ``sample``'s files under ``directory``, which must not exist yet; make it.

    Directories are made as the paths need them; nothing is followed or
    overwritten (``O_EXCL | O_NOFOLLOW``). Text is written as UTF-8.
    """
    os.mkdir(directory, 0o755)
    top = os.open(directory, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW)
    try:
        for path, text in sorted(sample.files.items()):
            *parents, name = path.split("/")
            held = [top]
            try:
                for part in parents:
                    with contextlib.suppress(FileExistsError):
                        os.mkdir(part, 0o755, dir_fd=held[-1])
                    held.append(
                        os.open(part, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW, dir_fd=held[-1])
                    )
                flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW
                fd = os.open(name, flags, 0o644, dir_fd=held[-1])
                try:
                    view = memoryview(text.encode("utf-8", "surrogatepass"))
                    while view:
                        view = view[os.write(fd, view) :]
                finally:
                    os.close(fd)
            finally:
                for fd in held[1:]:
                    os.close(fd)
    finally:
        os.close(top)


@final
class _Object:
    """A JSON object as read: its fields (the last value of a repeated key) and repeated keys."""

    __slots__ = ("fields", "repeated")

    def __init__(self, pairs: list[tuple[str, Any]]) -> None:
        self.fields: dict[str, Any] = {}
        self.repeated: list[str] = []
        for key, value in pairs:
            if key in self.fields and key not in self.repeated:
                self.repeated.append(key)
            self.fields[key] = value


def _pairs(pairs: list[tuple[str, Any]]) -> _Object:
    return _Object(pairs)


def _short(exc: BaseException) -> str:
    text = str(exc) or type(exc).__name__
    return text if len(text) <= 200 else text[:199] + "…"
