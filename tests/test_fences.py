"""Structural fences: ADR-0001 (no rubric imports) and a library that never prints or exits."""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
SOURCE = REPO / "src" / "codegenie" / "eval"
# Every library module: the package's private subpackages included, the command line excluded.
LIBRARY = sorted(
    p
    for p in SOURCE.rglob("*.py")
    if p.name != "__main__.py" and "cli" not in p.relative_to(SOURCE).parts
)
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


def names_a_rubric(name: str) -> bool:
    """Whether an imported name is a rubric module (``bench.x.rubric``) or file (``rubric.py``).

    ``codegenie.eval.rubrics``, the runner that starts rubrics as subprocesses,
    is not a rubric: it is fenced off from the loading path separately below.
    """
    return "rubric" in name.replace(".py", "").split(".") or name.endswith("rubric.py")


def test_scanner_sees_every_form_of_rubric_import() -> None:
    """The fence's scanner catches import, from-import and import_module forms."""
    source = (
        "import bench.x.rubric\nfrom bench.x import rubric\n"
        "import importlib\nimportlib.import_module('bench.x.rubric')\n"
        "import runpy\nrunpy.run_path('bench/x/rubric.py')\n"
        "from codegenie.eval import rubrics\n"
    )
    names = list(imported_names(ast.parse(source)))
    assert sum(names_a_rubric(name) for name in names) == 4


@pytest.mark.parametrize(
    "path", [SOURCE / "loader.py", *LIBRARY], ids=lambda p: str(p.relative_to(SOURCE))
)
def test_library_never_imports_a_rubric(path: Path) -> None:
    """No library module names a rubric module in any import (ADR-0001, AC-21)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    assert not [name for name in imported_names(tree) if names_a_rubric(name)]


def module_file(name: str) -> Path | None:
    """The source file of the codegenie.eval module ``name``, ``None`` for any other name."""
    if not name.startswith("codegenie.eval."):
        return None
    base = SOURCE.joinpath(*name.split(".")[2:])
    for candidate in (base.with_suffix(".py"), base / "__init__.py"):
        if candidate.is_file():
            return candidate
    return None


def package_closure(start: Path) -> list[Path]:
    """``start`` and every codegenie.eval module it imports, directly or not."""
    seen: dict[Path, Path] = {}
    pending = [start]
    while pending:
        path = pending.pop()
        if path in seen:
            continue
        seen[path] = path
        for name in imported_names(ast.parse(path.read_text(encoding="utf-8"))):
            module = module_file(name)
            if module is not None:
                pending.append(module)
    return sorted(seen.values())


# What reading cases must never reach: a way to run code or start a process.
RUNS_CODE = {"subprocess", "runpy", "multiprocessing", "importlib", "codegenie.eval.rubrics"}
BUILTIN_RUNS = {"exec", "eval", "compile", "__import__", "breakpoint"}
ATTRIBUTE_RUNS = {
    "system", "popen", "fork", "forkpty", "execv", "execve", "execvp", "spawnv",
    "posix_spawn", "run_path", "run_module", "import_module", "exec_module",
}  # fmt: skip


@pytest.mark.parametrize(
    "path", package_closure(SOURCE / "cases.py"), ids=lambda p: str(p.relative_to(SOURCE))
)
def test_reading_cases_never_runs_code(path: Path) -> None:
    """cases.py and everything it imports neither start a process nor run code (load_cases, ADR-0001)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    imported = set(imported_names(tree))
    assert not [name for name in imported if name.split(".")[0] in RUNS_CODE or name in RUNS_CODE]
    runs = [
        f"{path.name}:{node.lineno}"
        for node in ast.walk(tree)
        if isinstance(node, ast.Call)
        and (
            (isinstance(node.func, ast.Name) and node.func.id in BUILTIN_RUNS)
            or (isinstance(node.func, ast.Attribute) and node.func.attr in ATTRIBUTE_RUNS)
        )
    ]
    assert runs == []


