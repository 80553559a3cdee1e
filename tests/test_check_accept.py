"""check --select/--ignore, and an entry's accept = [...] with unused-ignore, through the console script."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from codegenie.eval._manifest.model import BenchManifest
from codegenie.eval.errors import BenchManifestInvalid

from .factory import Bench, make_bench
from .test_settings import run


@pytest.fixture
def bench(tmp_path: Path) -> Bench:
    """A bench of two task classes; 'aa' has no cases (a cases-missing warning)."""
    made = make_bench(tmp_path / "repo", "aa", "bb", parts=True)
    shutil.rmtree(made.root / "aa" / "cases")
    return made


def accept(bench: Bench, slug: str, codes: str) -> None:
    """Add ``accept = codes`` to the entry of ``slug``."""
    text = bench.manifest_text().replace(
        f'[task-classes.{slug}]\nmodule = "bench.{slug}.registration"\nroot = "bench"\n',
        f'[task-classes.{slug}]\nmodule = "bench.{slug}.registration"\nroot = "bench"\n'
        f"accept = {codes}\n",
    )
    bench.manifest.write_text(text, encoding="utf-8")


def codes_of(done: object) -> list[tuple[str, str | None]]:
    """Return (code, slug) of each diagnostic of a JSON check run."""
    document = json.loads(done.stdout)  # type: ignore[attr-defined]
    return [(d["code"], d["slug"]) for d in document["diagnostics"]]


def test_ignore_and_select_filter_the_report(bench: Bench) -> None:
    """--ignore drops a code, --select keeps only the codes named."""
    done = run("check", "--format", "json", "--strict", cwd=bench.base)
    assert codes_of(done) == [("cases-missing", "aa")]
    assert done.returncode == 1
    done = run("check", "--format", "json", "--strict", "--ignore", "cases-missing", cwd=bench.base)
    assert (codes_of(done), done.returncode) == ([], 0)
    done = run(
        "check", "--format", "json", "--select", "import-failed,rubric-missing", cwd=bench.base
    )
    assert codes_of(done) == []


def test_an_unknown_code_on_the_command_line_is_a_usage_error(bench: Bench) -> None:
    """--ignore with a misspelt code exits 2 and names the closest code."""
    done = run("check", "--ignore", "cases-mising", cwd=bench.base)
    assert done.returncode == 2
    assert "did you mean 'cases-missing'?" in done.stderr
    assert done.stdout == ""


def test_the_command_line_replaces_the_tables_ignore(bench: Bench) -> None:
    """ignore in pyproject.toml applies unless --ignore is given."""
    (bench.base / "pyproject.toml").write_text(
        '[tool.codegenie-bench]\nignore = ["cases-missing"]\n', encoding="utf-8"
    )
    assert codes_of(run("check", "--format", "json", cwd=bench.base)) == []
    done = run("check", "--format", "json", "--ignore", "module-convention", cwd=bench.base)
    assert codes_of(done) == [("cases-missing", "aa")]


def test_accept_in_the_entry_accepts_that_code_for_that_task_class(bench: Bench) -> None:
    """accept = ["cases-missing"] on 'aa' makes a strict check pass."""
    accept(bench, "aa", '["cases-missing"]')
    done = run("check", "--format", "json", "--strict", cwd=bench.base)
    assert (codes_of(done), done.returncode) == ([], 0)


def test_an_accepted_code_that_no_longer_occurs_is_unused_ignore(bench: Bench) -> None:
    """A stale accept is a warning at the entry's accept value, failing --strict."""
    accept(bench, "bb", '["cases-missing"]')
    done = run("check", "--strict", cwd=bench.base)
    assert done.returncode == 1
    assert "bench.toml:11:10: warning[unused-ignore]: 'bb' accepts 'cases-missing'" in done.stdout


def test_a_rubrics_only_code_is_judged_only_under_rubrics(bench: Bench) -> None:
    """accept = ["golden-fails"] is not unused when the rubrics did not run."""
    accept(bench, "bb", '["golden-fails"]')
    done = run("check", "--format", "json", cwd=bench.base)
    assert codes_of(done) == [("cases-missing", "aa")]


@pytest.mark.parametrize(
    ("codes", "expected"),
    [
        ('["cases-mising"]', "unknown check code 'cases-mising'; did you mean 'cases-missing'?"),
        ('"cases-missing"', "expected an array"),
        ("[1]", "expected a string, got an integer"),
    ],
)
def test_accept_is_validated(bench: Bench, codes: str, expected: str) -> None:
    """accept holds known check codes only; a bad one is a located manifest problem."""
    accept(bench, "aa", codes)
    with pytest.raises(BenchManifestInvalid) as caught:
        BenchManifest.load(bench.manifest)
    (problem,) = caught.value.problems
    assert problem.key.startswith("task-classes.aa.accept")
    assert expected in problem.message


def test_accept_is_in_the_schema() -> None:
    """codegenie-bench schema describes accept, its items enumerating the codes."""
    schema = json.loads((Path(__file__).parent.parent / "docs" / "bench.schema.json").read_text())
    entry = next(v for v in schema["$defs"].values() if "accept" in v.get("properties", {}))
    assert "unused-ignore" in entry["properties"]["accept"]["items"]["enum"]


# -- check SLUG… ---------------------------------------------------------------------------


def test_check_slug_checks_only_that_task_class(bench: Bench) -> None:
    """check bb leaves aa's problems out, and counts one task class."""
    done = run("check", "bb", "--format", "json", "--strict", cwd=bench.base)
    document = json.loads(done.stdout)
    assert (document["diagnostics"], document["checked"], done.returncode) == ([], 1, 0)
    done = run("check", "aa", "--format", "json", cwd=bench.base)
    assert codes_of(done) == [("cases-missing", "aa")]


def test_check_slug_still_runs_the_manifests_own_checks(bench: Bench) -> None:
    """A manifest-level problem (an orphan registration) is reported whatever the slugs."""
    bench.add("cc", declare=False)
    done = run("check", "bb", "--format", "json", cwd=bench.base)
    assert codes_of(done) == [("orphan-task-class", "cc")]


def test_an_undeclared_slug_is_exit_3_with_suggestions(bench: Bench) -> None:
    """check bbb exits 3 before importing anything and suggests the declared slugs."""
    done = run("check", "bb", "bbb", cwd=bench.base)
    assert done.returncode == 3
    assert done.stdout == ""
    assert "error[task-class-not-found]" in done.stderr
    assert "did you mean" in done.stderr


def test_a_slug_that_breaks_the_rules_exits_1(bench: Bench) -> None:
    """check Foo exits 1 (InvalidTaskClassName), as show does."""
    done = run("check", "Foo", cwd=bench.base)
    assert done.returncode == 1
    assert "invalid-task-class-name" in done.stderr
