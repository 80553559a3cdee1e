"""codegenie-bench as users run it: the installed console script, and main() in-process."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from dataclasses import replace
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from codegenie.eval import scaffold
from codegenie.eval.cli import _app, main
from codegenie.eval.manifest import BenchManifest, json_schema

from .factory import Bench, make_bench
from .observe import on_a_terminal

REPO = Path(__file__).resolve().parent.parent
OUTPUT_SCHEMA = json.loads((REPO / "docs" / "cli-output.schema.json").read_text())


def script() -> str:
    """Return the installed console script."""
    found = shutil.which("codegenie-bench", path=str(Path(sys.executable).parent))
    assert found, "the codegenie-bench console script is not installed"
    return found


ESC = "\x1b"


def _environment(env: dict[str, str] | None) -> dict[str, str]:
    return {**os.environ, **(env or {})}


def run(
    *args: str, cwd: Path, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    """Run the installed console script, as a user would."""
    return subprocess.run(
        [script(), *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        env=_environment(env),
    )


def run_on_a_terminal(*args: str, cwd: Path, env: dict[str, str] | None = None) -> str:
    """Run the console script with stdout and stderr on a pseudo-terminal; return what it showed."""
    _, shown, _ = on_a_terminal([script(), *args], cwd=cwd, env=_environment(env), stdout_too=True)
    return shown


def assert_shape(document: Any, shape: str) -> None:
    """Validate a JSON document against its definition in docs/cli-output.schema.json."""
    schema = {**OUTPUT_SCHEMA, "$ref": f"#/$defs/{shape}"}
    jsonschema.Draft202012Validator(schema).validate(document)


def json_error(result: subprocess.CompletedProcess[str]) -> dict[str, Any]:
    document = json.loads(result.stdout)
    assert_shape(document, "error")
    return document["error"]  # type: ignore[no-any-return]


# -- the main job and each subcommand on the shipped bench ---------------------------


def _shipped() -> BenchManifest:
    return BenchManifest.load(REPO / "bench.toml")


@pytest.mark.shipped_bench
def test_plan_resolves_every_shipped_task_class() -> None:
    """`plan` on the shipped bench.toml lists every declared task class, in order, and exits 0."""
    result = run("plan", cwd=REPO)
    assert result.returncode == 0, result.stderr
    slugs = [line.split()[0] for line in result.stdout.splitlines()]
    assert slugs == list(_shipped().slugs())
    assert result.stderr == ""


@pytest.mark.shipped_bench
def test_plan_json_is_the_documented_run_plan() -> None:
    """`plan --format json` prints the run plan shape, with absolute resolved paths."""
    result = run("plan", "--format", "json", cwd=REPO)
    assert result.returncode == 0
    document = json.loads(result.stdout)
    assert_shape(document, "plan")
    assert document["manifest"] == str(REPO / "bench.toml")
    for entry in document["task_classes"]:
        assert Path(entry["source"]).is_absolute()
        assert Path(entry["rubric"]).is_file()
        assert Path(entry["cases"]).is_dir()


@pytest.mark.shipped_bench
def test_list_prints_slug_module_root() -> None:
    """`list` prints one row per declared task class; JSON has the documented shape."""
    manifest = _shipped()
    text = run("list", cwd=REPO)
    assert text.returncode == 0
    rows = [(slug, entry.module, entry.root) for slug, entry in manifest]
    assert [tuple(line.split()) for line in text.stdout.splitlines()] == rows
    document = json.loads(run("--format", "json", "list", cwd=REPO).stdout)
    assert_shape(document, "list")
    assert [tuple(tc.values()) for tc in document["task_classes"]] == rows


@pytest.mark.shipped_bench
def test_show_prints_the_task_class() -> None:
    """`show SLUG` resolves one task class; text and JSON agree."""
    manifest = _shipped()
    slug = manifest.slugs()[0]
    entry = manifest.entry(slug)
    text = run("show", slug, cwd=REPO)
    assert text.returncode == 0
    assert f"module:      {entry.module}" in text.stdout
    result = run("show", slug, "--format", "json", cwd=REPO)
    document = json.loads(result.stdout)
    assert_shape(document, "show")
    assert document["slug"] == slug
    assert document["source"] == str(entry.registration_file(REPO / entry.root))
    assert f"source:      {Path(document['source']).relative_to(REPO)}" in text.stdout


def test_schema_prints_the_committed_schema() -> None:
    """`schema` prints exactly docs/bench.schema.json."""
    result = run("schema", cwd=REPO)
    assert result.returncode == 0
    assert result.stdout == (REPO / "docs" / "bench.schema.json").read_text()
    assert json.loads(result.stdout) == json_schema()


@pytest.mark.shipped_bench
def test_python_dash_m_behaves_the_same() -> None:
    """`python -m codegenie.eval` is the same command."""
    result = subprocess.run(
        [sys.executable, "-m", "codegenie.eval", "list", "--format", "json"],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert result.returncode == 0
    assert result.stdout == run("list", "--format", "json", cwd=REPO).stdout


def test_global_options_work_before_and_after_the_subcommand(tmp_path: Path) -> None:
    """--manifest and --format are accepted on either side of the subcommand."""
    bench = make_bench(tmp_path / "elsewhere", "foo")
    before = run("--manifest", str(bench.manifest), "--format", "json", "list", cwd=tmp_path)
    after = run("list", "--manifest", str(bench.manifest), "--format", "json", cwd=tmp_path)
    assert before.returncode == after.returncode == 0
    assert before.stdout == after.stdout
    assert json.loads(before.stdout)["task_classes"][0]["slug"] == "foo"


def test_manifest_is_discovered_from_a_subdirectory(tmp_path: Path) -> None:
    """Without --manifest, the nearest bench.toml in . or its parents is used."""
    bench = make_bench(tmp_path, "foo")
    result = run("show", "foo", cwd=bench.root / "foo")
    assert result.returncode == 0, result.stderr


@pytest.mark.parametrize(
    "command",
    [[], ["init"], ["list"], ["show"], ["plan"], ["check"], ["grade"], ["new"], ["schema"]],
)
def test_every_help_shows_what_it_does_and_an_example(command: list[str]) -> None:
    """`--help` of the program and of each subcommand exits 0 and shows an example."""
    result = run(*command, "--help", cwd=REPO)
    assert result.returncode == 0
    assert "examples:" in result.stdout
    assert "codegenie-bench" in result.stdout.split("examples:")[1]


def test_version() -> None:
    """`--version` prints the program and version."""
    result = run("--version", cwd=REPO)
    assert result.returncode == 0
    assert re.fullmatch(r"codegenie-bench \d+\.\d+\.\d+\S*\n", result.stdout)


# -- exit codes, one error class at a time -----------------------------------------


@pytest.mark.parametrize(
    "args",
    [[], ["bogus"], ["show"], ["list", "--format", "xml"], ["plan", "--jobs", "2"]],
)
def test_usage_errors_exit_2(args: list[str]) -> None:
    """Command-line mistakes exit 2 with argparse's usage message, nothing on stdout."""
    result = run(*args, cwd=REPO)
    assert result.returncode == 2
    assert result.stdout == ""
    assert "usage: codegenie-bench" in result.stderr


