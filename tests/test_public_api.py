"""The public surface: exactly the pinned names, typed."""

from __future__ import annotations

from pathlib import Path

import codegenie.eval
import codegenie.eval.loader

PINNED = {
    "BenchManifest",
    "EvalError",
    "ManifestEntry",
    "RunPlan",
    "Runner",
    "TaskClass",
    "TaskClassRegistry",
    "default_registry",
    "register_task_class",
}
# Runner and RunPlan arrive with Runner.plan (the next issue).
NOT_YET: set[str] = set()


def test_package_all_is_the_pinned_surface() -> None:
    """codegenie.eval.__all__ holds the pinned names (and nothing else), sorted."""
    assert set(codegenie.eval.__all__) == PINNED - NOT_YET
    assert list(codegenie.eval.__all__) == sorted(codegenie.eval.__all__)
    for name in codegenie.eval.__all__:
        assert getattr(codegenie.eval, name) is not None


def test_load_task_class_stays_in_its_submodule() -> None:
    """load_task_class and load_cases stay in the loader, not on the package surface (AC-1, AC-2)."""
    assert "load_task_class" not in codegenie.eval.__all__
    assert "load_cases" not in codegenie.eval.__all__
    assert codegenie.eval.loader.__all__ == ("load_task_class", "load_cases")


def test_package_ships_py_typed() -> None:
    """The package carries the PEP 561 marker."""
    assert (Path(codegenie.eval.__file__).parent / "py.typed").is_file()
