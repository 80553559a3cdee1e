"""The task classes' own environments, from Python: what is declared, what is built, building.

A manifest entry may declare an environment (``environment``, a
requirements file, and ``python``, the version asked for); ``grade`` and
``check --rubrics`` build what they need themselves, and
``codegenie-bench env build|list`` builds or lists them beforehand. This
module is what those commands do, minus the printing:

- :func:`declared_environments` says, for each task class that declares
  one (in manifest order), what it declares, the digest it has on this
  machine and whether it is built (:class:`DeclaredEnvironment`); it
  builds nothing;
- :func:`build_environments` makes each ready (kept, or built now) and
  returns it (:class:`BuiltEnvironment`, its :class:`Environment`).

Environments are kept by digest in :func:`environments_dir`. Nothing here
prints; ``progress`` receives uv's lines while a build runs.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Literal, final

from codegenie.eval._env.declared import declared_spec, ready_environment
from codegenie.eval._env.python import find_python
from codegenie.eval._env.store import Environment, environments_dir, inspect_environment
from codegenie.eval.errors import InvalidTaskClassName
from codegenie.eval.naming import slug_problem

if TYPE_CHECKING:
    from codegenie.eval._env.spec import EnvironmentSpec
    from codegenie.eval.manifest import BenchManifest

__all__ = (
    "BuiltEnvironment",
    "DeclaredEnvironment",
    "Environment",
    "EnvironmentState",
    "build_environments",
    "declared_environments",
    "environments_dir",
)

#: Whether a declared environment is ready: ``built``, ``not built``, or ``damaged`` (its
#: directory differs from what its record says; building it again replaces it).
EnvironmentState = Literal["built", "not built", "damaged"]


@final
@dataclass(frozen=True, slots=True)
class DeclaredEnvironment:
    """What one task class declares, and what this machine has of it (``env list``'s row).

    ``requirements`` is the requirements file (``None``: only ``python`` is
    declared); ``python_request`` the version asked for (``None``: the
    harness's); ``python`` the full version of the interpreter found for it
    (``None``: this machine lacks it; then ``digest`` is ``None`` too, and
    ``state`` ``"not built"``); ``digest`` the environment's
    (``blake2b-256:<hex>``); ``damage`` why a ``damaged`` one is;
    ``environment`` the built environment (``None`` unless ``built``).
    """

    task_class: str
    requirements: Path | None
    python_request: str | None
    python: str | None
    digest: str | None
    state: EnvironmentState
    damage: str | None
    environment: Environment | None


@final
@dataclass(frozen=True, slots=True)
class BuiltEnvironment:
    """One task class's environment, ready: ``built`` now (``True``) or kept from before."""

    task_class: str
    environment: Environment
    built: bool


def _declared(manifest: BenchManifest) -> list[tuple[str, EnvironmentSpec]]:
    """Each task class that declares an environment, and its spec (in manifest order)."""
    found = []
    for slug in manifest.slugs():
        entry = manifest.entry(slug)
        spec = declared_spec(manifest.path.parent, entry.environment, entry.python, task_class=slug)
        if spec is not None:
            found.append((slug, spec))
    return found


def declared_environments(manifest: BenchManifest) -> tuple[DeclaredEnvironment, ...]:
    """Return each declared environment, in manifest order, and whether it is built; build nothing.

    Raises ``EnvironmentBuildFailed`` (step ``requirements``) for a
    requirements file that cannot be read or holds lines that are not
    requirements.
    """
    rows = []
    for slug, spec in _declared(manifest):
        python = find_python(spec.python)
        digest = None if python is None else spec.digest(python)
        found = None if digest is None else inspect_environment(digest)
        environment = None if found is None else found.environment
        damage = None if found is None else found.damage
        state: EnvironmentState = (
            "built" if environment is not None else "not built" if damage is None else "damaged"
        )
        rows.append(
            DeclaredEnvironment(
                task_class=slug,
                requirements=spec.requirements,
                python_request=spec.python,
                python=None if python is None else python.version,
                digest=digest,
                state=state,
                damage=damage,
                environment=environment,
            )
        )
    return tuple(rows)


def build_environments(
    manifest: BenchManifest,
    slugs: Iterable[str] = (),
    *,
    progress: Callable[[str, str], None] | None = None,
    on_undeclared: Callable[[str], None] | None = None,
) -> tuple[BuiltEnvironment, ...]:
    """Make the environment of each of ``slugs`` ready (default: every declared one); return them.

    Each is kept if built already, else built now with uv; ``progress(slug,
    line)`` receives what the build says. A slug whose entry declares no
    environment is passed over (``on_undeclared(slug)`` is told). Before
    anything is built: a slug that breaks the naming rules raises
    ``InvalidTaskClassName``, one the manifest does not declare
    ``TaskClassNotFound``. A build that fails raises
    ``EnvironmentBuildFailed``; a Python this machine lacks,
    ``PythonUnavailable``.
    """
    chosen = list(slugs)
    for slug in chosen:
        reason = slug_problem(slug)
        if reason is not None:
            raise InvalidTaskClassName(slug, reason)
        manifest.entry(slug)
    declared = dict(_declared(manifest))
    ready = []
    for slug in chosen or list(declared):
        spec = declared.get(slug)
        if spec is None:
            if on_undeclared is not None:
                on_undeclared(slug)
            continue
        started: list[str] = []

        def said(line: str, slug: str = slug, started: list[str] = started) -> None:
            started.append(line)
            if progress is not None:
                progress(slug, line)

        environment = ready_environment(
            spec, task_class=slug, manifest=manifest.path, build=True, progress=said
        )
        ready.append(BuiltEnvironment(slug, environment, built=bool(started)))
    return tuple(ready)