def test_typo_exits_3_with_the_suggestion(tmp_path: Path) -> None:
    """A mistyped slug exits 3 and prints `did you mean 'vuln-remediation'?` on stderr."""
    make_bench(tmp_path, "vuln-remediation", "migration-chainguard-distroless")
    result = run("show", "vuln-remediaton", cwd=tmp_path)
    assert result.returncode == 3
    assert result.stdout == ""
    first = result.stderr.splitlines()[0]
    assert first.startswith("bench.toml:4:1: error[task-class-not-found]:")
    assert "did you mean 'vuln-remediation'?" in first
    assert "hint:" in result.stderr
    assert "Traceback" not in result.stderr
    error = json_error(run("show", "vuln-remediaton", "--format", "json", cwd=tmp_path))
    assert error["type"] == "TaskClassNotFound"
    assert error["exit_code"] == 3
    assert error["attributes"]["suggestions"] == ["vuln-remediation"]


def test_invalid_slug_exits_1(tmp_path: Path) -> None:
    """An invalid slug exits 1 (a validation error) with InvalidTaskClassName, located at the command line."""
    make_bench(tmp_path, "aa")
    result = run("show", "Vuln", cwd=tmp_path)
    assert result.returncode == 1
    assert result.stdout == ""
    assert result.stderr.startswith(
        "codegenie-bench: error[invalid-task-class-name]: invalid task-class name 'Vuln': wrong case"
    )
    error = json_error(run("show", "Vuln", "--format", "json", cwd=tmp_path))
    assert error["exit_code"] == 1
    assert error["attributes"] == {"name": "Vuln", "reason": "wrong case"}


def test_registration_failure_exits_1_pointing_at_the_line(tmp_path: Path) -> None:
    """A registration that raises exits 1, located at the raising line of the file."""
    make_bench(tmp_path, "foo", before="raise RuntimeError('boom')")
    result = run("show", "foo", cwd=tmp_path)
    assert result.returncode == 1
    assert result.stdout == ""
    assert result.stderr.startswith(
        "bench/foo/registration.py:2:1: error[import-failed]: "
        "importing bench.foo.registration for 'foo' raised RuntimeError: boom\n"
    )
    assert "Traceback" not in result.stderr
    error = json_error(run("show", "foo", "--format", "json", cwd=tmp_path))
    assert error["type"] == "TaskClassRegistrationFailed"
    assert error["attributes"]["cause_type"] == "RuntimeError"


def test_sys_exit_zero_in_a_registration_never_passes(tmp_path: Path) -> None:
    """A registration calling sys.exit(0) makes `show` fail with exit 1, not succeed."""
    make_bench(tmp_path, "foo", before="import sys\nsys.exit(0)")
    result = run("show", "foo", cwd=tmp_path)
    assert result.returncode == 1
    assert "sys.exit(0)" in result.stderr


def test_not_registered_exits_3(tmp_path: Path) -> None:
    """A registration that registers another name exits 3, listing what it registered."""
    make_bench(tmp_path, "foo", register="fooo")
    result = run("show", "foo", cwd=tmp_path)
    assert result.returncode == 3
    assert result.stderr.startswith("bench.toml:4:1: error[not-registered]: ")
    error = json_error(run("show", "foo", "--format", "json", cwd=tmp_path))
    assert error["attributes"]["available_names"] == ["fooo"]
    assert error["attributes"]["looked_up_in"] == "bench.foo.registration"


