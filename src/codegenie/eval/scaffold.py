"""``codegenie-bench new``: scaffold a task class and append its manifest entry.

Everything is checked before anything is written. The slug and ``--root`` are
checked with the manifest's own rules (a ``ManifestEntry`` is built from them)
and ``--root`` must stay inside the manifest's directory once symbolic links
are resolved: ``InvalidTaskClassName`` for the slug (a validation error, as
everywhere), ``ScaffoldArgumentInvalid`` for the root (a usage error). Then, holding an
exclusive lock on the manifest file, the manifest is read again (so that
concurrent runs each see the entries the others added), and the slug, its
module and its directory must be new: ``ScaffoldConflict``.

The package is written under a temporary name and renamed into place, and the
manifest is replaced atomically with its old bytes followed by the new entry,
so existing text and comments stay byte-for-byte as they were. A manifest that
is a symbolic link is updated through it: its target changes, the link stays.
Any operating-system failure (a read-only tree, a full disk) becomes
``ScaffoldFailed`` after every file and directory this run created is removed.

The lock is ``flock(LOCK_EX)`` on the manifest file itself (its target, when
it is a link), not on a separate lock file: nothing is added to the tree.
Because the manifest is replaced by a rename, a run that obtained the lock on
a file that has since been replaced lets it go and locks the new file.
"""

from __future__ import annotations

import contextlib
import functools
import json
import keyword
import os
import re
import shutil
import stat
import sys
import tempfile
import unicodedata
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Final

import tomli_w
from pydantic import ValidationError

from codegenie.eval._atomic import write_atomically
from codegenie.eval._manifest.model import BenchManifest, ManifestEntry
from codegenie.eval._manifest.read import read_manifest_bytes
from codegenie.eval._manifest.schema import json_schema
from codegenie.eval._paths import fs_path
from codegenie.eval.errors import (
    BenchManifestInvalid,
    BenchManifestNotFound,
    InitConflict,
    ScaffoldArgumentInvalid,
    ScaffoldConflict,
    ScaffoldFailed,
)
from codegenie.eval.naming import check_slug, slug_to_identifier

__all__ = (
    "InitConflict",
    "Initialized",
    "Scaffold",
    "ScaffoldArgumentInvalid",
    "ScaffoldFailed",
    "init_bench",
    "python_string",
    "registration_source",
    "scaffold_task_class",
    "validate_new_entry",
)


@dataclass(frozen=True, slots=True)
class Scaffold:
    """What ``scaffold_task_class`` created."""

    slug: str
    module: str
    directory: Path
    files: tuple[Path, ...]
    manifest: Path


_REGISTRATION = '''\
"""Registers this package's task class (its slug is in the decorator below).

Imported in-process by the loader: keep it cheap, and never import rubric.py
(rubrics run only in a subprocess: `codegenie-bench explain rubric-imported`).

reads_expected=True: the scaffolded rubric compares the candidate with each
case's expected/, so its runs are given it. Drop it once the rubric grades
without the reference: then no run, and no candidate code, can read it.
"""

from __future__ import annotations

from codegenie.eval import register_task_class

{description}


{decorator}
class {class_name}:
    """The task class this module registers."""
'''

#: ruff's default line length: what `new` writes passes `ruff format --check` in a
#: repository that has no ruff configuration of its own (and fits this project's 100).
LINE_LENGTH: Final = 88
_INDENT: Final = "    "


def python_string(text: str) -> str:
    r"""Return a Python string literal of ``text``, written as ``ruff format`` writes it.

    Double quotes unless the text holds more double than single quotes;
    backslashes, the quote and every character that is not a printable
    letter, mark, number or ASCII character escaped (``\n``, ``\x1b``,
    ``\u2013``): no control character, and nothing ``ruff check`` calls
    ambiguous (an en dash, a curly quote), reaches the source.
    """
    quote = "'" if text.count('"') > text.count("'") else '"'
    out = []
    for char in text:
        if char in {"\\", quote}:
            out.append("\\" + char)
        elif char in _NAMED_ESCAPES:
            out.append(_NAMED_ESCAPES[char])
        elif char.isprintable() and (char.isascii() or unicodedata.category(char)[0] in "LMN"):
            out.append(char)
        elif ord(char) <= 0xFF:
            out.append(f"\\x{ord(char):02x}")
        elif ord(char) <= 0xFFFF:
            out.append(f"\\u{ord(char):04x}")
        else:
            out.append(f"\\U{ord(char):08x}")
    return quote + "".join(out) + quote


