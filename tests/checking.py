"""Helpers shared by the tests of ``check``: complete benches, a run, its codes."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from codegenie.eval.check import CheckOptions, CheckReport, RubricChecks, run_check

from .factory import Bench
from .factory import make_bench as _make_bench


def make_bench(base: Path, *slugs: str, **options: Any) -> Bench:
    """Build a bench whose task classes each have a working rubric and a case."""
    return _make_bench(base, *slugs, parts=True, **options)


def codes(report: CheckReport) -> list[tuple[str, str | None]]:
    """Return each diagnostic's (code, slug), in report order."""
    return [(d.code, d.slug) for d in report.diagnostics]


def check(bench: Bench, *, rubrics: bool = False, **options: Any) -> CheckReport:
    """Run ``check`` on ``bench`` with two jobs and a 20 s timeout unless told otherwise.

    ``options`` are :class:`CheckOptions` fields; ``rubrics`` runs the rubrics as ``--rubrics``.
    """
    options.setdefault("jobs", 2)
    options.setdefault("timeout", 20.0)
    given = CheckOptions(**options, rubrics=RubricChecks() if rubrics else None)
    return run_check(bench.manifest, given)