def test_missing_registration_file_exits_4_at_the_module_line(tmp_path: Path) -> None:
    """A declared task class without its registration.py exits 4 (BenchCaseLoadError), module-missing."""
    bench = Bench(tmp_path)
    bench.add("foo", write=False)
    result = run("show", "foo", cwd=tmp_path)
    assert result.returncode == 4
    assert result.stderr.startswith("bench.toml:5:10: error[module-missing]:")
    error = json_error(run("show", "foo", "--format", "json", cwd=tmp_path))
    assert error["attributes"]["reason"] == "file not found"


def test_missing_root_exits_4(tmp_path: Path) -> None:
    """A declared root that does not exist exits 4 (BenchRootNotFound), root-missing at the root's value."""
    bench = Bench(tmp_path)
    bench.add("foo", root="suite/bench", write=False)
    shutil.rmtree(tmp_path / "suite")
    result = run("show", "foo", cwd=tmp_path)
    assert result.returncode == 4
    assert result.stderr.startswith("bench.toml:6:8: error[root-missing]:")
    assert json_error(run("show", "foo", "--format", "json", cwd=tmp_path))["type"] == (
        "BenchRootNotFound"
    )


def test_missing_manifest_exits_4(tmp_path: Path) -> None:
    """No bench.toml exits 4 naming the first place looked (relative: it is here), for every manifest command."""
    for command in (["list"], ["show", "foo"], ["plan"], ["new", "foo"], ["check"]):
        result = run(*command, cwd=tmp_path)
        assert result.returncode == 4
        assert result.stdout == ""
        assert "error[manifest-not-found]" in result.stderr
        assert "(looked for bench.toml and in its parents)" in result.stderr
        assert str(tmp_path) not in result.stderr
    error = json_error(run("list", "--format", "json", cwd=tmp_path))
    assert error["attributes"] == {"path": str(tmp_path / "bench.toml"), "searched_parents": True}


def test_invalid_manifest_exits_4_listing_every_problem(tmp_path: Path) -> None:
    """An invalid manifest exits 4 with FILE:LINE:COL: error[manifest-schema] per problem."""
    manifest = tmp_path / "bench.toml"
    manifest.write_text("schema-version = 2\nmodul = 1\n")
    result = run("list", cwd=tmp_path)
    assert result.returncode == 4
    lines = [line for line in result.stderr.splitlines() if not line.startswith("  hint:")]
    assert lines == [
        "bench.toml:1:18: error[manifest-schema]: schema-version: unsupported schema-version 2; "
        "this version of codegenie-eval reads schema-version 1",
        "bench.toml:2:1: error[manifest-schema]: modul: unknown key 'modul' "
        "(expected 'schema-version', 'task-classes')",
    ]
    error = json_error(run("list", "--format", "json", cwd=tmp_path))
    assert [p["line"] for p in error["attributes"]["problems"]] == [1, 2]
    assert [d["line"] for d in error["diagnostics"]] == [1, 2]


def _shadowing_site(tmp_path: Path) -> Path:
    site = tmp_path / "site"
    (site / "bench").mkdir(parents=True)
    (site / "bench" / "__init__.py").write_text("")
    return site


def test_shadowing_bench_package_exits_1_with_module_mismatch(tmp_path: Path) -> None:
    """An installed regular `bench` package yields TaskClassModuleMismatch (exit 1)."""
    make_bench(tmp_path / "repo", "foo")
    site = _shadowing_site(tmp_path)
    env = {"PYTHONPATH": str(site)}
    result = run("show", "foo", cwd=tmp_path / "repo", env=env)
    assert result.returncode == 1
    assert result.stderr.startswith("bench.toml:4:1: error[import-failed]: ")
    assert f"found {site / 'bench' / '__init__.py'} instead of bench/foo/registration.py" in (
        result.stderr
    )
    error = json_error(run("show", "foo", "--format", "json", cwd=tmp_path / "repo", env=env))
    assert error["attributes"]["actual_file"] == str(site / "bench" / "__init__.py")


def test_plan_reports_every_failing_slug_and_keeps_the_resolved(tmp_path: Path) -> None:
    """`plan` with a typo, a raising registration and a good slug reports both failures at once."""
    bench = make_bench(tmp_path, "good-one")
    bench.add("broken", before="raise ValueError('bad')")
    result = run("plan", "good-one", "good-onr", "broken", cwd=tmp_path)
    assert result.returncode == 1
    assert result.stdout.split()[0] == "good-one"
    assert "did you mean 'good-one'?" in result.stderr
    assert "error[import-failed]" in result.stderr
    assert "2 of 3 task classes failed to resolve" in result.stderr
    error = json_error(
        run("plan", "good-one", "good-onr", "broken", "--format", "json", cwd=tmp_path)
    )
    assert error["type"] == "RunPlanError"
    assert set(error["attributes"]["errors"]) == {"good-onr", "broken"}
    assert error["attributes"]["errors"]["good-onr"]["type"] == "TaskClassNotFound"
    assert [tc["slug"] for tc in error["attributes"]["resolved"]] == ["good-one"]
    assert {d["slug"] for d in error["diagnostics"]} == {"good-onr", "broken"}