_NAMED_ESCAPES: Final = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}


def _pieces(text: str, width: int) -> list[str]:
    """Cut ``text`` after spaces (inside a word only when it must) into literals of ``width``."""
    pieces: list[str] = []
    current = ""
    for word in re.findall(r"\S+\s*|\s+", text):
        if current and len(python_string(current + word)) > width:
            pieces.append(current)
            current = ""
        current += word
        while len(python_string(current)) > width and len(current) > 1:
            cut = len(current) - 1
            while cut > 1 and len(python_string(current[:cut])) > width:
                cut -= 1
            pieces.append(current[:cut])
            current = current[cut:]
    return [*pieces, current] if current else pieces


def _description_source(description: str) -> str:
    """Return ``DESCRIPTION = …`` in the shape ``ruff format`` gives it, no line too long."""
    literal = python_string(description)
    head = "DESCRIPTION = "
    if len(head) + len(literal) <= LINE_LENGTH:
        return head + literal
    width = LINE_LENGTH - len(_INDENT)
    if len(literal) <= width:
        return f"{head}(\n{_INDENT}{literal}\n)"
    parts = "".join(f"{_INDENT}{python_string(piece)}\n" for piece in _pieces(description, width))
    return f"{head}(\n{parts})"


def _decorator_source(slug: str) -> str:
    """Return the decorator line, wrapped as ``ruff format`` wraps it when it is too long."""
    each = (python_string(slug), "description=DESCRIPTION", "reads_expected=True")
    arguments = ", ".join(each)
    line = f"@register_task_class({arguments})"
    if len(line) <= LINE_LENGTH:
        return line
    if len(_INDENT + arguments) <= LINE_LENGTH:
        return f"@register_task_class(\n{_INDENT}{arguments}\n)"
    one_per_line = "".join(f"{_INDENT}{argument},\n" for argument in each)
    return f"@register_task_class(\n{one_per_line})"


def registration_source(slug: str, description: str) -> str:
    """Return the ``registration.py`` that ``new`` writes for ``slug``.

    It passes ``ruff format --check`` and ``ruff check`` with ruff's default
    settings, and ``mypy --strict``, as written, whatever the description
    holds (a test runs them on scaffolds).
    """
    return _REGISTRATION.format(
        slug=slug,
        description=_description_source(description),
        decorator=_decorator_source(slug),
        class_name=_class_name(slug),
    )


_RUBRIC = '''\
"""The rubric of this package's task class.

A standalone script, run as a subprocess, never imported.

Usage: python rubric.py CASE_DIR CANDIDATE_DIR

The candidate passes when every file under CASE_DIR/expected exists in
CANDIDATE_DIR with the same bytes. Prints one JSON object on stdout and exits
0 (pass), 1 (fail) or 2 (usage, or no CASE_DIR/expected). Replace the
comparison with this task class's real grading. CASE_DIR holds expected/
only because registration.py declares reads_expected=True: a rubric that
grades without the reference should not declare it.

A rubric that runs the candidate's code holds its own verdict's pipe: before
it starts the candidate, it makes itself undumpable, so that the candidate
cannot write to it through /proc (``ctypes.CDLL(None).prctl(4, 0, 0, 0, 0)``,
PR_SET_DUMPABLE), and gives the candidate pipes of its own
(``subprocess.run(..., capture_output=True)``), never this stdout.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path


def grade(case_dir: Path, candidate_dir: Path) -> dict[str, object]:
    """Return the verdict for one candidate."""
    expected = case_dir / "expected"
    if not expected.is_dir():
        raise FileNotFoundError(f"{{expected}}: declare reads_expected=True")
    for file in sorted(p for p in expected.rglob("*") if p.is_file()):
        relative = file.relative_to(expected)
        produced = candidate_dir / relative
        if not produced.is_file() or produced.read_bytes() != file.read_bytes():
            reason = f"{{relative}} differs"
            return {{"case": case_dir.name, "passed": False, "reason": reason}}
    return {{"case": case_dir.name, "passed": True, "reason": "all expected files match"}}


def main(argv: list[str]) -> int:
    """Grade ``argv[1]`` (the case) against ``argv[2]`` (the candidate)."""
    if len(argv) != 3:
        print(__doc__, file=sys.stderr)
        return 2
    try:
        verdict = grade(Path(argv[1]), Path(argv[2]))
    except FileNotFoundError as exc:
        print(f"rubric: {{exc}}", file=sys.stderr)
        return 2
    print(json.dumps(verdict, sort_keys=True))
    return 0 if verdict["passed"] else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv))
'''

