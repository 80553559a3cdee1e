r"""Checking a requirements file (pip's format) before uv sees it, every problem with its line.

What an environment may be declared with: requirement specifiers
(``numpy==2.1.3``, markers, extras, ``name @ URL``), each optionally
followed by ``--hash=ALGO:HEX`` options, comments, blank lines, ``\``
continuations, and the options that say where packages come from
(``--index-url``, ``--extra-index-url``, ``--find-links``, ``--no-index``)
or which kind to take (``--only-binary``, ``--no-binary``,
``--prefer-binary``, ``--pre``, ``--require-hashes``). Refused, each with
the reason: ``-r``/``-c`` (another file's bytes would change the
environment without changing this file's, and its digest is this file's),
``-e`` (an editable install is a path, not a package), a bare path or URL
(name it: ``pkg @ file:///…``), and any other option.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Final, final

from packaging.requirements import InvalidRequirement, Requirement

__all__ = ("RequirementsProblem", "requirements_problems")

# Options of a line of their own that say where packages come from, or which kind to take.
_SOURCE_OPTIONS: Final = frozenset(
    {
        "-i",
        "--index-url",
        "--extra-index-url",
        "-f",
        "--find-links",
        "--no-index",
        "--only-binary",
        "--no-binary",
        "--prefer-binary",
        "--pre",
        "--require-hashes",
    }
)
_REFUSED: Final = {
    "-r": "includes another file: list its requirements here (this file's bytes "
    "are the environment's identity)",
    "--requirement": "includes another file: list its requirements here (this file's "
    "bytes are the environment's identity)",
    "-c": "includes a constraints file: pin the versions here instead",
    "--constraint": "includes a constraints file: pin the versions here instead",
    "-e": "an editable install is a directory, not a package: build a wheel of it "
    "and name it (`pkg @ file:///…/pkg.whl`)",
    "--editable": "an editable install is a directory, not a package: build a wheel "
    "of it and name it (`pkg @ file:///…/pkg.whl`)",
}
# A comment starts at a "#" that starts the line or follows whitespace (pip's rule). Found
# with a look-behind, then cut with the whitespace before it: the pattern pip writes,
# (^|\s+)#.*$, backtracks over every run of whitespace, quadratic in a line's length.
_COMMENT: Final = re.compile(r"(?:^|(?<=\s))#")
_HASH: Final = re.compile(r"--hash[=\s]\s*([A-Za-z0-9]+):([0-9A-Fa-f]+)$")
_PATH_LIKE: Final = re.compile(r"^(\.{0,2}/|~|[A-Za-z][A-Za-z0-9+.-]*://|file:)")


@final
@dataclass(frozen=True, slots=True)
class RequirementsProblem:
    """One problem of a requirements file: its ``line`` (1-based) and what is wrong."""

    line: int
    message: str


def _uncommented(raw: str) -> str:
    found = _COMMENT.search(raw)
    return raw if found is None else raw[: found.start()].rstrip()


def _logical_lines(text: str) -> list[tuple[int, str]]:
    """Return ``(first line number, text)`` per logical line: comments cut, continuations joined."""
    lines: list[tuple[int, str]] = []
    pending: list[str] = []
    start = 0
    for number, raw in enumerate(text.splitlines(), start=1):
        if not pending:
            start = number
        stripped = _uncommented(raw) if not pending or raw.lstrip() else raw
        if stripped.endswith("\\"):
            pending.append(stripped[:-1])
            continue
        pending.append(stripped)
        lines.append((start, " ".join(part.strip() for part in pending).strip()))
        pending = []
    if pending:
        lines.append((start, " ".join(part.strip() for part in pending).strip()))
    return [(number, line) for number, line in lines if line]


def _option_problem(line: str) -> str | None:
    name = re.split(r"[=\s]", line, maxsplit=1)[0]
    if name in _REFUSED:
        return f"{name} is not allowed: {_REFUSED[name]}"
    if name in _SOURCE_OPTIONS:
        return None
    return f"unknown option {name!r}: a line may hold a requirement or an index option"


def _requirement_problem(line: str) -> str | None:
    specifier, _, options = line.partition(" --")
    options = f"--{options}" if options else ""
    for option in re.split(r"\s+(?=--)", options) if options else ():
        if not _HASH.fullmatch(option.strip()):
            return f"only --hash=ALGO:HEX may follow a requirement, not {option.split('=')[0]!r}"
    specifier = specifier.strip()
    if _PATH_LIKE.match(specifier):
        return (
            f"{specifier!r} is a path or URL without a name: name it "
            "(`pkg @ file:///…/pkg.whl`), so the environment says what it holds"
        )
    try:
        Requirement(specifier)
    except InvalidRequirement as exc:
        reason = str(exc).splitlines()[0] if str(exc) else "not a requirement"
        return f"cannot read {specifier!r} as a requirement: {reason}"
    return None


def requirements_problems(data: bytes) -> list[RequirementsProblem]:
    """Return every problem of a requirements file's bytes ``data``; empty when it is usable."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        at = data[: exc.start].count(b"\n") + 1
        return [RequirementsProblem(at, "is not UTF-8 text")]
    if text.startswith("\ufeff"):
        text = text[1:]
    if "\0" in text:
        at = text[: text.index("\0")].count("\n") + 1
        return [RequirementsProblem(at, "holds a NUL byte: not a requirements file")]
    problems: list[RequirementsProblem] = []
    for number, line in _logical_lines(text):
        problem = _option_problem(line) if line.startswith("-") else _requirement_problem(line)
        if problem is not None:
            problems.append(RequirementsProblem(number, problem))
    return problems
