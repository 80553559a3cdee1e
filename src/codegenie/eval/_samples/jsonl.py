"""Samples given as JSON Lines: one sample a line, every line checked before anything runs.

A line is ``{"case": "<case-id>", "files": {"<relative path>": "<text>"}}``
with an optional ``"sample": "<id>"``; a line without one is numbered in
file order within its case (``"1"``, ``"2"``, …, skipping the ids other
lines give). A :class:`SamplesReader` is fed the file's lines one at a time
(:func:`lines_of` reads them, bounded) and hands back each line's sample as
it is checked, keeping only its case, id and line; its
:meth:`~SamplesReader.finish` numbers the samples and returns every
problem, each with its line, so that a user fixes a file in one go.
:func:`read_samples` does both for lines already in memory:

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
- more than :data:`LINES_LIMIT` lines (blank ones count: the file is
  read no further), a line over :data:`LINE_LIMIT` bytes (never held
  whole), a file that is not UTF-8;
- a line holding more than :data:`CONTAINERS_LIMIT` JSON arrays and objects
  or more than :data:`VALUES_LIMIT` values, found before it is parsed: a
  sample is one object with one ``files`` object, and what parsing a line
  costs in memory stays a small multiple of its length.

So what reading a file costs in memory is bounded by the limits, whatever
the file holds: one line at a time, a few dozen bytes for each of at most
:data:`LINES_LIMIT` samples, and at most :data:`PROBLEMS_LIMIT` problems
(the rest are counted, in one last problem).

:func:`write_sample` then writes one sample's files under a directory of
its own (never following a link, never over an existing file), where it is
graded as any candidate directory.
"""

from __future__ import annotations

import contextlib
import difflib
import json
import os
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any, BinaryIO, Final, final

from codegenie.eval._tree import DEPTH_LIMIT, ENTRIES_LIMIT
from codegenie.eval.cases import case_id_problem