# The case's id is its directory's name. As scaffolded, expected/ passes the
# rubric and input/ fails it, so `check --rubrics` is green from the start.
_CASE = """\
description = "An example case: replace it with real ones."
"""


def _class_name(slug: str) -> str:
    name = "".join(part.capitalize() for part in slug.split("-"))
    return f"{name}TaskClass" if keyword.iskeyword(name) else name


def _newline_of(data: bytes) -> bytes:
    return b"\r\n" if b"\r\n" in data else b"\n"


def _entry_bytes(slug: str, entry: ManifestEntry, existing: bytes) -> bytes:
    newline = _newline_of(existing)
    table = {"task-classes": {slug: {"module": entry.module, "root": entry.root}}}
    text = tomli_w.dumps(table).replace("\n", newline.decode()).encode()
    prefix = b""
    if existing and not existing.endswith(b"\n"):
        prefix += newline
    if existing.strip():
        prefix += newline
    return prefix + text


def _write_atomically(path: Path, data: bytes) -> None:
    """Replace the file ``path`` with ``data``: readers see the old bytes or the new ones."""
    write_atomically(path, data, mode=stat.S_IMODE(path.stat().st_mode) if path.exists() else 0o644)


def _write_new_file(path: Path, text: str) -> None:
    """Create the file ``path`` (it must not exist) holding ``text`` in UTF-8."""
    with path.open("x", encoding="utf-8") as file:
        file.write(text)


_NOT_TEXT: Final = "holds bytes that are not UTF-8 (lone surrogates): it cannot be written"


def _is_text(value: str) -> bool:
    """Whether UTF-8 can write ``value``: no lone surrogate (an undecodable byte) in it."""
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def validate_new_entry(slug: str, root: str) -> ManifestEntry:
    """Return the manifest entry ``new`` would add for ``slug`` under ``root``.

    The slug and the root are checked with the manifest's own rules: the slug
    rules, then a ``ManifestEntry`` built from them (so ``root`` is a relative,
    normalized POSIX path without ``..`` whose last component is an
    identifier). Raises ``InvalidTaskClassName`` for the slug, as every
    command does, and ``ScaffoldArgumentInvalid`` naming ``--root`` and the
    rule it breaks. Pure: no I/O.
    """
    check_slug(slug)
    if not _is_text(root):
        raise ScaffoldArgumentInvalid("--root", root, _NOT_TEXT)
    package = root.rpartition("/")[2]
    try:
        module = f"{package}.{slug_to_identifier(slug)}.registration"
        entry = ManifestEntry(module=module, root=root)
    except ValidationError as exc:
        problems = exc.errors(include_url=False)
        messages = [p["msg"] for p in problems if tuple(p["loc"]) == ("root",)]
        reason = "; ".join(messages or [p["msg"] for p in problems])
        prefix = f"root {root!r} "
        reason = reason.removeprefix(prefix)
        raise ScaffoldArgumentInvalid("--root", root, reason) from None
    # Until manifest.py refuses control characters in roots (issue 9), refuse
    # them here: such a root would be written into bench.toml.
    if any(ord(c) < 0x20 or c == "\x7f" for c in root):
        raise ScaffoldArgumentInvalid("--root", root, "must not contain control characters")
    return entry


