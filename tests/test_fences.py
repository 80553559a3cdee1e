"""Structural fences: ADR-0001 (no rubric imports) and a library that never prints or exits."""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
SOURCE = REPO / "src" / "codegenie" / "eval"
LIBRARY = sorted(p for p in SOURCE.glob("*.py") if p.name != "__main__.py")  # cli/ is a package
REGISTRATIONS = sorted((REPO / "bench").glob("*/registration.py"))


def imported_names(tree: ast.AST) -> Iterator[str]:
    """Every module an import statement or an import_module/__import__ literal names."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            yield from (alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = "." * node.level + (node.module or "")
            yield base
            yield from (f"{base}.{alias.name}" for alias in node.names)
        elif isinstance(node, ast.Call):
            func = node.func
            name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
            if name in {"import_module", "__import__", "spec_from_file_location", "run_path"}:
                for arg in node.args:
                    if isinstance(arg, ast.Constant) and isinstance(arg.value, str):
                        yield arg.value


def test_scanner_sees_every_form_of_rubric_import() -> None:
    """The fence's scanner catches import, from-import and import_module forms."""
    source = (
        "import bench.x.rubric\nfrom bench.x import rubric\n"
        "import importlib\nimportlib.import_module('bench.x.rubric')\n"
    )
    names = list(imported_names(ast.parse(source)))
    assert sum("rubric" in name for name in names) == 3


@pytest.mark.parametrize("path", [SOURCE / "loader.py", *LIBRARY], ids=lambda p: p.name)
def test_library_never_imports_a_rubric(path: Path) -> None:
    """No library module names a rubric module in any import (ADR-0001, AC-21)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    assert not [name for name in imported_names(tree) if "rubric" in name]


@pytest.mark.shipped_bench
@pytest.mark.parametrize("path", REGISTRATIONS, ids=lambda p: p.parent.name)
def test_shipped_registrations_never_import_their_rubric(path: Path) -> None:
    """The shipped registration modules keep rubrics out of the process (ADR-0001)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    assert not [name for name in imported_names(tree) if "rubric" in name]


FORBIDDEN_CALLS = {"print", "exit", "basicConfig", "configure", "_exit"}


@pytest.mark.parametrize("path", LIBRARY, ids=lambda p: p.name)
def test_library_never_prints_exits_or_configures_logging(path: Path) -> None:
    """Only the CLI prints, exits or configures logging; library modules return and raise."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    offending = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            func = node.func
            name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
            if name in FORBIDDEN_CALLS:
                offending.append(f"{path.name}:{node.lineno}: {name}()")
    assert offending == []


@pytest.mark.shipped_bench
def test_bench_is_a_namespace_package() -> None:
    """bench/ has no __init__.py (PEP 420), so several roots can share the name."""
    assert not (REPO / "bench" / "__init__.py").exists()