def test_duplicate_registration_surfaces_as_its_cause(tmp_path: Path) -> None:
    """A registration re-registering another slug's name fails with TaskClassAlreadyRegistered as cause."""
    bench = make_bench(tmp_path, "first")
    bench.add("second", register="first")
    result = run("plan", "--format", "json", cwd=tmp_path)
    assert result.returncode == 1
    failure = json_error(result)["attributes"]["errors"]["second"]
    assert failure["type"] == "TaskClassRegistrationFailed"
    assert failure["attributes"]["cause_type"] == "TaskClassAlreadyRegistered"
    assert (
        "already registered by bench.first.registration" in failure["attributes"]["cause_message"]
    )


def test_plan_with_only_typos_exits_3(tmp_path: Path) -> None:
    """A plan whose failures all exit 3 exits 3."""
    make_bench(tmp_path, "good-one")
    assert run("plan", "nope-one", "nope-two", cwd=tmp_path).returncode == 3


def test_registration_output_never_reaches_stdout(tmp_path: Path) -> None:
    """What a registration prints goes to stderr; stdout stays one JSON document."""
    make_bench(tmp_path, "foo", before="print('noise from a registration')")
    result = run("plan", "--format", "json", cwd=tmp_path)
    assert result.returncode == 0
    assert json.loads(result.stdout)["task_classes"][0]["slug"] == "foo"
    assert "noise from a registration" in result.stderr


def test_logs_go_to_stderr_as_json_lines(tmp_path: Path) -> None:
    """-v --log-format json writes one JSON object a line on stderr with the loader's event IDs."""
    make_bench(tmp_path, "foo")
    result = run("show", "foo", "-v", "--log-format", "json", "--format", "json", cwd=tmp_path)
    assert result.returncode == 0
    assert json.loads(result.stdout)["slug"] == "foo"
    events = [json.loads(line) for line in result.stderr.splitlines()]
    assert [e["event"] for e in events] == ["loader.task_class_loaded"]
    assert events[0]["level"] == "info"
    assert events[0]["name"] == "foo"


def test_logs_are_console_lines_by_default_with_verbose(tmp_path: Path) -> None:
    """-v shows console-rendered log lines; without it, no logs."""
    make_bench(tmp_path, "foo")
    quiet = run("show", "foo", cwd=tmp_path)
    loud = run("show", "foo", "-v", cwd=tmp_path)
    assert quiet.stderr == ""
    assert "loader.task_class_loaded" in loud.stderr
    assert not loud.stderr.lstrip().startswith("{")


def test_quiet_drops_hints(tmp_path: Path) -> None:
    """-q prints the diagnostic without its hint line."""
    make_bench(tmp_path, "foo")
    result = run("show", "fooo", "-q", cwd=tmp_path)
    assert result.returncode == 3
    assert "hint:" not in result.stderr
    assert "error[task-class-not-found]" in result.stderr


# -- new ----------------------------------------------------------------------------


