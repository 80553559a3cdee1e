"""Resolving a slug: its task class (through the loader) and the scan of its cases.

``show``, ``plan``, ``grade``, :meth:`codegenie.eval.runner.Runner.plan` and
``check``'s import probe all ask the same question — what does this slug of
this manifest resolve to, and what cases does it have — and get the same
answer, the same errors and the same root here.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import final

from codegenie.eval._manifest.model import BenchManifest
from codegenie.eval.cases import CaseScan, scan_cases
from codegenie.eval.loader import load_task_class
from codegenie.eval.models import TaskClass
from codegenie.eval.registry import TaskClassRegistry

__all__ = ("Resolved", "resolve", "root_for")


def root_for(manifest: BenchManifest, slug: str) -> Path:
    """Return the root to load ``slug`` from: its declared one.

    An undeclared slug is refused by the loader (with suggestions) before it
    looks at the root, so the manifest's directory stands in for it.
    """
    return manifest.root_dir(slug) if slug in manifest else manifest.directory


@final
@dataclass(frozen=True, slots=True)
class Resolved:
    """A resolved slug: its task class and the scan of its cases (valid ones and problems)."""

    task_class: TaskClass
    cases: CaseScan


def resolve(
    slug: str,
    manifest: BenchManifest,
    *,
    registry: TaskClassRegistry | None,
    root: Path | None = None,
) -> Resolved:
    """Resolve ``slug`` of ``manifest`` through ``load_task_class``, then scan its cases.

    ``root`` is :func:`root_for` ``(manifest, slug)``, for a caller that has it
    already (``check`` computes it before it forks).

    Raises what :func:`~codegenie.eval.loader.load_task_class` raises; the
    cases' problems are in the scan (``Resolved.cases.raise_for_problems()``
    raises them as one ``BenchCasesInvalid``), so a caller may still use the
    valid cases. No rubric is run.
    """
    if root is None:
        root = root_for(manifest, slug)
    task_class = load_task_class(slug, root, registry=registry, manifest=manifest)
    return Resolved(task_class, scan_cases(task_class))