__all__ = (
    "CONTAINERS_LIMIT",
    "FILE_LIMIT",
    "LINES_LIMIT",
    "LINE_LIMIT",
    "NAME_LIMIT",
    "PROBLEMS_LIMIT",
    "VALUES_LIMIT",
    "JsonlPlace",
    "JsonlProblem",
    "JsonlSample",
    "SamplesReader",
    "lines_of",
    "path_problem",
    "read_samples",
    "write_files",
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
#: The most problems kept and reported; those past it are counted, not kept.
PROBLEMS_LIMIT: Final = 1_000
#: The most JSON arrays and objects one line may hold (a sample has two objects).
CONTAINERS_LIMIT: Final = 64
#: The most JSON values one line may hold, counted by the commas between them:
#: room for a sample of as many files as a candidate may hold (:data:`ENTRIES_LIMIT`).
VALUES_LIMIT: Final = ENTRIES_LIMIT + 64
_KEYS: Final = frozenset({"case", "files", "sample"})
#: How much of an over-long line is read at a time while it is passed over.
_SKIP_CHUNK: Final = 1024 * 1024


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
class JsonlPlace:
    """Where one checked sample goes: its case, its id (given or numbered), and its line."""

    case: str
    sample: str
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


def lines_of(file: BinaryIO) -> Iterator[bytes | None]:
    """Yield the lines of ``file`` one at a time, each with its newline; ``None`` for a long one.

    A line over :data:`LINE_LIMIT` bytes (newline included) is never held
    whole: it is read on in chunks of bounded size to its end, and yielded
    as ``None``, so that later lines keep their numbers. The caller counts
    lines and stops iterating at its limit; nothing past it is read.
    """
    while True:
        line = file.readline(LINE_LIMIT + 1)
        if not line:
            return
        if len(line) <= LINE_LIMIT:
            yield line
            continue
        while not line.endswith(b"\n"):
            line = file.readline(_SKIP_CHUNK)
            if not line:
                break
        yield None


@final
class SamplesReader:
    """Checks a JSON Lines file of samples one line at a time, keeping what numbering needs.

    Feed each line to :meth:`add` (``None`` for a line over
    :data:`LINE_LIMIT` bytes, as :func:`lines_of` yields it) while
    :attr:`full` is false; then call :meth:`finish`. What the reader keeps
    grows by a few dozen bytes a line and by at most :data:`PROBLEMS_LIMIT`
    problems, whatever the lines hold.
    """

    __slots__ = (
        "_count",
        "_entries",
        "_given",
        "_known",
        "_known_set",
        "_over",
        "_problems",
    )

    def __init__(self, case_ids: Iterable[str]) -> None:
        self._known: Final = sorted(set(case_ids))
        self._known_set: Final = {case: case for case in self._known}
        self._count = 0
        self._entries: list[tuple[int, str, str | None]] = []
        self._given: dict[str, set[str]] = {}
        self._problems = _Capped()
        self._over: JsonlProblem | None = None

    @property
    def full(self) -> bool:
        """Whether the file has more lines than :data:`LINES_LIMIT`: read no further."""
        return self._over is not None

    @property
    def lines(self) -> int:
        """How many lines were fed so far: the number of the last one."""
        return self._count

    @property
    def failed(self) -> bool:
        """Whether any problem was found so far (the file will be refused)."""
        return bool(self._problems) or self._over is not None

    def add(self, raw: bytes | None) -> tuple[str, str | None, dict[str, str]] | None:
        """Check the next line; return its ``(case, sample id or None, files)`` if it is a sample.

        A blank line, a line with a problem (recorded), and any line once
        the reader is :attr:`full` return ``None``; a line past
        :data:`LINES_LIMIT` makes the reader full.
        """
        if self._over is not None:
            return None
        self._count += 1
        number = self._count
        if number > LINES_LIMIT:
            self._over = JsonlProblem(number, f"the file has more than {LINES_LIMIT:,} lines")
            return None
        if raw is None:
            self._problems.extend(
                [JsonlProblem(number, f"the line is longer than {LINE_LIMIT:,} bytes")]
            )
            return None
        if not raw.strip():
            return None
        found: list[JsonlProblem] = []
        entry = _parse(number, raw, self._known, self._known_set, found)
        if found:
            self._problems.extend(found)
            return None
        if entry is None:  # pragma: no cover - a line without a problem is a sample
            return None
        case, sample, files = entry
        if sample is not None:
            self._given.setdefault(case, set()).add(sample)
        self._entries.append((number, case, sample))
        return case, sample, files

    def finish(self) -> tuple[list[JsonlPlace], list[JsonlProblem]]:
        """Return every sample's place (file order) and every problem (line order).

        A sample given twice is a problem of its later line. Past
        :data:`PROBLEMS_LIMIT` problems, one last problem counts the rest;
        a file over :data:`LINES_LIMIT` lines always ends the list with that.
        """
        places: list[JsonlPlace] = []
        counters: dict[str, int] = {}
        seen: dict[tuple[str, str], int] = {}
        duplicates = _Capped()
        for line, case, given_id in self._entries:
            sample = given_id
            if sample is None:
                taken = self._given.get(case, set())
                count = counters.get(case, 0) + 1
                while str(count) in taken:
                    count += 1
                counters[case] = count
                sample = str(count)
            first = seen.setdefault((case, sample), line)
            if first != line:
                message = (
                    f"sample {sample!r} of case {case!r} is given twice (first on line {first})"
                )
                duplicates.extend([JsonlProblem(line, message, case)])
                continue
            places.append(JsonlPlace(case, sample, line))
        listed = sorted(self._problems.kept + duplicates.kept, key=lambda problem: problem.line)
        lost = [problem.line for problem in listed[PROBLEMS_LIMIT:]]
        lost += [capped.first_lost for capped in (self._problems, duplicates) if capped.lost]
        problems = listed[:PROBLEMS_LIMIT]
        if lost:
            unlisted = self._problems.lost + duplicates.lost + len(listed) - len(problems)
            message = (
                f"{unlisted:,} more problems from this line on are not listed "
                f"(only the first {PROBLEMS_LIMIT:,} are)"
            )
            problems.append(JsonlProblem(min(lost), message))
        if self._over is not None:
            problems.append(self._over)
        return places, problems


@final
class _Capped:
    """Problems found in line order: the first :data:`PROBLEMS_LIMIT` kept, the rest counted.

    Whatever is lost lies on or after ``first_lost``, which is on or after
    every kept problem's line.
    """

    __slots__ = ("first_lost", "kept", "lost")

    def __init__(self) -> None:
        self.kept: list[JsonlProblem] = []
        self.lost = 0
        self.first_lost = 0

    def __bool__(self) -> bool:
        return bool(self.kept)

    def extend(self, found: Iterable[JsonlProblem]) -> None:
        for problem in found:
            if len(self.kept) < PROBLEMS_LIMIT:
                self.kept.append(problem)
            else:
                if not self.lost:
                    self.first_lost = problem.line
                self.lost += 1


def read_samples(
    lines: Iterable[bytes | None], case_ids: Iterable[str]
) -> tuple[list[JsonlSample], list[JsonlProblem]]:
    """Read samples from ``lines`` (a file's lines, as bytes) for a task class of ``case_ids``.

    Returns the valid samples in file order and every problem in line
    order (see :class:`SamplesReader`); a sample with a problem is left
    out. Blank lines are passed over but counted. Each sample's files are
    kept in memory: for a file, feed a :class:`SamplesReader` instead.
    """
    reader = SamplesReader(case_ids)
    files: dict[int, dict[str, str]] = {}
    for number, raw in enumerate(lines, start=1):
        entry = reader.add(raw)
        if reader.full:
            break
        if entry is not None:
            files[number] = entry[2]
    places, problems = reader.finish()
    samples = [JsonlSample(p.case, p.sample, files[p.line], p.line) for p in places]
    return samples, problems


def _shape_problem(raw: bytes) -> str | None:
    """Return why ``raw`` holds too many JSON containers or values to parse, or ``None``.

    Counted outside strings, before parsing, in time and memory linear in
    the line: a line of ``[{},{},…]`` or ``["ab","ab",…]`` would otherwise
    cost many times its length in objects.
    """
    if raw.count(b"{") + raw.count(b"[") <= CONTAINERS_LIMIT and raw.count(b",") <= VALUES_LIMIT:
        return None  # the quick answer for every ordinary line: strings hold nothing counted
    # Escapes go in pairs from the left, as bytes.replace scans: what is left of '"' delimits.
    plain = raw.replace(b"\\\\", b"").replace(b'\\"', b"")
    if plain.count(b'"') > 4 * VALUES_LIMIT:
        return _too_many_values()
    bare = b"".join(plain.split(b'"')[0::2])
    containers = bare.count(b"{") + bare.count(b"[")
    if containers > CONTAINERS_LIMIT:
        return (
            f"the line holds {containers:,} JSON arrays and objects (at most {CONTAINERS_LIMIT} "
            "are read); a sample is one object with one 'files' object"
        )
    if bare.count(b",") > VALUES_LIMIT:
        return _too_many_values()
    return None


def _too_many_values() -> str:
    return (
        f"the line holds more than {VALUES_LIMIT:,} JSON values; a sample holds no more "
        f"files than a candidate may ({ENTRIES_LIMIT:,} entries)"
    )


def _parse(
    number: int,
    raw: bytes,
    known: list[str],
    known_set: Mapping[str, str],
    problems: list[JsonlProblem],
) -> tuple[str, str | None, dict[str, str]] | None:
    """Return one line's ``(case, sample or None, files)``, or record its problems."""
    shape = _shape_problem(raw)
    if shape is not None:
        problems.append(JsonlProblem(number, shape))
        return None
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
    if case in known_set:
        case = known_set[case]  # one string per case id, however many lines name it
    else:
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
    return case, sample, files


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


def write_sample(sample: JsonlSample, directory: str) -> None:
    """Write ``sample``'s files under ``directory``, as :func:`write_files` does."""
    write_files(sample.files, directory)


def write_files(files: Mapping[str, str], directory: str) -> None:
    """Write ``files`` (checked paths: text) under ``directory``, which must not exist yet; make it.

    Directories are made as the paths need them; nothing is followed or
    overwritten (``O_EXCL | O_NOFOLLOW``). Text is written as UTF-8.
    """
    os.mkdir(directory, 0o755)
    top = os.open(directory, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW)
    try:
        for path, text in sorted(files.items()):
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
