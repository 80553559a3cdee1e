"""Every pointer to a document or a section names one the repository holds.

The project's code, docs and tests point readers at documents: Markdown links,
paths in docstrings (``docs/rubrics.md``), ADR numbers, anchors into a page
(``docs/cli.md#exit-codes``), and section names ("section 'Exit codes' of
docs/cli.md"). Each must lead somewhere in this repository: a file that exists,
a heading that the page has (GitHub's anchor rules). Nothing may point at the
design agreement kept outside the repository either: the project keeps its own
account in docs/architecture.md and the ADRs.

One test per scanned file, so that a failure names the file, and each problem
its line.
"""

from __future__ import annotations

import functools
import os
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent

#: What is scanned, relative to the repository root: directories are walked.
SCANNED = (
    "src",
    "docs",
    "README.md",
    "tests",
    "bench",
    "benchmarks",
    ".pre-commit-hooks.yaml",
    "bench.toml",
    "pyproject.toml",
    ".ci",
)
#: A third-party corpus kept byte for byte as published: not the project's words.
VENDORED = ("tests/data/toml-test/",)
#: This file spells out what it forbids, and its own table of examples is of bad pointers.
THIS_FILE = "tests/test_references.py"
_SKIPPED_DIRS = frozenset(
    {"__pycache__", ".mypy_cache", ".ruff_cache", ".pytest_cache", ".hypothesis"}
)


@dataclass(frozen=True)
class Finding:
    """One bad reference: where it is and what is wrong with it."""

    path: str
    line: int
    text: str
    message: str

    def __str__(self) -> str:
        return f"{self.path}:{self.line}: {self.message}\n    {self.text}"


# -- what a reference looks like ---------------------------------------------------------