def test_the_case_reader_closure_is_what_load_cases_adds() -> None:
    """The fenced closure covers the case reader itself and the TOML reading it relies on."""
    names = {str(path.relative_to(SOURCE)) for path in package_closure(SOURCE / "cases.py")}
    assert {"cases.py", "_toml/read.py", "_toml/positions.py", "_paths.py"} <= names
    assert "rubrics.py" not in names
    assert "loader.py" not in names


def test_load_cases_only_adds_the_case_reader_to_the_loader() -> None:
    """loader.load_cases reaches cases through cases.read_cases only, never through the runner."""
    tree = ast.parse((SOURCE / "loader.py").read_text(encoding="utf-8"))
    names = set(imported_names(tree))
    assert "codegenie.eval.cases" in names
    assert not [name for name in names if "rubrics" in name]


@pytest.mark.shipped_bench
@pytest.mark.parametrize("path", REGISTRATIONS, ids=lambda p: p.parent.name)
def test_shipped_registrations_never_import_their_rubric(path: Path) -> None:
    """The shipped registration modules keep rubrics out of the process (ADR-0001)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    assert not [name for name in imported_names(tree) if "rubric" in name]


FORBIDDEN_CALLS = {"print", "exit", "basicConfig", "configure", "_exit"}
# A forked child ends with os._exit: it must never run the parent's clean-up.
# The warm worker's program is a process of its own whose every fork ends so, and so is
# the head that confines a plain run (it execs the rubric, or ends there). The rubric kit is
# not the library's: it runs inside a rubric, whose process verdict() ends (os._exit, so that
# no atexit hook of candidate code runs), and as the driver of a child it starts.
FORKED_CHILD_EXITS = {
    "_kit/codegenie_rubric.py": {"_exit", "exit"},
    "check/_worker.py": {"_exit"},
    "_process/supervisor.py": {"_exit"},
    "_sandbox/warm/zygote.py": {"_exit"},
    "_sandbox/confine.py": {"_exit"},
}


@pytest.mark.parametrize("path", LIBRARY, ids=lambda p: str(p.relative_to(SOURCE)))
def test_library_never_prints_exits_or_configures_logging(path: Path) -> None:
    """Only the CLI prints, exits or configures logging; library modules return and raise."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    offending = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            func = node.func
            name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
            allowed = FORKED_CHILD_EXITS.get(str(path.relative_to(SOURCE)), set())
            if name in FORBIDDEN_CALLS - allowed:
                offending.append(f"{path.name}:{node.lineno}: {name}()")
    assert offending == []


@pytest.mark.shipped_bench
def test_bench_is_a_namespace_package() -> None:
    """bench/ has no __init__.py (PEP 420), so several roots can share the name."""
    assert not (REPO / "bench" / "__init__.py").exists()