_O_NONBLOCK = getattr(os, "O_NONBLOCK", 0)
_O_CLOEXEC = getattr(os, "O_CLOEXEC", 0)


def _lock_manifest(path: Path) -> tuple[int, Path]:
    """Take an exclusive lock on the manifest ``path`` names; return the fd and the file.

    The file is ``path`` with symbolic links resolved. Waits for the lock;
    when the file was replaced while waiting (another run wrote it), locks
    the new file instead. Raises ``BenchManifestNotFound`` when there is no
    such file, ``ScaffoldFailed`` when it is not a regular file or cannot be
    opened or locked.
    """
    while True:
        target = path.resolve()
        try:
            # Non-blocking open: a FIFO in the manifest's place must not hang us.
            fd = os.open(target, os.O_RDONLY | _O_NONBLOCK | _O_CLOEXEC)
        except FileNotFoundError:
            raise BenchManifestNotFound(path) from None
        except OSError as exc:
            raise ScaffoldFailed(target, exc.strerror or str(exc)) from exc
        try:
            opened = os.fstat(fd)
            if not stat.S_ISREG(opened.st_mode):
                raise ScaffoldFailed(target, "not a regular file")
            if sys.platform != "win32":
                import fcntl  # noqa: PLC0415 - POSIX only

                fcntl.flock(fd, fcntl.LOCK_EX)
            current = os.stat(target)
        except FileNotFoundError:
            os.close(fd)
            continue
        except OSError as exc:  # e.g. a file system without locks
            os.close(fd)
            raise ScaffoldFailed(target, f"cannot lock it: {exc.strerror or exc}") from exc
        except BaseException:
            os.close(fd)
            raise
        if (current.st_dev, current.st_ino) == (opened.st_dev, opened.st_ino):
            return fd, target
        os.close(fd)  # replaced while we waited: lock the file that is there now


def _blocking_component(directory: Path, top: Path) -> Path | None:
    """Return the first path from ``top`` down to ``directory`` that exists but is no directory."""
    for candidate in [*reversed(directory.relative_to(top).parents), directory.relative_to(top)]:
        path = top / candidate
        if path == top:
            continue
        if os.path.lexists(path) and not path.is_dir():
            return path
    return None


class _Created:
    """What one run created, so that a failure can remove exactly that."""

    def __init__(self) -> None:
        self._undo: list[Callable[[], None]] = []

    def directories(self, directory: Path) -> None:
        """Create ``directory`` and its missing parents, remembering each one."""
        missing = []
        while not directory.exists():
            missing.append(directory)
            directory = directory.parent
        for path in reversed(missing):
            path.mkdir()
            self._undo.append(path.rmdir)

    def tree(self, path: Path) -> None:
        """Remember ``path`` as a directory tree this run made."""
        self._undo.append(functools.partial(shutil.rmtree, path))

    def new_file(self, path: Path, text: str) -> None:
        """Create the file ``path`` (it must not exist) holding ``text`` in UTF-8.

        It is remembered as soon as it exists, before a byte is written, so a
        write that fails partway (a full disk, a file-size limit) leaves no
        half-written file behind.
        """
        with path.open("x", encoding="utf-8") as file:
            self._undo.append(path.unlink)
            file.write(text)

    def undo(self) -> None:
        """Remove everything remembered, newest first, as far as possible."""
        for action in reversed(self._undo):
            with contextlib.suppress(OSError):
                action()
        self._undo.clear()


