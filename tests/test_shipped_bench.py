"""The repository's own bench, whatever task classes it holds: they load, their cases validate, their rubrics grade."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

from codegenie.eval import BenchManifest, TaskClassRegistry
from codegenie.eval.cases import COMMON_KEYS
from codegenie.eval.loader import load_cases, load_task_class
from codegenie.eval.rubrics import run_rubric

pytestmark = pytest.mark.shipped_bench

REPO = Path(__file__).resolve().parent.parent
MANIFEST = BenchManifest.load(REPO / "bench.toml")


def _slugs() -> tuple[str, ...]:
    """The slugs the shipped manifest declares, whichever they are."""
    return MANIFEST.slugs()


def _root(slug: str) -> Path:
    return MANIFEST.root_dir(slug)


@pytest.mark.parametrize("slug", _slugs())
def test_shipped_task_class_resolves_without_importing_its_rubric(slug: str) -> None:
    """Each shipped slug loads from its root, with an existing rubric and at least one case."""
    task_class = load_task_class(slug, _root(slug), registry=TaskClassRegistry())
    assert task_class.name == slug
    assert task_class.description
    assert task_class.rubric is not None
    assert task_class.rubric.is_file()
    assert task_class.cases is not None
    assert [p for p in task_class.cases.iterdir() if p.is_dir()]
    assert not [name for name in sys.modules if name.endswith(".rubric")]


def _cases() -> list[tuple[str, Path]]:
    """Every (slug, case directory) of the shipped bench, whatever task classes it holds."""
    found = []
    for slug, entry in MANIFEST:
        case_root = entry.case_dir(REPO / entry.root) / "cases"
        found += [(slug, case) for case in sorted(case_root.iterdir()) if case.is_dir()]
    return found


def _tree(root: Path) -> dict[str, bytes | None]:
    """Every path under ``root`` with its bytes (``None`` for a directory)."""
    return {
        str(path.relative_to(root)): path.read_bytes() if path.is_file() else None
        for path in sorted(root.rglob("*"))
    }


@pytest.mark.parametrize(("slug", "case_dir"), _cases(), ids=lambda v: getattr(v, "name", v))
def test_rubric_passes_the_expected_solution_and_fails_the_input(slug: str, case_dir: Path) -> None:
    """Through the one rubric runner, each shipped case's expected/ passes and its input/ fails."""
    registry = TaskClassRegistry()
    task_class = load_task_class(slug, _root(slug), registry=registry)
    cases = {case.id: case for case in load_cases(slug, _root(slug), registry=registry)}
    case = cases[case_dir.name]
    assert task_class.rubric is not None
    before = _tree(case_dir.parent.parent)
    # As grade and check run it: CASE_DIR holds expected/ only for a rubric that reads it.
    reads = task_class.reads_expected
    golden = run_rubric(task_class.rubric, case, case.expected, reads_expected=reads)
    null = run_rubric(task_class.rubric, case, case.input, reads_expected=reads)
    assert _tree(case_dir.parent.parent) == before
    assert (golden.status, null.status) == ("passed", "failed"), (golden, null)
    assert golden.verdict is not None
    assert null.verdict is not None
    assert golden.verdict["case"] == null.verdict["case"] == case.id
    assert null.reason


@pytest.mark.parametrize("slug", _slugs())
def test_shipped_cases_are_valid_and_typed(slug: str) -> None:
    """Every case of each shipped task class loads; a declared case model is closed and strict."""
    registry = TaskClassRegistry()
    task_class = load_task_class(slug, _root(slug), registry=registry)
    model = task_class.case_model
    cases = load_cases(slug, _root(slug), registry=registry)
    assert cases
    for case in cases:
        assert case.description
    if model is None:
        return  # a task class as `new` scaffolds it: cases with the common keys only
    assert model.model_config.get("extra") == "forbid"
    assert model.model_config.get("strict") is True
    for case in cases:
        assert isinstance(case.data, model)


def _keys_read(rubric: Path) -> tuple[set[str], list[str]]:
    """The case.toml keys a rubric reads, and every other use of the parsed case it makes.

    The parsed case is whatever name a ``tomllib.load``/``tomllib.loads`` call is
    assigned to; a read is ``case["key"]`` or ``case.get("key")``.
    """
    tree = ast.parse(rubric.read_text(encoding="utf-8"))
    names = {
        target.id
        for node in ast.walk(tree)
        if isinstance(node, ast.Assign)
        and isinstance(node.value, ast.Call)
        and isinstance(node.value.func, ast.Attribute)
        and node.value.func.attr in {"load", "loads"}
        and isinstance(node.value.func.value, ast.Name)
        and node.value.func.value.id == "tomllib"
        for target in node.targets
        if isinstance(target, ast.Name)
    }
    keys: set[str] = set()
    accounted: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Subscript) and isinstance(node.value, ast.Name):
            if node.value.id in names and isinstance(node.slice, ast.Constant):
                keys.add(str(node.slice.value))
                accounted.add(id(node.value))
        elif (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr == "get"
            and isinstance(node.func.value, ast.Name)
            and node.func.value.id in names
            and node.args
            and isinstance(node.args[0], ast.Constant)
        ):
            keys.add(str(node.args[0].value))
            accounted.add(id(node.func.value))
    other_uses = [
        f"line {node.lineno}"
        for node in ast.walk(tree)
        if isinstance(node, ast.Name)
        and node.id in names
        and isinstance(node.ctx, ast.Load)
        and id(node) not in accounted
    ]
    return keys, other_uses


@pytest.mark.parametrize("slug", _slugs())
def test_rubrics_read_only_keys_their_case_model_declares(slug: str) -> None:
    """Every case.toml key a shipped rubric reads is a common key or declared by the case model."""
    task_class = load_task_class(slug, _root(slug), registry=TaskClassRegistry())
    assert task_class.rubric is not None
    model = task_class.case_model
    declared = {
        field.alias or name for name, field in (model.model_fields if model else {}).items()
    }
    keys, other_uses = _keys_read(task_class.rubric)
    if model is not None:
        assert keys, "the scan found no read: the rubric reads case.toml some other way"
    assert other_uses == []
    assert keys <= declared | set(COMMON_KEYS)


def test_the_key_scan_sees_reads_and_other_uses(tmp_path: Path) -> None:
    """The scan behind the previous test finds subscripts and get() reads, and flags anything else."""
    rubric = tmp_path / "rubric.py"
    rubric.write_text(
        "import tomllib\n"
        "case = tomllib.loads(text)\n"
        "a = case['id']\n"
        "b = case.get('timeout', 60)\n"
        "for key in case:\n"
        "    pass\n"
    )
    keys, other_uses = _keys_read(rubric)
    assert keys == {"id", "timeout"}
    assert other_uses == ["line 5"]


@pytest.mark.parametrize("slug", _slugs())
def test_rubric_usage_error_exits_2(slug: str) -> None:
    """A rubric called without its arguments prints usage and exits 2."""
    rubric = MANIFEST.entry(slug).case_dir(_root(slug)) / "rubric.py"
    result = subprocess.run(
        [sys.executable, str(rubric)], capture_output=True, text=True, timeout=60, check=False
    )
    assert result.returncode == 2
    assert "Usage" in result.stderr
