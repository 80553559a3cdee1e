"""One problem, one description: show, plan and check say each problem the same way."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from codegenie.eval.diagnostics import Diagnostic
from codegenie.eval.problems import display_path, root_hint

from .factory import Bench, make_bench
from .test_cli import run, script

HELPER = "def fine():\n    return 1\nraise ValueError('bad value')\n"

#: Problems of one entry each, slug → code: they live side by side in one bench.
ENTRY_PROBLEMS = {
    "missing-registration": "module-missing",
    "registers-another": "not-registered",
    "raises-in-helper": "import-failed",
    "calls-exit": "import-failed",
    "root-missing": "root-missing",
    "root-outside": "root-outside",
}


def _entry_problems(base: Path) -> Bench:
    """A bench with one good task class and one entry per problem of ENTRY_PROBLEMS."""
    bench = make_bench(base, "other-one", parts=True)
    bench.add("missing-registration", write=False)
    bench.add("registers-another", register="registers-anothr")
    bench.add("raises-in-helper", before="from bench.raises_in_helper import helper")
    (bench.root / "raises_in_helper" / "helper.py").write_text(HELPER)
    bench.add("calls-exit", before="import sys\nsys.exit(3)")
    bench.add("root-missing", root="suite/bench", write=False)
    (base / "suite" / "bench").rmdir()
    elsewhere = base.parent / f"{base.name}-elsewhere"
    make_bench(elsewhere, "root-outside", parts=True)
    (base / "vendor").symlink_to(elsewhere)
    bench.add("root-outside", root="vendor/bench", write=False)
    return bench


def _missing_registration(base: Path) -> Bench:
    bench = make_bench(base, "other-one", parts=True)
    bench.add("alpha-one", write=False)
    return bench


def _wrong_slug(base: Path) -> Bench:
    bench = make_bench(base, "other-one", parts=True)
    bench.add("alpha-one", register="alpha-onee")
    return bench


def _raises_in_a_helper(base: Path) -> Bench:
    bench = make_bench(base, "other-one", parts=True)
    bench.add("alpha-one", before="from bench.alpha_one import helper")
    (bench.root / "alpha_one" / "helper.py").write_text(HELPER)
    return bench


def _root_misspelt(base: Path) -> Bench:
    bench = make_bench(base, "other-one", "alpha-one", parts=True)
    text = bench.manifest.read_text().replace('root = "bench"', 'root = "bnch"')
    bench.manifest.write_text(text.replace('root = "bnch"', 'root = "bench"', 1))
    return bench


def _unknown_key(base: Path) -> Bench:
    bench = make_bench(base, "other-one", "alpha-one", parts=True)
    bench.manifest.write_text(bench.manifest.read_text() + 'rooot = "bench"\n')
    return bench


def _bad_toml(base: Path) -> Bench:
    bench = make_bench(base, "other-one", "alpha-one", parts=True)
    bench.manifest.write_text(bench.manifest.read_text() + "[task-classes.broken\n")
    return bench


def _duplicate_module(base: Path) -> Bench:
    bench = make_bench(base, "other-one", parts=True)
    bench.add("alpha-one", module="bench.other_one.registration", write=False)
    return bench


def _shadowed(base: Path) -> Bench:
    bench = make_bench(base, "other-one", "alpha-one", parts=True)
    (base / "bench.py").write_text("")
    return bench


#: Problems of the bench as a whole (the manifest, a shadowing package): one bench each.
BENCH_PROBLEMS: dict[str, tuple[Callable[[Path], Bench], str]] = {
    "root misspelt": (_root_misspelt, "root-missing"),
    "unknown key": (_unknown_key, "manifest-schema"),
    "bad TOML": (_bad_toml, "manifest-syntax"),
    "duplicate module": (_duplicate_module, "duplicate-module"),
    "another bench answers": (_shadowed, "import-failed"),
}


def _failure_diagnostics(*args: str, cwd: Path) -> list[dict[str, Any]]:
    result = run(*args, "--format", "json", cwd=cwd)
    assert result.returncode != 0, result.stdout
    found: list[dict[str, Any]] = json.loads(result.stdout)["error"]["diagnostics"]
    return found


def _at_once(*commands: list[str], cwd: Path) -> list[dict[str, Any]]:
    """Run the console script once per command, concurrently; return each JSON document."""
    processes = [
        subprocess.Popen(
            [script(), *command, "--format", "json"],
            cwd=cwd,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
        )
        for command in commands
    ]
    return [json.loads(process.communicate(timeout=120)[0]) for process in processes]


@pytest.fixture(scope="module")
def entry_problems(
    tmp_path_factory: pytest.TempPathFactory,
) -> tuple[Path, list[dict[str, Any]], list[dict[str, Any]]]:
    """The bench of ENTRY_PROBLEMS, with what plan and check said about it (run once)."""
    base = tmp_path_factory.mktemp("entries") / "repo"
    _entry_problems(base)
    planned, checked = _at_once(["plan"], ["check"], cwd=base)
    return base, planned["error"]["diagnostics"], checked["diagnostics"]


@pytest.mark.parametrize("slug", ENTRY_PROBLEMS)
def test_show_plan_and_check_say_each_entry_problem_the_same_way(
    entry_problems: tuple[Path, list[dict[str, Any]], list[dict[str, Any]]], slug: str
) -> None:
    """An entry's problem has the same code, place, message, hint and traceback in show, plan and check."""
    base, planned, checked = entry_problems
    [shown] = _failure_diagnostics("show", slug, cwd=base)
    assert shown["code"] == ENTRY_PROBLEMS[slug]
    assert shown in planned
    assert shown in checked, (shown, checked)
    assert not shown["file"].startswith("/")