def scaffold_task_class(
    manifest: BenchManifest,
    slug: str,
    *,
    root: str = "bench",
    description: str | None = None,
) -> Scaffold:
    """Create ``<root>/<ident>/`` and append the entry for ``slug`` to the manifest.

    ``manifest`` names the file to update (``manifest.path``); it is read
    again under an exclusive lock, so concurrent runs lose no entry. Raises
    ``InvalidTaskClassName`` (exit 1) when the slug breaks the slug rules;
    ``ScaffoldArgumentInvalid`` (exit 2) when ``root`` breaks the manifest's
    rules or resolves outside the manifest's directory, or ``root`` or
    ``description`` is not text UTF-8 can write;
    ``ScaffoldConflict`` when the slug, its module or its directory exists, a
    path component of the directory is a file, or the manifest cannot take
    the entry; ``BenchManifestNotFound`` or ``BenchManifestInvalid`` when the
    manifest is gone or changed into an invalid one; ``ScaffoldFailed`` when
    the operating system refuses a write. Nothing is left written when it
    raises.
    """
    entry = validate_new_entry(slug, root)
    if description is not None and not _is_text(description):
        raise ScaffoldArgumentInvalid("--description", description, _NOT_TEXT)
    path = manifest.path
    fd, target = _lock_manifest(path)
    try:
        current = read_manifest_bytes(target)
        fresh = BenchManifest.from_bytes(current, path)
        plan = _plan(fresh, current, slug, root, entry)
        _create(plan, target, description or f"The {slug} task class.")
    finally:
        os.close(fd)  # releases the lock
    files = tuple(sorted(p for p in plan.directory.rglob("*") if p.is_file()))
    return Scaffold(slug, entry.module, plan.directory, files, path)


@dataclass(frozen=True, slots=True)
class _Plan:
    """What one run will write: the package directory and the manifest's new bytes."""

    slug: str
    directory: Path
    manifest: bytes


def _plan(
    manifest: BenchManifest, current: bytes, slug: str, root: str, entry: ManifestEntry
) -> _Plan:
    """Check that ``entry`` can be added to ``manifest`` (whose bytes are ``current``)."""
    path = manifest.path
    if slug in manifest:
        detail = f"{slug!r} is already declared"
        raise ScaffoldConflict(slug, "slug", path, detail, entry=slug)
    for other, existing in manifest:
        if existing.module == entry.module:
            detail = f"its module {entry.module!r} is already the module of {other!r}"
            raise ScaffoldConflict(slug, "module", path, detail, entry=other)
    top = manifest.directory
    directory = entry.case_dir(top / fs_path(root))
    inside = top.resolve()
    resolved = (top / fs_path(root)).resolve()
    if not resolved.is_relative_to(inside):
        reason = f"resolves to {resolved}, outside the manifest's directory {inside}"
        raise ScaffoldArgumentInvalid("--root", root, reason)
    blocker = _blocking_component(directory, top)
    if blocker is not None:
        detail = f"{blocker} exists and is not a directory"
        raise ScaffoldConflict(slug, "directory", blocker, detail)
    if os.path.lexists(directory):
        raise ScaffoldConflict(slug, "directory", directory, f"{directory} already exists")
    updated = current + _entry_bytes(slug, entry, current)
    try:
        BenchManifest.from_bytes(updated, path)
    except BenchManifestInvalid as exc:
        detail = (
            f"{path} cannot take a [task-classes.{slug}] table appended at its end "
            f"({exc.problems[0].message})"
        )
        raise ScaffoldConflict(slug, "manifest", path, detail) from exc
    return _Plan(slug, directory, updated)


def _create(plan: _Plan, target: Path, description: str) -> None:
    """Write the package, then the manifest file ``target``; on failure remove what was made."""
    slug, directory = plan.slug, plan.directory
    ident = directory.name
    created = _Created()
    writing = directory.parent
    try:
        created.directories(directory.parent)
        writing = directory
        staging = Path(tempfile.mkdtemp(dir=directory.parent, prefix=f".{ident}."))
        created.tree(staging)
        files = {
            "registration.py": registration_source(slug, description),
            "rubric.py": _RUBRIC.format(slug=slug),
            "cases/example/case.toml": _CASE,
            "cases/example/expected/README.txt": "Files a correct candidate produces.\n",
            "cases/example/input/TASK.txt": "What the solver starts from.\n",
        }
        (staging / "cases" / "example" / "expected").mkdir(parents=True)
        (staging / "cases" / "example" / "input").mkdir()
        for name, text in files.items():
            writing = directory / name
            _write_new_file(staging / name, text)
        writing = directory
        staging.chmod(0o755)
        staging.rename(directory)
        created.tree(directory)
        writing = target
        _write_atomically(target, plan.manifest)
    except OSError as exc:
        created.undo()
        raise ScaffoldFailed(writing, exc.strerror or str(exc)) from exc
    except BaseException:
        created.undo()
        raise


