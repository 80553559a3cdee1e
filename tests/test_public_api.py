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


# The public modules of checking, reports and environments: each says its names in __all__.
PUBLIC_MODULES = ("codegenie.eval.check", "codegenie.eval.reports", "codegenie.eval.environments")


def test_the_public_modules_export_what_they_name() -> None:
    """Each public module's __all__ names each public name once, and each one resolves."""
    import importlib

    for name in PUBLIC_MODULES:
        module = importlib.import_module(name)
        exported = module.__all__
        assert len(set(exported)) == len(exported), name
        assert not [n for n in exported if n.startswith("_")], name
        for exported_name in exported:
            assert getattr(module, exported_name) is not None, (name, exported_name)


def test_the_public_modules_leave_the_package_surface_as_it_is() -> None:
    """Importing them adds nothing to codegenie.eval.__all__: it stays the nine pinned names."""
    import importlib

    for name in PUBLIC_MODULES:
        importlib.import_module(name)
    assert set(codegenie.eval.__all__) == PINNED