@pytest.mark.parametrize("problem", BENCH_PROBLEMS)
def test_show_plan_and_check_say_each_bench_problem_the_same_way(
    tmp_path: Path, problem: str
) -> None:
    """A problem of the whole bench reads the same in show, plan and check."""
    build, code = BENCH_PROBLEMS[problem]
    build(tmp_path / "repo")
    shown, planned, checked = _at_once(
        ["show", "alpha-one"], ["plan", "alpha-one"], ["check"], cwd=tmp_path / "repo"
    )
    shown, planned = shown["error"]["diagnostics"], planned["error"]["diagnostics"]
    assert code in {d["code"] for d in shown}
    assert [d["code"] for d in shown] == [code] or code.startswith("manifest-")
    assert planned == shown
    for diagnostic in shown:
        assert diagnostic in checked["diagnostics"], (diagnostic, checked)
        assert not diagnostic["file"].startswith("/")


def test_the_text_of_a_problem_is_the_same_line_in_show_and_check(tmp_path: Path) -> None:
    """In text, show (on stderr) and check (on stdout) print the same diagnostic lines."""
    _raises_in_a_helper(tmp_path)
    shown = run("show", "alpha-one", cwd=tmp_path).stderr.splitlines()
    checked = run("check", cwd=tmp_path).stdout.splitlines()
    assert shown == checked[: len(shown)]
    assert shown[0].startswith("bench/alpha_one/helper.py:3:1: error[import-failed]: ")


def test_entry_problems_point_at_the_table_and_key_problems_at_the_key(tmp_path: Path) -> None:
    """not-registered is at [task-classes.alpha-one], module-missing at its module key."""
    bench = _wrong_slug(tmp_path)
    [wrong] = _failure_diagnostics("show", "alpha-one", cwd=tmp_path)
    header = bench.manifest.read_text().splitlines().index("[task-classes.alpha-one]") + 1
    assert (wrong["file"], wrong["line"], wrong["column"]) == ("bench.toml", header, 1)
    (bench.root / "alpha_one" / "registration.py").unlink()
    [missing] = _failure_diagnostics("show", "alpha-one", cwd=tmp_path)
    assert (missing["code"], missing["line"]) == ("module-missing", header + 1)


