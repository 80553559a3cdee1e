"""Making ready the environments of the task classes a command is about to run rubrics of.

``grade`` and ``check --rubrics`` call :func:`ready_environments` once,
before any rubric runs: each task class that declares an ``environment`` or
a ``python`` gets its built environment (built now, with a line on stderr,
unless ``--no-build`` says to refuse instead). Each failure is the typed
error :mod:`codegenie.eval._env.declared` raises.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

from codegenie.eval._output import escape_control

if TYPE_CHECKING:
    from codegenie.eval._env.store import Environment
    from codegenie.eval._manifest.model import BenchManifest
    from codegenie.eval.cli._base import Output

__all__ = ("ready_environments",)


def ready_environments(
    manifest: BenchManifest, slugs: Iterable[str], out: Output, *, build: bool
) -> dict[str, Environment]:
    """Return the environment of each of ``slugs`` that declares one, ready to run rubrics in."""
    from codegenie.eval.grading import task_class_environment  # noqa: PLC0415 - start-up: only commands that grade pay for it

    def progress(line: str) -> None:
        if not out.quiet:
            out.stderr.write(f"codegenie-bench: {escape_control(line)}\n")

    ready: dict[str, Environment] = {}
    for slug in slugs:
        environment = task_class_environment(manifest, slug, build=build, progress=progress)
        if environment is not None:
            ready[slug] = environment
    return ready
