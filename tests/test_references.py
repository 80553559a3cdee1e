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

#: References in ``src/`` still to fix, as (file, the line's text, stripped).
#:
#: ``src/`` is being reorganised on another branch; its references are fixed
#: there, after the merge, and each entry is removed as its line is fixed. An
#: entry whose line no longer has the problem fails
#: ``test_pending_src_references_are_still_pending``: remove it then.
_PENDING_SRC: frozenset[tuple[str, str]] = frozenset(
    {
        (
            "src/codegenie/eval/_cache.py",
            "The cache is an optimisation that can never change an answer (design",
        ),
        ("src/codegenie/eval/_listing.py", '"""Return the JSON output (design section 7)."""'),
        (
            "src/codegenie/eval/_paths.py",
            "#: The largest manifest that is read at all (design section 10): 16 MiB.",
        ),
        (
            "src/codegenie/eval/_toml_read.py",
            "The rules of design section 10, for any small TOML file the bench reads",
        ),
        (
            "src/codegenie/eval/cases.py",
            "Design section 11. Each directory under the task class's ``cases`` path is",
        ),
        (
            "src/codegenie/eval/cases.py",
            "Case files are read under the manifest's rules (design section 10): regular",
        ),
        (
            "src/codegenie/eval/cli/__init__.py",
            "Output is hostile-proof (design section 10): every string from a manifest, a",
        ),
        (
            "src/codegenie/eval/cli/cmd_grade.py",
            "Design section 11. The task class is resolved as ``show`` resolves it (same",
        ),
        (
            "src/codegenie/eval/grading.py",
            "Design section 11. :func:`grade` runs :func:`codegenie.eval.rubrics.run_rubric`",
        ),
        (
            "src/codegenie/eval/loader.py",
            '__all__ = ("load_task_class", "load_cases")  '
            "# noqa: RUF022 - the order design section 6 pins",
        ),
        (
            "src/codegenie/eval/loader.py",
            '"""Return every case of the task class ``name``, sorted by id (design section 11).',
        ),
        (
            "src/codegenie/eval/manifest.py",
            "The manifest is the one declarative list of task classes (design section 3)::",
        ),
        (
            "src/codegenie/eval/manifest.py",
            "Whatever the bytes, nothing else escapes (design section 10): only regular",
        ),
        (
            "src/codegenie/eval/manifest.py",
            "#: keeps the most recently read ones (design section 10).",
        ),
        (
            "src/codegenie/eval/problems.py",
            '"""One problem, one description, whichever command finds it (design section 7).',
        ),
        (
            "src/codegenie/eval/rubrics.py",
            "The protocol (design section 11, ``docs/rubrics.md``, the verdict's JSON Schema",
        ),
    }
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
    found = findings(path, text) if text is not None else []
    return [f for f in found if (f.path, f.text) not in _PENDING_SRC]


@pytest.mark.parametrize("path", FILES)
def test_every_reference_leads_somewhere_in_the_repository(path: str) -> None:
    """Each document, ADR, anchor and section the file points at exists; nothing points at the design agreement."""
    outstanding = _outstanding(path)
    assert not outstanding, "\n".join(str(f) for f in outstanding)


def test_pending_src_references_are_still_pending() -> None:
    """Each allow-listed src reference is still there and still wrong; a fixed one leaves the list."""
    found = {
        (f.path, f.text)
        for path in FILES
        if path.startswith("src/")
        for f in findings(path, _read(path) or "")
    }
    fixed = sorted(_PENDING_SRC - found)
    assert not fixed, "fixed (remove from _PENDING_SRC): " + "; ".join(map(str, fixed))
    assert all(path.startswith("src/") for path, _ in _PENDING_SRC)


def test_the_scan_covers_the_documents_and_the_code() -> None:
    """The scan reaches the pages, the library, the tests and the shipped bench."""
    for expected in ("README.md", "docs/cli.md", "docs/adr/0001-rubric-isolation.md"):
        assert expected in FILES
    for prefix in ("src/codegenie/eval/", "tests/", "bench/", "benchmarks/"):
        assert any(path.startswith(prefix) for path in FILES), prefix


# -- the rules themselves ------------------------------------------------------------------


@pytest.mark.parametrize(
    ("heading", "anchor"),
    [
        ("Exit codes", "exit-codes"),
        (
            "`grade SLUG CANDIDATES_DIR [--case ID…] [--jobs N]`",
            "grade-slug-candidates_dir---case-id---jobs-n",
        ),
        (
            "`list`: where the time goes, and the floor of the job",
            "list-where-the-time-goes-and-the-floor-of-the-job",
        ),
        ("ADR-0001: rubrics run in a subprocess", "adr-0001-rubrics-run-in-a-subprocess"),
        ("[Linked](https://example.org) title", "linked-title"),
    ],
)
def test_github_anchor(heading: str, anchor: str) -> None:
    """Anchors follow GitHub: lower case, punctuation dropped, spaces as hyphens."""
    assert github_anchor(heading) == anchor


@pytest.mark.parametrize(
    ("path", "text", "expected"),
    [
        # The design agreement, however it is spelt.
        ("docs/x.md", "as design section 10 says", ["points at the design agreement"]),
        ("src/a.py", "never an error (design\nsection 10)", ["points at the design agreement"]),
        ("src/a.py", "# answer (design\n# section 10)", ["points at the design agreement"]),
        (
            "tests/test_a.py",
            '"""Hostile stdout (design 10)."""',
            ["points at the design agreement"],
        ),
        ("docs/x.md", "see ../design.md and design §4", ["design agreement", "design agreement"]),
        ("docs/x.md", "the design document says", ["points at the design agreement"]),
        ("docs/x.md", "imported, by design: loading a task class", []),
        ("docs/x.md", "It was the first design, and it is faster", []),
        # Links and paths.
        ("docs/x.md", "[codes](check-codes.md) and [ADR](adr/0001-rubric-isolation.md)", []),
        ("docs/x.md", "[gone](gone.md)", ["gone.md: no such file"]),
        ("docs/x.md", "[diagnostics](cli.md#text-diagnostics)", []),
        ("docs/x.md", "[codes](cli.md#exit-kodes)", ["cli.md has no heading with that anchor"]),
        ("docs/x.md", "[codes](https://example.org/gone.md)", []),
        ("README.md", "[reference](docs/cli.md#exit-codes)", []),
        ("README.md", "[reference]\n\n[reference]: docs/gone.md", ["docs/gone.md: no such file"]),
        ("docs/x.md", "## Text diagnostics\n\nsee [them](#text-diagnostics)", []),
        (
            "docs/x.md",
            "## Text diagnostics\n\nsee [them](#text-diagnostic)",
            ["this page has no heading"],
        ),
        ("src/a.py", "(see ``docs/rubrics.md``, ``docs/rubric-verdict.schema.json``)", []),
        ("src/a.py", "see docs/rubrics.md#the-rubric-protocol.", []),
        ("src/a.py", "see docs/rubrics.md#protocol.", ["docs/rubrics.md has no heading"]),
        ("tests/test_a.py", '"""As docs/guide.md says."""', ["docs/guide.md: no such file"]),
        (
            "docs/x.md",
            "tested in `tests/test_fences.py` and tests/test_gone.py",
            ["tests/test_gone.py"],
        ),
        ("docs/x.md", "```sh\nrun.py --output docs/results.md\n```", []),
        ("docs/x.md", "`codegenie-bench schema > docs/new.schema.json`", []),
        ("docs/x.md", "as `errors.md` and rubrics.md say", []),
        ("docs/x.md", "as missing.md says", ["missing.md: no such file"]),
        # ADRs.
        ("docs/x.md", "ADR-0001, ADR-0003", []),
        ("src/a.py", "never imported (ADR-0009)", ["ADR-0009: no docs/adr/0009-*.md"]),
        # Sections by name.
        ("docs/x.md", "see section 'Exit codes' of docs/cli.md", []),
        ("docs/x.md", "see the “JSON shapes” section of [the reference](cli.md)", []),
        ("src/a.py", "docs/cli.md, section 'Exit kodes'", ["section 'Exit kodes'"]),
        ("docs/x.md", "## Output you can trust\n\nas the section 'Output you can trust' says", []),
        (
            "docs/x.md",
            "## Output you can trust\n\nsee section 'Output you trust'",
            ["section 'Output"],
        ),
        ("docs/x.md", "```\n## Not a heading\n```\n[here](#not-a-heading)", ["no heading"]),
        ("docs/x.md", "add a `[tool.codegenie-bench]` section to pyproject.toml", []),
    ],
)
def test_the_rules(path: str, text: str, expected: list[str]) -> None:
    """Each rule finds what it should and nothing else (a table of pointers, good and bad)."""
    found = [f.message for f in findings(path, text)]
    assert len(found) == len(expected), found
    for message, wanted in zip(found, expected, strict=True):
        assert wanted in message, found
