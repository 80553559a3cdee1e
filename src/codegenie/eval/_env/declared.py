"""From a manifest entry's ``environment`` and ``python`` to an environment ready to run in.

:func:`declared_spec` reads what an entry declares (``None`` for a task
class that declares neither: it runs in the harness's interpreter);
:func:`ready_environment` finds the interpreter and returns the built
environment, building it unless told not to. Each failure is a typed error
naming the task class: ``EnvironmentBuildFailed`` (step ``requirements``)
for a requirements file that cannot be used, ``PythonUnavailable``,
``EnvironmentNotBuilt`` (``build=False``), ``EnvironmentBuildFailed``.
:func:`planned_environment` says what an entry declares, and its digest
when that is known without building (a run plan's, a check report's).
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Callable
from pathlib import Path

from codegenie.eval._env.build import build_environment
from codegenie.eval._env.python import Python, find_python
from codegenie.eval._env.requirements import requirements_problems
from codegenie.eval._env.spec import REQUIREMENTS_LIMIT, EnvironmentSpec
from codegenie.eval._env.store import Environment, inspect_environment
from codegenie.eval._paths import FileRefused, read_regular_file
from codegenie.eval.errors import EnvironmentBuildFailed, EnvironmentNotBuilt, PythonUnavailable
from codegenie.eval.models import PlannedEnvironment

__all__ = ("declared_spec", "environment_python", "planned_environment", "ready_environment")


def declared_spec(
    manifest_dir: Path, environment: str | None, python: str | None, *, task_class: str
) -> EnvironmentSpec | None:
    """Return the spec an entry declares (``environment``: relative to ``manifest_dir``), or None.

    Raises ``EnvironmentBuildFailed`` (step ``requirements``) when the file
    cannot be read or holds lines that are not requirements, each problem
    with its line.
    """
    if environment is None and python is None:
        return None
    if environment is None:
        return EnvironmentSpec(None, b"", python)
    path = Path(os.path.abspath(manifest_dir / environment))

    def refused(output: str) -> EnvironmentBuildFailed:
        return EnvironmentBuildFailed(task_class, path, "", "requirements", output)

    try:
        data, _ = read_regular_file(str(path), REQUIREMENTS_LIMIT)
    except FileNotFoundError:
        raise refused(f"{path}: no such file") from None
    except FileRefused as exc:
        raise refused(f"{path}: {exc.reason}") from None
    except OSError as exc:
        raise refused(f"{path}: {exc.strerror or exc}") from None
    problems = requirements_problems(data)
    if problems:
        raise refused("\n".join(f"{path}:{p.line}: {p.message}" for p in problems))
    return EnvironmentSpec(path, data, python)


def planned_environment(
    manifest_dir: Path, environment: str | None, python: str | None, *, task_class: str
) -> PlannedEnvironment | None:
    """Return what an entry declares (``None``: nothing), with its digest when known unbuilt.

    Builds nothing and never raises for the environment's sake: a
    requirements file that cannot be used, or a Python this machine lacks,
    leaves ``digest`` ``None`` (``check`` reports why). Finding the
    interpreter may start it once; uv is asked its version once a process.
    """
    if environment is None and python is None:
        return None
    requirements = (
        None if environment is None else Path(os.path.abspath(manifest_dir / environment))
    )
    digest = None
    try:
        spec = declared_spec(manifest_dir, environment, python, task_class=task_class)
    except EnvironmentBuildFailed:
        spec = None
    if spec is not None:
        found = find_python(spec.python)
        digest = None if found is None else spec.digest(found)
    return PlannedEnvironment(requirements=requirements, python=python, digest=digest)


def environment_python(
    spec: EnvironmentSpec, *, task_class: str, manifest: Path | None = None
) -> Python:
    """Return the interpreter ``spec`` asks for; ``PythonUnavailable`` if this machine lacks it."""
    found = find_python(spec.python)
    if found is None:
        raise PythonUnavailable(task_class, spec.python or "", manifest)
    return found


def ready_environment(
    spec: EnvironmentSpec,
    *,
    task_class: str,
    manifest: Path | None = None,
    build: bool = True,
    progress: Callable[[str], None] | None = None,
) -> Environment:
    """Return ``spec``'s environment, whole: kept, or (``build``) built now.

    Without ``build``, one not built (or damaged) raises ``EnvironmentNotBuilt``.
    Its ``requirements`` is ``spec``'s file (the environment may have been
    built from another file of the same bytes).
    """
    python = environment_python(spec, task_class=task_class, manifest=manifest)
    if build:
        ready = build_environment(spec, python, task_class=task_class, progress=progress)
    else:
        digest = spec.digest(python)
        found = inspect_environment(digest)
        if found.environment is None:
            raise EnvironmentNotBuilt(task_class, digest, found.damage)
        ready = found.environment
    # One environment serves every bench whose file has these bytes: this one's is named.
    requirements = None if spec.requirements is None else str(spec.requirements)
    return dataclasses.replace(ready, requirements=requirements, declared=spec)
