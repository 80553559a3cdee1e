"""Checking an entry's own environment: its requirements file and its Python.

An entry may declare ``environment = "envs/np-task.txt"`` (a requirements
file, relative to the manifest) and ``python = "3.12"``. ``check`` builds
nothing (``codegenie-bench env build`` does); it reports what would make a
build fail before it starts:

- ``environment-invalid``: the file does not exist, is not a regular file
  (a directory, a FIFO — looked at with ``stat``, and opened without
  blocking), resolves outside the manifest's directory, is over 1 MiB or
  cannot be read — at the entry's ``environment`` value; or it can be read
  and has problems (:func:`codegenie.eval._env.requirements.requirements_problems`)
  — each at its own line of the requirements file.
- ``python-unavailable``: no interpreter of that version is found
  (:func:`codegenie.eval._env.python.find_python`) — at the ``python`` value.

A file or a version shared by many entries is looked at once.
"""

from __future__ import annotations

import os
import stat
from dataclasses import dataclass, field
from pathlib import Path
from typing import Final

from codegenie.eval import codes
from codegenie.eval._manifest.model import ManifestEntry
from codegenie.eval._paths import FileRefused, fs_path, read_regular_file, refusal
from codegenie.eval.codes import diagnostic
from codegenie.eval.diagnostics import Diagnostic
from codegenie.eval.problems import display_path

__all__ = ("REQUIREMENTS_SIZE_LIMIT", "EnvironmentChecks")

#: The largest requirements file read: far more than any real one.
REQUIREMENTS_SIZE_LIMIT: Final = 1024 * 1024

Location = tuple[str, int, int]


@dataclass(frozen=True, slots=True)
class _Verdict:
    """What one requirements file is: why it cannot be used as a whole, or its line problems."""

    shown: str  # the file, as diagnostics name it
    refused: str | None = None  # completes "environment 'x' of 'slug' …"
    hint: str | None = None
    problems: tuple[tuple[int, str], ...] = ()  # (line, message)


def _look(environment: str, manifest_dir: Path) -> _Verdict:
    """Look at the requirements file ``environment`` names (relative to ``manifest_dir``)."""
    path = manifest_dir / fs_path(environment)
    shown = display_path(path)
    try:
        status = os.stat(path)  # never open what is not a regular file: a FIFO would block
    except FileNotFoundError:
        return _Verdict(
            shown,
            f"does not exist ({shown})",
            f"create {shown} (pip's format: one requirement a line), "
            "or fix the entry's environment",
        )
    except OSError as exc:
        return _Verdict(shown, f"cannot be read ({shown}): {exc.strerror or exc}")
    resolved = Path(os.path.realpath(path))
    if not resolved.is_relative_to(manifest_dir):
        return _Verdict(
            shown,
            f"resolves to {resolved}, outside the manifest's directory {manifest_dir}",
            "keep the requirements file inside the repository: copy it in, "
            "or fix the link or the entry's environment",
        )
    if not stat.S_ISREG(status.st_mode):
        return _Verdict(shown, f"{refusal(status.st_mode).reason} ({shown})")
    try:
        data, _ = read_regular_file(str(path), REQUIREMENTS_SIZE_LIMIT)
    except FileRefused as exc:
        return _Verdict(shown, f"{exc.reason} ({shown})")
    except OSError as exc:
        return _Verdict(shown, f"cannot be read ({shown}): {exc.strerror or exc}")
    # Imported here: packaging's parser is needed only by a manifest that names an environment.
    from codegenie.eval._env.requirements import requirements_problems  # noqa: PLC0415

    found = requirements_problems(data)
    return _Verdict(shown, problems=tuple((problem.line, problem.message) for problem in found))


def _worded(slug: str, message: str) -> str:
    """Say a requirements file's problem as the entry's: its subject is the file."""
    subject = "the file " if message.startswith(("is ", "holds ")) else ""
    return f"requirements of {slug!r}: {subject}{message}"


@dataclass
class EnvironmentChecks:
    """The environment checks of one manifest's entries; each file and version looked at once.

    ``manifest_dir`` is the manifest's directory, symbolic links resolved.
    """

    manifest_dir: Path
    _files: dict[str, _Verdict] = field(default_factory=dict)

    def check(
        self, slug: str, entry: ManifestEntry, *, environment_at: Location, python_at: Location
    ) -> list[Diagnostic]:
        """Return the entry's ``environment-invalid`` and ``python-unavailable`` diagnostics.

        ``environment_at`` and ``python_at`` are where the entry's
        ``environment`` and ``python`` values are written (file, line, column).
        """
        found: list[Diagnostic] = []
        if entry.environment is not None:
            found += self._environment(slug, entry.environment, environment_at)
        if entry.python is not None:
            found += _python(slug, entry.python, python_at)
        return found

    def _environment(self, slug: str, environment: str, at: Location) -> list[Diagnostic]:
        verdict = self._files.get(environment)
        if verdict is None:
            verdict = self._files[environment] = _look(environment, self.manifest_dir)
        if verdict.refused is not None:
            message = f"environment {environment!r} of {slug!r} {verdict.refused}"
            return [
                diagnostic(codes.ENVIRONMENT_INVALID, message, *at, slug=slug, hint=verdict.hint)
            ]
        return [
            diagnostic(
                codes.ENVIRONMENT_INVALID,
                _worded(slug, message),
                verdict.shown,
                line,
                1,
                slug=slug,
            )
            for line, message in verdict.problems
        ]


def _python(slug: str, version: str, at: Location) -> list[Diagnostic]:
    # Imported here: only a manifest that names a Python needs to look for one.
    from codegenie.eval._env.python import find_python  # noqa: PLC0415

    if find_python(version) is not None:
        return []
    message = f"{slug!r} asks for Python {version}, and this machine has no such interpreter"
    hint = (
        f"install Python {version} (`uv python install {version}`, or the system's package), "
        "or change the entry's python"
    )
    return [diagnostic(codes.PYTHON_UNAVAILABLE, message, *at, slug=slug, hint=hint)]