def test_only_the_ray_executor_imports_ray_and_nothing_imports_it_unasked() -> None:
    """Ray is an optional extra: one module imports it, inside the functions that need it.

    And no command or library module imports that module at its top: a
    grading on the local executor never pays for (or needs) Ray.
    """
    importing_ray: list[str] = []
    importing_it_at_top: list[str] = []
    for path in sorted(SOURCE.rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        names = set(imported_names(tree))
        if "ray" in names or any(name.startswith("ray.") for name in names):
            importing_ray.append(str(path.relative_to(SOURCE)))
        for node in tree.body:
            if isinstance(node, ast.Import | ast.ImportFrom) and any(
                name.endswith("_exec.on_ray") for name in imported_names(node)
            ):
                importing_it_at_top.append(str(path.relative_to(SOURCE)))
        for top in tree.body:  # never "import ray" at a module's top level
            if isinstance(top, ast.Import):
                assert all(alias.name.split(".")[0] != "ray" for alias in top.names), path
    assert importing_ray == ["_exec/on_ray.py"]
    assert importing_it_at_top == []


def _passes_in_a_fresh_interpreter(code: str) -> None:
    """Run ``code`` in a new interpreter (nothing imported yet); fail with its stderr if it does."""
    import subprocess
    import sys

    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr


def test_a_local_grading_imports_no_ray() -> None:
    _passes_in_a_fresh_interpreter(
        "import sys\n"
        "from codegenie.eval import grading, cli\n"
        "from codegenie.eval.check import golden\n"
        "from codegenie.eval._exec import executor_named\n"
        "executor_named('local')\n"
        "assert 'ray' not in sys.modules, sorted(m for m in sys.modules if m.startswith('ray'))\n"
    )


def test_choosing_the_local_executor_imports_not_the_ray_executors_module() -> None:
    """The command line's local path pays for no Ray module: neither Ray nor the executor of it.

    The Ray executor's module and what it imports (shipping, the node side)
    cost about 26 ms of every command that runs rubrics.
    """
    _passes_in_a_fresh_interpreter(
        "import argparse, sys\n"
        "from codegenie.eval.cli._base import choose_executor\n"
        "executor = choose_executor('local', argparse.Namespace(), 'usage')\n"
        "assert executor.name == 'local', executor\n"
        "loaded = sorted(m for m in sys.modules if m.startswith('codegenie.eval._exec.'))\n"
        "assert loaded == ['codegenie.eval._exec.local'], loaded\n"
    )


def test_the_confining_head_s_source_is_ascii() -> None:
    """A plain run passes ``confine.py``'s source on the command line (``python -c``).

    A command line is encoded with the file-system encoding, which is ASCII
    under ``LC_ALL=C`` without UTF-8 mode: one character beyond ASCII there
    made every sandboxed run of such a locale an internal error.
    """
    source = (SOURCE / "_sandbox" / "confine.py").read_bytes()
    assert source.isascii(), [
        number for number, line in enumerate(source.splitlines(), start=1) if not line.isascii()
    ]


# -- the public API: its examples and its test import no private name --------------------

API_DOC = REPO / "docs" / "api.md"
# The sections that document the public checking, reports and environments modules.
PUBLIC_SECTIONS = ("Checking", "Reports: reading, comparing, merging", "Environments")
# The test that runs those examples: it imports nothing of the package, public names aside.
PUBLIC_API_TESTS = (REPO / "tests" / "test_api_examples.py",)


def names_a_private_module(name: str) -> bool:
    """Whether an imported name reaches a ``codegenie.eval`` module or name that is not public."""
    parts = name.split(".")
    return parts[:2] == ["codegenie", "eval"] and any(part.startswith("_") for part in parts[2:])


def _api_examples() -> list[tuple[str, str]]:
    text = API_DOC.read_text(encoding="utf-8")
    examples = []
    for title in PUBLIC_SECTIONS:
        start = text.index(f"\n## {title}\n")
        end = text.find("\n## ", start + 1)
        section = text[start : end if end != -1 else len(text)]
        blocks = re.findall(r"```python\n(.*?)```", section, re.DOTALL)
        examples += [(f"{title} #{number}", block) for number, block in enumerate(blocks, 1)]
    return examples


def test_the_private_module_scanner_sees_private_names() -> None:
    """The scanner flags a private module, a private name of a public one, and nothing public."""
    source = (
        "import codegenie.eval._reports.reader\nfrom codegenie.eval.reports import _read\n"
        "from codegenie.eval import _json\nfrom codegenie.eval.reports import merge\n"
        "import codegenie.eval.environments\n"
    )
    found = [name for name in imported_names(ast.parse(source)) if names_a_private_module(name)]
    assert found == [
        "codegenie.eval._reports.reader",
        "codegenie.eval.reports._read",
        "codegenie.eval._json",
    ]


@pytest.mark.parametrize("example", _api_examples(), ids=lambda example: example[0])
def test_the_public_api_examples_import_no_private_name(example: tuple[str, str]) -> None:
    """Each example of the public modules' sections of docs/api.md uses public names only."""
    tree = ast.parse(example[1])
    assert not [name for name in imported_names(tree) if names_a_private_module(name)]


@pytest.mark.parametrize("path", PUBLIC_API_TESTS, ids=lambda p: p.name)
def test_the_public_api_tests_import_no_private_name(path: Path) -> None:
    """The test of the public API's examples imports no private module or name of the package."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    assert not [name for name in imported_names(tree) if names_a_private_module(name)]