def test_paths_outside_the_working_directory_are_absolute(tmp_path: Path) -> None:
    """Run from elsewhere, every command shows the same absolute path."""
    bench = _missing_registration(tmp_path / "repo")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    manifest = ("--manifest", str(bench.manifest))
    [shown] = _failure_diagnostics(*manifest, "show", "alpha-one", cwd=elsewhere)
    checked = json.loads(run(*manifest, "check", "--format", "json", cwd=elsewhere).stdout)
    assert shown["file"] == str(bench.manifest)
    assert shown in checked["diagnostics"]


def test_display_path_is_relative_under_the_working_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """display_path: relative inside the working directory, absolute outside, never '..'."""
    monkeypatch.chdir(tmp_path)
    assert display_path(tmp_path / "a" / "b.toml") == "a/b.toml"
    assert display_path("a/b.toml") == "a/b.toml"
    assert display_path(tmp_path) == "."
    assert display_path(tmp_path.parent / "x") == str(tmp_path.parent / "x")


def test_a_misspelt_root_is_root_missing_with_the_directory_that_is_there(tmp_path: Path) -> None:
    """root = "bnch" says the root does not exist and suggests bench, in show and in check."""
    _root_misspelt(tmp_path)
    [shown] = [
        d
        for d in _failure_diagnostics("show", "other-one", cwd=tmp_path)
        if d["slug"] == "alpha-one"
    ]
    assert shown["code"] == "root-missing"
    assert shown["message"] == "root 'bnch' of 'alpha-one' is not a directory (bnch)"
    assert shown["hint"] == (
        'did you mean root = "bench"? (bench/alpha_one/registration.py is there)'
    )
    assert "must be" not in json.dumps(shown)


def test_a_missing_root_suggests_the_closest_directory(tmp_path: Path) -> None:
    """root_hint prefers the directory holding the entry's package, else the closest name."""
    (tmp_path / "bench" / "alpha_one").mkdir(parents=True)
    (tmp_path / "bench" / "alpha_one" / "registration.py").write_text("")
    (tmp_path / "bnch").mkdir()
    assert root_hint(tmp_path, "bnch2", ("alpha_one",)) is not None
    assert 'root = "bench"' in (root_hint(tmp_path, "benhc", ("alpha_one",)) or "")
    assert root_hint(tmp_path, "zzzzzz", ()) is None


def test_no_orphan_is_reported_for_a_declared_slug_whose_root_is_missing(tmp_path: Path) -> None:
    """A declared slug under a wrong root is root-missing, never also an orphan of the real root."""
    bench = make_bench(tmp_path, "other-one", "alpha-one", parts=True)
    text = bench.manifest.read_text()
    at = text.index("[task-classes.alpha-one]")
    bench.manifest.write_text(text[:at] + text[at:].replace('root = "bench"', 'root = "old/bench"'))
    checked = json.loads(run("check", "--format", "json", cwd=tmp_path).stdout)
    assert [(d["code"], d["slug"]) for d in checked["diagnostics"]] == [
        ("root-missing", "alpha-one")
    ]


def test_a_diagnostic_traceback_is_part_of_its_json() -> None:
    """The JSON shape of a diagnostic carries its traceback (null when there is none)."""
    assert Diagnostic("import-failed", "error", "m").to_json()["traceback"] is None


def test_plan_and_check_say_a_broken_case_the_same_way(tmp_path: Path) -> None:
    """A case.toml with a wrong key is case-invalid at its line, in plan and in check alike."""
    bench = make_bench(tmp_path, "alpha-one", parts=True)
    case = bench.root / "alpha_one" / "cases" / "example" / "case.toml"
    case.write_text('description = "An example case."\ntimeout = "soon"\n')
    planned, checked = _at_once(["plan"], ["check"], cwd=tmp_path)
    [diagnostic] = planned["error"]["diagnostics"]
    assert (diagnostic["code"], diagnostic["file"], diagnostic["line"]) == (
        "case-invalid",
        "bench/alpha_one/cases/example/case.toml",
        2,
    )
    assert diagnostic["message"].startswith("case 'example' of 'alpha-one': timeout: ")
    assert diagnostic in checked["diagnostics"]
