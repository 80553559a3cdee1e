"""The package's layering holds: the import-linter contract, private names, deferred imports."""

from __future__ import annotations

import ast
import re
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
PACKAGE = REPO / "src" / "codegenie" / "eval"
SOURCES = sorted(PACKAGE.rglob("*.py"))


def module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def test_the_import_contract_is_kept() -> None:
    """lint-imports (the [tool.importlinter] contracts of pyproject.toml) finds nothing broken."""
    linter = shutil.which("lint-imports", path=str(Path(sys.executable).parent))
    assert linter is not None, "import-linter is a test dependency"
    done = subprocess.run(
        [linter, "--config", str(REPO / "pyproject.toml")],
        cwd=REPO,
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "0 broken" in done.stdout


@pytest.mark.parametrize("path", SOURCES, ids=lambda p: str(p.relative_to(PACKAGE)))
def test_no_module_imports_a_private_name_of_another(path: Path) -> None:
    """A name starting with ``_`` is its module's own: no other module imports it."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    offending = [
        f"{path.name}:{node.lineno}: from {node.module} import {alias.name}"
        for node in ast.walk(tree)
        if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("codegenie")
        for alias in node.names
        if alias.name.startswith("_")
        and not alias.name.startswith("__")
        # A private *module* of a package may be imported; a private name may not.
        and not (PACKAGE.parent.parent / (node.module or "").replace(".", "/") / alias.name)
        .with_suffix(".py")
        .exists()
        and not (
            PACKAGE.parent.parent / (node.module or "").replace(".", "/") / alias.name
        ).is_dir()
    ]
    assert offending == []


@pytest.mark.parametrize("path", SOURCES, ids=lambda p: str(p.relative_to(PACKAGE)))
def test_every_deferred_import_says_why(path: Path) -> None:
    """An import inside a function is there for start-up cost (or a platform) and says so."""
    lines = path.read_text(encoding="utf-8").splitlines()
    tree = ast.parse("\n".join(lines))
    unexplained = []
    for function in ast.walk(tree):
        if not isinstance(function, ast.FunctionDef | ast.AsyncFunctionDef):
            continue
        for node in ast.walk(function):
            if isinstance(node, ast.Import | ast.ImportFrom):
                line = lines[node.lineno - 1]
                before = lines[node.lineno - 2] if node.lineno > 1 else ""
                said = re.search(r"PLC0415 - \S", line) or before.strip().startswith("#")
                if not said:
                    unexplained.append(f"{path.name}:{node.lineno}: {line.strip()}")
    assert unexplained == []


SEAMS = ("sandbox-seam", "executor-seam", "report-seam", "supervisor-seam", "ray-seam")


@pytest.mark.parametrize("seam", SEAMS)
def test_each_seam_is_a_contract_that_says_why(seam: str) -> None:
    """A seam between concepts is a forbidden-import contract, with a comment above it saying why."""
    text = (REPO / "pyproject.toml").read_text(encoding="utf-8")
    contracts = tomllib.loads(text)["tool"]["importlinter"]["contracts"]
    assert {c["id"]: c["type"] for c in contracts}.get(seam) == "forbidden"
    before = text.split(f'id = "{seam}"')[0].rsplit("[[tool.importlinter.contracts]]", 1)[0]
    assert before.rstrip().splitlines()[-1].startswith("# ")