# A pointer at the design agreement, also when a line break or a comment marker
# splits it: "design section 10", "design §4", "(design 10)", "design.md",
# "the design document".
_DESIGN = re.compile(
    r"\bdesign(?:\.md\b|,?(?:\s|[#*>/]|\\n)*(?:sections?\b|§)|\s+\d+\b|\s+doc(?:ument)?s?\b)",
    re.IGNORECASE,
)
# A repository document named by its path from the root: docs/cli.md,
# ./docs/bench.schema.json, docs/cli.md#exit-codes, tests/test_fences.py.
_ROOT_PATH = re.compile(
    r"(?<![\w./-])(?:\./)?(?P<path>(?:docs|tests)/[\w./-]*?\.(?:md|json|py))"
    r"(?:#(?P<anchor>[\w-]+))?(?![\w/-])"
)
# A Markdown document named without a directory (in a Markdown page: beside it).
_BARE_MARKDOWN = re.compile(r"(?<![\w./-])(?P<path>[\w-]+\.md)(?:#(?P<anchor>[\w-]+))?(?![\w/-])")
# An argument naming a file a command writes, not one it reads: the file need not exist.
_WRITTEN = re.compile(r"(?:--output(?:-file)?[= ]|\s-o\s|>>?\s*)$")
_ADR = re.compile(r"\bADR[- ]?(?P<number>\d{1,4})\b")
_LINK = re.compile(r"!?\[(?:[^\]]|\n)*?\]\(\s*<?(?P<target>[^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
_REFERENCE_LINK = re.compile(r"^ {0,3}\[[^\]\n]+\]:\s*<?(?P<target>\S+?)>?(?:\s|$)", re.MULTILINE)
_SCHEME = re.compile(r"^(?:[a-z][a-z0-9+.-]*:|//)", re.IGNORECASE)
_OPEN = "\"'“‘`"  # noqa: RUF001 - typographic quotes open a quoted heading too
_CLOSE = "\"'”’`"  # noqa: RUF001
_QUOTED = rf"[{_OPEN}](?P<heading>[^{_CLOSE}\n]{{1,120}})[{_CLOSE}]"
_DOC = r"(?:\[[^\]\n]*\]\()?(?P<doc>[\w./-]+\.md)"
# "docs/cli.md, section 'Exit codes'", "section 'Exit codes' of docs/cli.md",
# "the 'Exit codes' section of docs/cli.md", and, in a page, "section 'Exit codes'".
_SECTION_POINTERS = (
    re.compile(rf"{_DOC}(?:['’]s)?,?\s+(?:section|heading)\s+{_QUOTED}", re.IGNORECASE),  # noqa: RUF001
    re.compile(rf"\b(?:section|heading)\s+{_QUOTED}\s+(?:of|in)\s+{_DOC}", re.IGNORECASE),
    re.compile(rf"{_QUOTED}\s+(?:section|heading)\s+(?:of|in)\s+{_DOC}", re.IGNORECASE),
)
# Within a page only quotation marks count: "the `[tool.x]` section" is a TOML table.
_QUOTED_HERE = _QUOTED.replace("`", "")
_SECTION_HERE = (
    re.compile(rf"\b(?:section|heading)\s+{_QUOTED_HERE}", re.IGNORECASE),
    re.compile(rf"{_QUOTED_HERE}\s+(?:section|heading)\b", re.IGNORECASE),
)
_FENCE = re.compile(r"^ {0,3}(```|~~~)")
_ATX_HEADING = re.compile(r"^ {0,3}#{1,6}[ \t]+(?P<text>.*?)(?:[ \t]+#+)?[ \t]*$")


# -- the rules ---------------------------------------------------------------------------


def github_anchor(heading: str) -> str:
    """Return the anchor GitHub gives a heading: rendered text, lower case, punctuation dropped."""
    text = re.sub(r"!?\[([^\]]*)\]\([^)]*\)", r"\1", heading)  # a link shows its text
    text = re.sub(r"<[^>]+>", "", text).strip().lower()
    return re.sub(r"[^\w\- ]", "", text).replace(" ", "-")


def _unfenced(text: str) -> str:
    """Return Markdown ``text`` with its fenced blocks blanked, every offset kept."""
    lines = text.split("\n")
    fence: str | None = None
    for i, line in enumerate(lines):
        opened = _FENCE.match(line)
        if fence is None and opened:
            fence = opened.group(1)
        elif fence is None:
            continue
        elif line.lstrip().startswith(fence):
            fence = None
        lines[i] = " " * len(line)
    return "\n".join(lines)


def _blank(match: re.Match[str]) -> str:
    return re.sub(r"[^\n]", " ", match.group(0))


def _prose(text: str) -> str:
    """Return Markdown ``text`` without its code, fenced or inline, every offset kept."""
    return re.sub(r"`[^`\n]*`", _blank, _unfenced(text))


def _anchors_of(text: str) -> frozenset[str]:
    """Return the anchors of the headings of Markdown ``text`` (``-1``, ``-2`` for repeats)."""
    seen: dict[str, int] = {}
    found: set[str] = set()
    for line in _unfenced(text).split("\n"):
        heading = _ATX_HEADING.match(line)
        if heading is None:
            continue
        anchor = github_anchor(heading.group("text"))
        count = seen.get(anchor, 0)
        seen[anchor] = count + 1
        found.add(anchor if count == 0 else f"{anchor}-{count}")
    return frozenset(found)


@functools.cache
def anchors(document: Path) -> frozenset[str]:
    """Return the anchors of the headings of the Markdown file ``document``."""
    return _anchors_of(document.read_text(encoding="utf-8"))


def _resolve(target: str, bases: tuple[Path, ...]) -> Path | None:
    """Return the file or directory ``target`` names from the first of ``bases`` that has it."""
    for base in bases:
        candidate = Path(os.path.normpath(base / target))
        if candidate.exists():
            return candidate
    return None


class _Scan:
    """The findings of one file, collected rule by rule."""

    def __init__(self, path: str, text: str) -> None:
        self.path = path
        self.text = text
        self.lines = text.split("\n")
        self.markdown = path.endswith(".md")
        self.here = (REPO / path).parent
        self.unfenced = _unfenced(text) if self.markdown else text
        self.prose = _prose(text) if self.markdown else text
        self.found: list[Finding] = []

    def add(self, position: int, message: str) -> None:
        line = self.text.count("\n", 0, position) + 1
        self.found.append(Finding(self.path, line, self.lines[line - 1].strip(), message))

    def document(
        self, position: int, target: str, anchor: str | None, bases: tuple[Path, ...]
    ) -> None:
        """Check that ``target`` exists and, for a Markdown page, that it has ``anchor``."""
        resolved = _resolve(target, bases)
        if resolved is None:
            self.add(position, f"{target}: no such file in the repository")
        elif anchor is not None and resolved.suffix == ".md" and anchor not in anchors(resolved):
            self.add(position, f"{target}#{anchor}: {target} has no heading with that anchor")

    def design(self) -> None:
        for match in _DESIGN.finditer(self.text):
            self.add(
                match.start(),
                f"{match.group(0)!r} points at the design agreement, which is not part of "
                "the repository: point at docs/architecture.md, an ADR or a docs page",
            )

    def links(self) -> None:
        """Markdown links, inline and reference-style, from the page's own directory."""
        matches = [*_LINK.finditer(self.prose), *_REFERENCE_LINK.finditer(self.prose)]
        for match in matches:
            target = match.group("target")
            if _SCHEME.match(target):
                continue
            file, _, anchor = target.partition("#")
            if file:
                self.document(match.start(), file, anchor or None, (self.here,))
            elif anchor not in _anchors_of(self.text):
                self.add(match.start(), f"#{anchor}: this page has no heading with that anchor")

    def paths(self) -> None:
        """Paths from the root (``docs/…``, ``tests/…``); in a page, also ``name.md`` beside it."""
        text = self.text
        if self.markdown:  # a link's target was checked as a link
            for match in [*_LINK.finditer(self.prose), *_REFERENCE_LINK.finditer(self.prose)]:
                text = text[: match.start()] + _blank(match) + text[match.end() :]
        for match in _ROOT_PATH.finditer(text):
            if not self._written(text, match.start()):
                self.document(match.start(), match["path"], match["anchor"], (REPO,))
        if self.markdown:
            for match in _BARE_MARKDOWN.finditer(text):
                if not self._written(text, match.start()):
                    self.document(match.start(), match["path"], match["anchor"], (self.here, REPO))

    def adrs(self) -> None:
        for match in _ADR.finditer(self.text):
            number = match.group("number").zfill(4)
            if not any((REPO / "docs" / "adr").glob(f"{number}-*.md")):
                self.add(match.start(), f"{match.group(0)}: no docs/adr/{number}-*.md")

    def sections(self) -> None:
        """Sections named in words: in a given page, or (in a page) in this one."""
        taken: set[int] = set()
        for pattern in _SECTION_POINTERS:
            for match in pattern.finditer(self.unfenced):
                taken.add(match.start("heading"))
                resolved = _resolve(match["doc"], (self.here, REPO))
                if resolved is None:
                    self.add(match.start(), f"{match['doc']}: no such file in the repository")
                elif github_anchor(match["heading"]) not in anchors(resolved):
                    shown = resolved.relative_to(REPO)
                    self.add(
                        match.start(), f"section {match['heading']!r}: {shown} has no such heading"
                    )
        if not self.markdown:
            return
        for pattern in _SECTION_HERE:
            for match in pattern.finditer(self.unfenced):
                heading = match["heading"]
                if match.start("heading") in taken:
                    continue
                if github_anchor(heading) not in _anchors_of(self.text):
                    self.add(match.start(), f"section {heading!r}: this page has no such heading")

    @staticmethod
    def _written(text: str, position: int) -> bool:
        start = text.rfind("\n", 0, position) + 1
        return _WRITTEN.search(text[start:position]) is not None


def findings(path: str, text: str) -> list[Finding]:
    """Return every bad reference in ``text``, the contents of the repository file ``path``."""
    scan = _Scan(path, text)
    scan.design()
    if scan.markdown:
        scan.links()
    scan.paths()
    scan.adrs()
    scan.sections()
    return sorted(scan.found, key=lambda f: (f.line, f.message))


# -- the repository ----------------------------------------------------------------------


def _walk(relative: str) -> Iterator[str]:
    top = REPO / relative
    if top.is_file():
        yield relative
        return
    for directory, subdirectories, files in os.walk(top):
        subdirectories[:] = sorted(
            d for d in subdirectories if d not in _SKIPPED_DIRS and not d.endswith(".egg-info")
        )
        for name in sorted(files):
            path = Path(directory, name).relative_to(REPO).as_posix()
            if (
                path != THIS_FILE
                and not path.startswith(VENDORED)
                and not name.endswith((".pyc", ".pyo"))
            ):
                yield path


def _read(path: str) -> str | None:
    """Return the file's text; ``None`` for a binary file (nothing to read as prose)."""
    data = (REPO / path).read_bytes()
    if b"\0" in data:
        return None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return None


FILES = [path for relative in SCANNED if (REPO / relative).exists() for path in _walk(relative)]


def _outstanding(path: str) -> list[Finding]:
    text = _read(path)
    return findings(path, text) if text is not None else []


@pytest.mark.parametrize("path", FILES)
def test_every_reference_leads_somewhere_in_the_repository(path: str) -> None:
    """Each document, ADR, anchor and section the file points at exists; nothing points at the design agreement."""
    outstanding = _outstanding(path)
    assert not outstanding, "\n".join(str(f) for f in outstanding)
