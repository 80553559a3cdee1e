"""``codegenie-bench new``: scaffold a task class and append its manifest entry.

Everything is checked before anything is written: the slug (the loader's own
rules), that the manifest is valid and lacks the slug and the module, that the
directory does not exist, and that the manifest with the new entry appended
still validates. Then the package is written under a temporary name and
renamed into place, and the manifest is replaced atomically with its old bytes
followed by the new entry, so existing text and comments stay byte-for-byte
as they were. If the manifest cannot be written, the new package is removed.
"""

from __future__ import annotations

import keyword
import os
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

import tomli_w

from codegenie.eval.errors import BenchManifestInvalid, ScaffoldConflict
from codegenie.eval.manifest import BenchManifest, ManifestEntry
from codegenie.eval.naming import check_slug, slug_to_identifier

__all__ = ("Scaffold", "scaffold_task_class")


@dataclass(frozen=True, slots=True)
class Scaffold:
    """What ``scaffold_task_class`` created."""

    slug: str
    module: str
    directory: Path
    files: tuple[Path, ...]
    manifest: Path


_REGISTRATION = '''\
"""Registers the ``{slug}`` task class.

Imported in-process by the loader: keep it cheap, and never import rubric.py
(ADR-0001: rubrics run only in a subprocess).
"""

from codegenie.eval import register_task_class


@register_task_class({slug!r}, description={description!r})
class {class_name}:
    {description!r}
'''

_RUBRIC = '''\
"""Rubric for ``{slug}``: a standalone script, run as a subprocess, never imported.

Usage: python rubric.py CASE_DIR CANDIDATE_DIR

The candidate passes when every file under CASE_DIR/expected exists in
CANDIDATE_DIR with the same bytes. Prints one JSON object on stdout and exits
0 (pass), 1 (fail) or 2 (usage). Replace the comparison with this task
class's real grading.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path


def grade(case_dir: Path, candidate_dir: Path) -> dict[str, object]:
    """Return the verdict for one candidate."""
    expected = case_dir / "expected"
    for file in sorted(p for p in expected.rglob("*") if p.is_file()):
        relative = file.relative_to(expected)
        produced = candidate_dir / relative
        if not produced.is_file() or produced.read_bytes() != file.read_bytes():
            return {{"case": case_dir.name, "passed": False, "reason": f"{{relative}} differs"}}
    return {{"case": case_dir.name, "passed": True, "reason": "all expected files match"}}


def main(argv: list[str]) -> int:
    """Grade ``argv[1]`` (the case) against ``argv[2]`` (the candidate)."""
    if len(argv) != 3:
        print(__doc__, file=sys.stderr)
        return 2
    verdict = grade(Path(argv[1]), Path(argv[2]))
    print(json.dumps(verdict, sort_keys=True))
    return 0 if verdict["passed"] else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv))
'''

_CASE = """\
id = "example"
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
    mode = path.stat().st_mode & 0o7777 if path.exists() else 0o644
    handle, temporary = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(handle, "wb") as file:
            file.write(data)
            file.flush()
            os.fsync(file.fileno())
        os.chmod(temporary, mode)
        os.replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise


def scaffold_task_class(
    manifest: BenchManifest,
    slug: str,
    *,
    root: str = "bench",
    description: str | None = None,
) -> Scaffold:
    """Create ``<root>/<ident>/`` and append the entry for ``slug`` to the manifest.

    Raises ``InvalidTaskClassName`` for a bad slug, ``ScaffoldConflict`` when
    the slug, its module or its directory exists (or the manifest cannot take
    the entry), and ``BenchManifestInvalid`` when the manifest changed on
    disk into an invalid one. Nothing is written when it raises.
    """
    check_slug(slug)
    ident = slug_to_identifier(slug)
    package = PurePosixPath(root).name
    entry = ManifestEntry(module=f"{package}.{ident}.registration", root=root)
    path = manifest.path
    if slug in manifest:
        raise ScaffoldConflict(slug, "slug", path, f"{path} already declares {slug!r}")
    for other, existing in manifest:
        if existing.module == entry.module:
            detail = f"module {entry.module!r} already belongs to {other!r} in {path}"
            raise ScaffoldConflict(slug, "module", path, detail)
    directory = entry.case_dir(manifest.directory / root)
    if directory.exists() or directory.is_symlink():
        raise ScaffoldConflict(slug, "directory", directory, f"{directory} already exists")

    current = path.read_bytes()
    updated = current + _entry_bytes(slug, entry, current)
    try:
        BenchManifest.from_bytes(updated, path)
    except BenchManifestInvalid as exc:
        detail = (
            f"{path} cannot take a [task-classes.{slug}] table appended at its end "
            f"({exc.problems[0].message})"
        )
        raise ScaffoldConflict(slug, "manifest", path, detail) from exc

    description = description or f"The {slug} task class."
    directory.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(dir=directory.parent, prefix=f".{ident}."))
    try:
        (staging / "registration.py").write_text(
            _REGISTRATION.format(slug=slug, description=description, class_name=_class_name(slug)),
            encoding="utf-8",
        )
        (staging / "rubric.py").write_text(_RUBRIC.format(slug=slug), encoding="utf-8")
        case = staging / "cases" / "example"
        (case / "expected").mkdir(parents=True)
        (case / "case.toml").write_text(_CASE, encoding="utf-8")
        (case / "expected" / "README.txt").write_text(
            "Files a correct candidate produces.\n", encoding="utf-8"
        )
        staging.chmod(0o755)
        staging.rename(directory)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    try:
        _write_atomically(path, updated)
    except BaseException:
        shutil.rmtree(directory, ignore_errors=True)
        raise
    files = tuple(sorted(p for p in directory.rglob("*") if p.is_file()))
    return Scaffold(slug, entry.module, directory, files, path)