def test_new_scaffolds_a_task_class_that_resolves_straight_away(tmp_path: Path) -> None:
    """`new` writes the package, appends the entry byte-for-byte after the old text, and `show` works."""
    bench = make_bench(tmp_path, "foo")
    original = bench.manifest.read_bytes() + b"# a trailing comment, kept\n"
    bench.manifest.write_bytes(original)
    result = run(
        "new", "secret-rotation", "--description", "Rotate a leaked credential.", cwd=tmp_path
    )
    assert result.returncode == 0, result.stderr
    updated = bench.manifest.read_bytes()
    assert updated.startswith(original)
    assert updated[len(original) :] == (
        b'\n[task-classes.secret-rotation]\nmodule = "bench.secret_rotation.registration"\n'
        b'root = "bench"\n'
    )
    package = bench.root / "secret_rotation"
    assert sorted(str(p.relative_to(package)) for p in package.rglob("*") if p.is_file()) == [
        "cases/example/case.toml",
        "cases/example/expected/README.txt",
        "cases/example/input/TASK.txt",
        "registration.py",
        "rubric.py",
    ]
    shown = run("show", "secret-rotation", "--format", "json", cwd=tmp_path)
    assert shown.returncode == 0, shown.stderr
    assert json.loads(shown.stdout)["description"] == "Rotate a leaked credential."
    case = package / "cases" / "example"
    graded = subprocess.run(
        [sys.executable, str(package / "rubric.py"), str(case), str(case / "expected")],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert graded.returncode == 0
    assert json.loads(graded.stdout)["passed"] is True


def test_new_json_output(tmp_path: Path) -> None:
    """`new --format json` prints what it created."""
    make_bench(tmp_path, "foo")
    document = json.loads(run("new", "bar-baz", "--format", "json", cwd=tmp_path).stdout)
    assert_shape(document, "new")
    assert document["module"] == "bench.bar_baz.registration"


def _tree(path: Path) -> dict[str, bytes]:
    return {
        str(p.relative_to(path)): p.read_bytes() for p in sorted(path.rglob("*")) if p.is_file()
    }


@pytest.mark.parametrize(
    ("slug", "setup", "code"),
    [
        ("foo", None, 1),
        ("bar", "directory", 1),
        ("Bad", None, 1),
        ("baz", "module", 1),
        ("baz", "invalid", 4),
    ],
)
def test_new_refuses_with_nothing_written(
    tmp_path: Path, slug: str, setup: str | None, code: int
) -> None:
    """An existing slug, directory or module (1), a bad slug (1), an invalid manifest (4): nothing written."""
    bench = make_bench(tmp_path, "foo")
    if setup == "directory":
        (bench.root / "bar").mkdir()
    elif setup == "module":
        text = bench.manifest.read_text().replace(
            "bench.foo.registration", "bench.baz.registration"
        )
        bench.manifest.write_text(text)
        (bench.root / "foo").rename(bench.root / "baz")
    elif setup == "invalid":
        bench.manifest.write_text(bench.manifest.read_text() + "oops = 1\n")
    before = _tree(tmp_path)
    result = run("new", slug, cwd=tmp_path)
    assert result.returncode == code
    assert result.stdout == ""
    assert "Traceback" not in result.stderr
    assert _tree(tmp_path) == before


def test_new_keeps_crlf_line_endings(tmp_path: Path) -> None:
    """A manifest written with CRLF gets its new entry in CRLF too."""
    bench = make_bench(tmp_path, "foo")
    bench.manifest.write_bytes(bench.manifest.read_bytes().replace(b"\n", b"\r\n"))
    original = bench.manifest.read_bytes()
    assert run("new", "bar", cwd=tmp_path).returncode == 0
    added = bench.manifest.read_bytes()[len(original) :]
    assert b"\r\n" in added
    assert b"\n" not in added.replace(b"\r\n", b"")


def test_new_refuses_a_manifest_that_cannot_take_a_table(tmp_path: Path) -> None:
    """A manifest whose task-classes is an inline table cannot take an appended table: exit 1, nothing written."""
    (tmp_path / "bench").mkdir()
    (tmp_path / "bench.toml").write_text("schema-version = 1\ntask-classes = {}\n")
    before = _tree(tmp_path)
    result = run("new", "foo", cwd=tmp_path)
    assert result.returncode == 1
    assert "error[scaffold-conflict]" in result.stderr
    assert _tree(tmp_path) == before


# -- in-process: what a subprocess cannot reach ------------------------------------------


def test_unexpected_bug_shows_a_short_message_or_the_traceback_with_v(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """A non-EvalError is an internal error: one line without -v, the traceback with -v."""

    def broken(*_: object) -> int:
        raise RuntimeError("a bug")

    monkeypatch.setitem(_app.COMMANDS, "schema", replace(_app.COMMANDS["schema"], run=broken))
    assert main(["schema"]) == 1
    err = capsys.readouterr().err
    assert "internal error: RuntimeError: a bug" in err
    assert "Traceback" not in err
    assert main(["schema", "-v"]) == 1
    assert "Traceback (most recent call last)" in capsys.readouterr().err


def test_main_returns_usage_code_instead_of_exiting(capsys: pytest.CaptureFixture[str]) -> None:
    """main() returns 2 for usage errors and 0 for --help; it never raises SystemExit."""
    assert main(["nonsense"]) == 2
    assert main(["--help"]) == 0
    assert "examples:" in capsys.readouterr().out


@pytest.mark.shipped_bench
def test_cheap_commands_import_no_loader_no_structlog_no_registration(tmp_path: Path) -> None:
    """`list` imports no registration module and no structlog; --help/--version import no pydantic."""

    def imported(*args: str) -> set[str]:
        result = subprocess.run(
            [sys.executable, "-X", "importtime", "-m", "codegenie.eval", *args],
            cwd=REPO,
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
        assert result.returncode == 0, result.stderr
        return {
            line.split("|")[-1].strip()
            for line in result.stderr.splitlines()
            if line.startswith("import time:") and "|" in line
        }

    listed = imported("list")
    assert "codegenie.eval._manifest.model" in listed
    assert not {m for m in listed if m.startswith("bench")}
    assert "structlog" not in listed
    assert "codegenie.eval.loader" not in listed
    for args in (["--help"], ["--version"]):
        modules = imported(*args)
        assert "pydantic" not in modules
        assert "structlog" not in modules


# -- suggestions and hints that name the edit -------------------------------------------


@pytest.mark.parametrize("typed", ["Alpha-One", "alpha_one", "ALPHA_ONE"])
def test_an_invalid_slug_suggests_its_slug_form(tmp_path: Path, typed: str) -> None:
    """`show Alpha-One` and `show alpha_one` say what is wrong and suggest `alpha-one` (exit 1)."""
    make_bench(tmp_path, "alpha-one", "beta-two")
    result = run("show", typed, cwd=tmp_path)
    assert result.returncode == 1
    first = result.stderr.splitlines()[0]
    assert first.startswith(
        f"codegenie-bench: error[invalid-task-class-name]: invalid task-class name {typed!r}: "
    )
    assert first.endswith("; did you mean 'alpha-one'?")


def test_new_suggests_the_slug_form_of_an_invalid_slug(tmp_path: Path) -> None:
    """`new Alpha_One` is the invalid slug of every command (exit 1), and suggests `alpha-one`."""
    make_bench(tmp_path, "aa")
    result = run("new", "Alpha_One", cwd=tmp_path)
    assert result.returncode == 1
    assert result.stderr.splitlines()[0] == (
        "codegenie-bench: error[invalid-task-class-name]: invalid task-class name 'Alpha_One': "
        "wrong case; did you mean 'alpha-one'?"
    )


def test_new_names_the_entry_that_holds_its_module(tmp_path: Path) -> None:
    """`new omega` whose module belongs to another slug points at that entry and says so."""
    bench = make_bench(tmp_path, "aa")
    bench.add("omega-legacy", module="bench.omega.registration")
    result = run("new", "omega", cwd=tmp_path)
    assert result.returncode == 1
    line = bench.manifest.read_text().splitlines().index('module = "bench.omega.registration"') + 1
    assert result.stderr.splitlines() == [
        f"bench.toml:{line}:10: error[scaffold-conflict]: cannot create task class 'omega': "
        "its module 'bench.omega.registration' is already the module of 'omega-legacy'",
        "  hint: pick another slug, or rename the package of [task-classes.omega-legacy] "
        "and its module",
    ]
    assert "left over" not in result.stderr


def test_a_missing_manifest_given_by_path_says_exactly_where_it_looked(tmp_path: Path) -> None:
    """--manifest PATH that does not exist names PATH only: no parents, no 'pass --manifest'."""
    missing = tmp_path / "x" / "bench" / "bench.toml"
    for command in (["list"], ["show", "foo"], ["check"]):
        result = run("--manifest", str(missing), *command, cwd=tmp_path)
        assert result.returncode == 4, command
        assert result.stderr.splitlines() == [
            "codegenie-bench: error[manifest-not-found]: no bench manifest at "
            "x/bench/bench.toml: there is no such file",
            "  hint: check the path: x/bench/bench.toml does not exist",
        ], command


def test_a_discovered_manifest_that_is_missing_suggests_init(tmp_path: Path) -> None:
    """Without --manifest, the search through the parents is said, and init is suggested."""
    result = run("show", "foo", cwd=tmp_path)
    assert result.returncode == 4
    assert "and in its parents" in result.stderr
    assert "codegenie-bench init" in result.stderr


@pytest.mark.parametrize("command", [["list"], ["show", "foo"], ["check"]])
def test_a_directory_named_bench_toml_is_said_to_be_a_directory(
    tmp_path: Path, command: list[str]
) -> None:
    """A directory where bench.toml would be is reported as a directory, not as no manifest."""
    (tmp_path / "bench.toml").mkdir()
    result = run(*command, cwd=tmp_path)
    assert result.returncode in {1, 4}
    output = result.stdout + result.stderr
    assert "bench.toml:1:1: error[manifest-syntax]: the file is a directory" in output
    assert "no bench manifest" not in output


@pytest.mark.parametrize(
    ("option", "value", "said"),
    [
        ("--jobs", "abc", "argument --jobs: expected a whole number of at least 1, not 'abc'"),
        ("--jobs", "0", "argument --jobs: expected a whole number of at least 1, not '0'"),
        ("--timeout", "soon", "argument --timeout: expected a number of seconds above 0"),
    ],
)
def test_bad_option_values_are_explained_without_internal_names(
    tmp_path: Path, option: str, value: str, said: str
) -> None:
    """`--jobs abc` says what it expected; no internal function name reaches the user."""
    result = run("check", option, value, cwd=tmp_path)
    assert result.returncode == 2
    assert said in result.stderr
    assert "_positive" not in result.stderr
    assert "invalid" not in result.stderr.splitlines()[-1]


# -- GitHub annotations and colour --------------------------------------------------------


def _broken_bench(base: Path) -> Bench:
    bench = make_bench(base, "aa", parts=True)
    bench.add("bb", before="raise RuntimeError('boom')")
    return bench


def test_github_paths_are_relative_to_the_manifest_whatever_the_working_directory(
    tmp_path: Path,
) -> None:
    """`check --format github` from a subdirectory names files from the repository's top."""
    bench = _broken_bench(tmp_path)
    result = run("check", "--format", "github", cwd=bench.root / "bb")
    assert result.returncode == 1
    assert result.stdout.startswith(
        "::error file=bench/bb/registration.py,line=2,col=1,title=import-failed (bb)::"
    )


def test_github_paths_are_relative_to_the_workspace_when_it_is_set(tmp_path: Path) -> None:
    """With GITHUB_WORKSPACE set, annotation paths are relative to it."""
    _broken_bench(tmp_path / "repo" / "suite")
    env = {"GITHUB_WORKSPACE": str(tmp_path / "repo")}
    result = run("check", "--format", "github", cwd=tmp_path / "repo" / "suite", env=env)
    assert "::error file=suite/bench/bb/registration.py,line=2," in result.stdout


def test_a_missing_manifest_is_an_annotation_under_github(tmp_path: Path) -> None:
    """No manifest under --format github is an ::error workflow command on stdout, exit 4."""
    result = run("check", "--format", "github", cwd=tmp_path)
    assert result.returncode == 4
    assert result.stdout.startswith("::error title=manifest-not-found::no bench manifest found")
    assert result.stderr == ""


def test_diagnostics_are_coloured_on_a_terminal_only(tmp_path: Path) -> None:
    """On a terminal diagnostics are coloured; piped, NO_COLOR set: never; FORCE_COLOR: always."""
    _broken_bench(tmp_path)
    assert f"{ESC}[1m" in run_on_a_terminal("show", "bb", cwd=tmp_path)
    assert ESC not in run_on_a_terminal("show", "bb", cwd=tmp_path, env={"NO_COLOR": "1"})
    piped = run("check", cwd=tmp_path)
    assert "error[import-failed]" in piped.stdout
    assert ESC not in piped.stdout + piped.stderr
    forced = run("check", cwd=tmp_path, env={"FORCE_COLOR": "1"})
    assert f"{ESC}[1m" in forced.stdout


def test_console_logs_follow_the_same_colour_rule(tmp_path: Path) -> None:
    """-v console logs are coloured on a terminal, not with NO_COLOR, and yes with FORCE_COLOR."""
    make_bench(tmp_path, "aa")
    assert ESC in run_on_a_terminal("show", "aa", "-v", cwd=tmp_path)
    plain = run_on_a_terminal("show", "aa", "-v", cwd=tmp_path, env={"NO_COLOR": "1"})
    assert "loader.task_class_loaded" in plain
    assert ESC not in plain
    forced = run("show", "aa", "-v", cwd=tmp_path, env={"FORCE_COLOR": "1"})
    assert ESC in forced.stderr


# -- init -------------------------------------------------------------------------------


def test_init_starts_a_bench_in_an_empty_directory(tmp_path: Path) -> None:
    """`init` writes bench.toml, bench/, the schema its #:schema line names and a .gitignore."""
    result = run("init", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert result.stdout == "bench.toml\nbench/\ndocs/bench.schema.json\n.gitignore\n"
    assert (tmp_path / ".gitignore").read_text(encoding="utf-8") == scaffold.GITIGNORE
    assert "kept" not in result.stderr
    first = (tmp_path / "bench.toml").read_text().splitlines()[0]
    assert first == "#:schema ./docs/bench.schema.json"
    schema = tmp_path / first.removeprefix("#:schema ")
    assert json.loads(schema.read_text()) == json_schema()
    assert (tmp_path / "bench").is_dir()
    assert not list((tmp_path / "bench").iterdir())
    assert run("new", "alpha-one", cwd=tmp_path).returncode == 0
    checked = run("check", "--strict", cwd=tmp_path)
    assert checked.returncode == 0, checked.stdout


def test_the_schema_line_of_a_new_manifest_resolves_for_an_editor(tmp_path: Path) -> None:
    """Right after `init`, taplo (the editors' engine) validates bench.toml against the schema."""
    assert run("init", cwd=tmp_path).returncode == 0
    manifest = tmp_path / "bench.toml"
    manifest.write_text(
        manifest.read_text() + '\n[task-classes.Bad]\nmodule = 42\nroot = "bench"\n'
    )
    taplo = shutil.which("taplo", path=str(Path(sys.executable).parent)) or "taplo"
    result = subprocess.run(
        [taplo, "check", "--no-auto-config", "bench.toml"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert result.returncode != 0
    assert "bench.toml:7:" in result.stdout + result.stderr


@pytest.mark.parametrize("existing", ["file", "directory", "symlink"])
def test_init_refuses_when_a_manifest_is_there(tmp_path: Path, existing: str) -> None:
    """`init` where a bench.toml exists (of any kind) exits 1 and changes nothing."""
    manifest = tmp_path / "bench.toml"
    if existing == "file":
        manifest.write_text("schema-version = 1\n")
    elif existing == "directory":
        manifest.mkdir()
    else:
        manifest.symlink_to(tmp_path / "nowhere.toml")
    before = sorted(str(p) for p in tmp_path.rglob("*"))
    result = run("init", cwd=tmp_path)
    assert result.returncode == 1
    assert result.stdout == ""
    assert "error[init-conflict]" in result.stderr
    assert "a manifest is already there" in result.stderr
    assert sorted(str(p) for p in tmp_path.rglob("*")) == before


def test_init_keeps_what_is_there_and_reports_json(tmp_path: Path) -> None:
    """An existing bench/ and docs/bench.schema.json are kept; JSON lists only what was created."""
    (tmp_path / "bench").mkdir()
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "bench.schema.json").write_text("{}")
    result = run("init", "--format", "json", cwd=tmp_path)
    assert result.returncode == 0
    document = json.loads(result.stdout)
    assert_shape(document, "init")
    assert document["created"] == [str(tmp_path / "bench.toml"), str(tmp_path / ".gitignore")]
    assert (tmp_path / "docs" / "bench.schema.json").read_text() == "{}"


_GITIGNORED = {"file": "node_modules/\n", "empty": "", "crlf": "dist/\r\n*.log"}


@pytest.mark.parametrize("kind", [*_GITIGNORED, "dangling-link", "directory"])
def test_init_never_touches_an_existing_gitignore(tmp_path: Path, kind: str) -> None:
    """An existing .gitignore, of any kind, is kept byte for byte; init says so and lists it not."""
    gitignore = tmp_path / ".gitignore"
    if kind in _GITIGNORED:
        gitignore.write_bytes(_GITIGNORED[kind].encode())
    elif kind == "dangling-link":
        gitignore.symlink_to(tmp_path / "nowhere")
    else:
        gitignore.mkdir()
    result = run("init", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert result.stdout == "bench.toml\nbench/\ndocs/bench.schema.json\n"
    assert result.stderr.splitlines()[0] == (
        ".gitignore: kept as it is (init writes one only where there is none)"
    )
    if kind in _GITIGNORED:
        assert gitignore.read_bytes() == _GITIGNORED[kind].encode()
    elif kind == "dangling-link":
        assert gitignore.is_symlink()
        assert not gitignore.exists()
    else:
        assert gitignore.is_dir()
        assert not list(gitignore.iterdir())
    quiet = run("init", "-q", "--manifest", str(tmp_path / "sub" / "bench.toml"), cwd=tmp_path)
    assert quiet.returncode == 0
    assert quiet.stderr == ""
    assert (tmp_path / "sub" / ".gitignore").read_text(encoding="utf-8") == scaffold.GITIGNORE


@pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed")
def test_after_init_git_shows_only_the_bench_not_the_venv_or_bytecode(tmp_path: Path) -> None:
    """The docs put a .venv in the bench repository and Python writes bytecode: git sees neither."""
    env = {"GIT_CONFIG_NOSYSTEM": "1", "GIT_CONFIG_GLOBAL": os.devnull}
    subprocess.run(["git", "init", "-q"], cwd=tmp_path, env={**os.environ, **env}, check=True)
    assert run("init", cwd=tmp_path).returncode == 0
    assert run("new", "alpha-one", cwd=tmp_path).returncode == 0
    (tmp_path / ".venv" / "bin").mkdir(parents=True)
    (tmp_path / ".venv" / "pyvenv.cfg").write_text("home = /usr/bin\n")
    cache = tmp_path / "bench" / "alpha_one" / "__pycache__"
    cache.mkdir()
    (cache / "registration.cpython-311.pyc").write_bytes(b"\0")
    (tmp_path / "bench" / "alpha_one" / "rubric.pyo").write_bytes(b"\0")
    status = subprocess.run(
        ["git", "status", "--porcelain", "--untracked-files=all"],
        cwd=tmp_path,
        env={**os.environ, **env},
        capture_output=True,
        text=True,
        check=True,
    )
    assert sorted(line.removeprefix("?? ") for line in status.stdout.splitlines()) == [
        ".gitignore",
        "bench.toml",
        "bench/alpha_one/cases/example/case.toml",
        "bench/alpha_one/cases/example/expected/README.txt",
        "bench/alpha_one/cases/example/input/TASK.txt",
        "bench/alpha_one/registration.py",
        "bench/alpha_one/rubric.py",
        "docs/bench.schema.json",
    ]


def test_init_refuses_a_bench_that_is_a_file(tmp_path: Path) -> None:
    """A file named bench where the root would go is a conflict: nothing is written."""
    (tmp_path / "bench").write_text("")
    result = run("init", cwd=tmp_path)
    assert result.returncode == 1
    assert not (tmp_path / "bench.toml").exists()


def test_an_exit_status_beyond_4_comes_from_the_registration_and_check_survives_it(
    tmp_path: Path,
) -> None:
    """A registration's os._exit(7) is show's and plan's exit status (documented); check reports import-crashed."""
    make_bench(tmp_path, "exits-hard", before="import os\nos._exit(7)")
    for command in (["show", "exits-hard"], ["plan"]):
        result = run(*command, cwd=tmp_path)
        assert (result.returncode, result.stdout, result.stderr) == (7, "", "")
    checked = run("check", cwd=tmp_path)
    assert checked.returncode == 1
    assert "error[import-crashed]" in checked.stdout
    exit_codes = (REPO / "docs" / "cli.md").read_text().split("## Exit codes", 1)[1]
    assert "Any other exit status comes from a registration" in exit_codes
    assert "`check`" in exit_codes.split("Any other exit status", 1)[1].split("```", 1)[0]


def test_plan_imports_no_asyncio(tmp_path: Path) -> None:
    """`plan` drives Runner.plan itself: no asyncio (~35 ms), no event loop.

    Checked on the console script as a user runs it (``-X importtime``) and
    through ``__main__.main`` in a ``-c`` process (``sys.modules`` after it).
    """
    bench = make_bench(tmp_path, "aa", "bb")
    result = subprocess.run(
        [sys.executable, "-X", "importtime", script(), "plan", "--format", "json"],
        cwd=bench.base,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    assert [tc["slug"] for tc in json.loads(result.stdout)["task_classes"]] == ["aa", "bb"]
    imported = {
        line.split("|")[-1].strip()
        for line in result.stderr.splitlines()
        if line.startswith("import time:") and "|" in line
    }
    assert "codegenie.eval.runner" in imported
    assert not {m for m in imported if m.split(".")[0] in {"asyncio", "_asyncio", "ssl"}}
    code = (
        "import sys\n"
        "from codegenie.eval.__main__ import main\n"
        "code = main(['plan', 'bb'])\n"
        "sys.stderr.write('ASYNCIO=%s\\n' % ('asyncio' in sys.modules))\n"
        "sys.exit(code)\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", code],
        cwd=bench.base,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.split()[0] == "bb"
    assert "ASYNCIO=False" in result.stderr


def test_plan_driver_refuses_what_needs_an_event_loop() -> None:
    """The command line's driver runs a coroutine that only yields None; anything else is a bug."""
    from codegenie.eval.cli.cmd_plan import _drive

    closed = []

    class Waiting:
        def __await__(self) -> Any:
            yield "a future"

    async def needs_a_loop() -> int:
        try:
            await Waiting()
        finally:
            closed.append(True)
        return 1

    async def plain() -> int:
        return 7

    assert _drive(plain()) == 7
    with pytest.raises(RuntimeError, match="needs an event loop"):
        _drive(needs_a_loop())
    assert closed == [True]