# -- init: a bench from nothing -------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Initialized:
    """What ``init_bench`` made: the manifest, the root, the schema, and what was new.

    ``gitignore`` is the ``.gitignore`` beside the manifest: in ``created``
    when ``init`` wrote it, else one that was there already and is kept.
    """

    manifest: Path
    root: Path
    schema: Path
    created: tuple[Path, ...]
    gitignore: Path


#: Where ``init`` puts the schema, relative to the manifest: the ``#:schema`` line names it.
SCHEMA_PATH: Final = "docs/bench.schema.json"

_MANIFEST = f"""\
#:schema ./{SCHEMA_PATH}
# The task classes of this bench, one [task-classes.SLUG] table each;
# `codegenie-bench new SLUG` adds one. Format: `codegenie-bench schema`.
schema-version = 1
"""

#: The ``.gitignore`` ``init`` writes beside the manifest where there is none.
#: codegenie-bench itself writes nothing into the repository (its caches are in
#: the user's cache directory), so it names only what following the docs makes:
#: a virtual environment and Python's bytecode.
GITIGNORE: Final = """\
# Written by `codegenie-bench init`, which never edits an existing .gitignore:
# this file is yours. codegenie-bench keeps its caches outside the repository.
# The virtual environment codegenie-eval is installed into:
.venv/
# Python's bytecode:
__pycache__/
*.py[cod]
"""


def init_bench(manifest: Path) -> Initialized:
    """Start a bench: create the manifest ``manifest``, ``bench/`` beside it, and the schema.

    The manifest declares no task class yet and starts with a ``#:schema``
    line naming ``docs/bench.schema.json`` beside it, which is written too
    (unless a file of that name is there already, which is kept), so an
    editor validates the manifest as soon as it is opened, offline. An
    existing ``bench/`` directory is kept as it is. A ``.gitignore`` holding
    ``GITIGNORE`` is written beside the manifest only when there is none
    there: an existing one (of any kind) is never read, edited or replaced.

    Raises ``InitConflict`` when ``manifest`` exists (whatever it is) or
    ``bench`` beside it is not a directory, and ``ScaffoldFailed`` when the
    operating system refuses a write; either way nothing is left written,
    the ``.gitignore`` included.
    """
    if os.path.lexists(manifest):
        raise InitConflict(manifest, "a manifest is already there")
    top = manifest.parent
    root = top / "bench"
    schema = top / SCHEMA_PATH
    gitignore = top / ".gitignore"
    for path in (root, schema.parent):
        if os.path.lexists(path) and not path.is_dir():
            raise InitConflict(path, "it exists and is not a directory")
    text = json.dumps(json_schema(), indent=2, ensure_ascii=True) + "\n"
    made = _Created()
    new: set[Path] = set()
    writing = manifest
    try:
        made.directories(top)
        made.new_file(manifest, _MANIFEST)
        new.add(manifest)
        if not root.exists():
            writing = root
            made.directories(root)
            new.add(root)
        if not os.path.lexists(gitignore):
            writing = gitignore
            made.new_file(gitignore, GITIGNORE)
            new.add(gitignore)
        if not os.path.lexists(schema):
            writing = schema
            made.directories(schema.parent)
            made.new_file(schema, text)
            new.add(schema)
    except FileExistsError:
        made.undo()
        raise InitConflict(writing, "it appeared while init was writing") from None
    except OSError as exc:
        made.undo()
        raise ScaffoldFailed(writing, exc.strerror or str(exc)) from exc
    except BaseException:
        made.undo()
        raise
    created = tuple(path for path in (manifest, root, schema, gitignore) if path in new)
    return Initialized(manifest, root, schema, created, gitignore)
