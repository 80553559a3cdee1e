"""codegenie-bench check: every inconsistency, in one run, surviving broken task classes."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import jsonschema
import pytest

from codegenie.eval.check import CODES, Shard, run_check
from codegenie.eval.errors import BenchManifestNotFound

from .checking import check, codes, make_bench
from .factory import Bench

REPO = Path(__file__).resolve().parent.parent
OUTPUT_SCHEMA = json.loads((REPO / "docs" / "cli-output.schema.json").read_text())


def run(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    script = shutil.which("codegenie-bench", path=str(Path(sys.executable).parent))
    assert script is not None
    return subprocess.run(
        [script, *args], cwd=cwd, capture_output=True, text=True, timeout=300, check=False
    )


def assert_shape(document: object, shape: str) -> None:
    """Validate a JSON document against its definition in docs/cli-output.schema.json."""
    schema = {**OUTPUT_SCHEMA, "$ref": f"#/$defs/{shape}"}
    jsonschema.Draft202012Validator(schema).validate(document)


@pytest.fixture(autouse=True)
def _run_in(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Diagnostics show paths relative to the working directory: work in the bench."""
    monkeypatch.chdir(tmp_path)


# -- one bench per code ----------------------------------------------------------------


def test_clean_bench_reports_nothing(tmp_path: Path) -> None:
    """A consistent bench gives no diagnostics and counts its slugs."""
    report = check(make_bench(tmp_path, "aa", "bb", "cc"))
    assert report.diagnostics == ()
    assert report.checked == 3
    assert report.ok(strict=True)


def test_manifest_syntax(tmp_path: Path) -> None:
    """A TOML syntax error is manifest-syntax at its line and column."""
    bench = make_bench(tmp_path, "aa")
    bench.manifest.write_text("schema-version = 1\n[task-classes.aa\n")
    report = check(bench)
    [diagnostic] = report.diagnostics
    assert (diagnostic.code, diagnostic.file, diagnostic.line) == (
        "manifest-syntax",
        "bench.toml",
        2,
    )
    assert report.checked == 0


def test_unreadable_bytes_are_manifest_syntax(tmp_path: Path) -> None:
    """Invalid UTF-8 is a diagnostic, not a traceback."""
    bench = make_bench(tmp_path, "aa")
    bench.manifest.write_bytes(b"schema-version = 1\n\xff\xfe\n")
    assert codes(check(bench)) == [("manifest-syntax", None)]


def test_manifest_schema_keeps_checking_the_valid_entries(tmp_path: Path) -> None:
    """A schema problem in one entry is reported, and the other entries are still imported."""
    bench = make_bench(tmp_path, "good", "broken")
    bench.add("raises", before="raise RuntimeError('x')")
    text = bench.manifest.read_text().replace('module = "bench.broken.registration"', "module = 42")
    bench.manifest.write_text(text)
    report = check(bench)
    assert codes(report) == [("manifest-schema", "broken"), ("import-failed", "raises")]
    assert report.diagnostics[0].line == 9
    assert report.checked == 2


def test_root_missing(tmp_path: Path) -> None:
    """A declared root that does not exist is root-missing at the root key."""
    bench = make_bench(tmp_path, "aa")
    bench.add("far", root="elsewhere/bench", write=False)
    shutil.rmtree(tmp_path / "elsewhere")
    report = check(bench)
    assert codes(report) == [("root-missing", "far")]
    assert report.diagnostics[0].line == 10


def test_module_missing(tmp_path: Path) -> None:
    """A declared registration file that does not exist is module-missing at the module key."""
    bench = make_bench(tmp_path, "aa")
    bench.add("gone", write=False)
    report = check(bench)
    assert codes(report) == [("module-missing", "gone")]
    assert report.diagnostics[0].line == 9


def test_module_convention_is_a_warning(tmp_path: Path) -> None:
    """A package not named after the slug is a warning: ok, but not with --strict."""
    bench = make_bench(tmp_path, "aa")
    bench.add("odd-one", module="bench.other_name.registration")
    report = check(bench)
    assert codes(report) == [("module-convention", "odd-one")]
    assert report.diagnostics[0].severity == "warning"
    assert report.ok()
    assert not report.ok(strict=True)


def test_duplicate_module(tmp_path: Path) -> None:
    """Two slugs naming one module is duplicate-module; the first still gets imported."""
    bench = make_bench(tmp_path, "aa")
    bench.add("bb", module="bench.aa.registration", write=False)
    report = check(bench)
    assert codes(report) == [("duplicate-module", "bb")]
    assert report.checked == 1


def test_orphan_task_class(tmp_path: Path) -> None:
    """A registration.py under a declared root that no entry lists is an orphan."""
    bench = make_bench(tmp_path, "aa")
    bench.add("lost-one", declare=False)
    (bench.root / "__pycache__").mkdir()
    (bench.root / "__pycache__" / "registration.py").write_text("")
    report = check(bench)
    assert codes(report) == [("orphan-task-class", "lost-one")]
    assert report.diagnostics[0].file == "bench/lost_one/registration.py"
    assert "bench.lost_one.registration" in report.diagnostics[0].message


def test_import_failed_points_at_the_raising_line(tmp_path: Path) -> None:
    """A raising registration is import-failed at its file and line, with the cause."""
    bench = make_bench(tmp_path, "aa", before="x = 1\nraise ValueError('no good')")
    [diagnostic] = check(bench).diagnostics
    assert diagnostic.code == "import-failed"
    assert (diagnostic.file, diagnostic.line) == ("bench/aa/registration.py", 3)
    assert "ValueError: no good" in diagnostic.message


def test_sys_exit_zero_is_import_failed_never_green(tmp_path: Path) -> None:
    """sys.exit(0) in a registration is import-failed; the check does not pass."""
    bench = make_bench(tmp_path, "aa", before="import sys\nsys.exit(0)")
    report = check(bench)
    assert codes(report) == [("import-failed", "aa")]
    assert not report.ok()


def test_os_exit_is_import_crashed(tmp_path: Path) -> None:
    """os._exit in a registration is import-crashed, with the status."""
    bench = make_bench(tmp_path, "aa", before="import os\nos._exit(7)")
    [diagnostic] = check(bench).diagnostics
    assert diagnostic.code == "import-crashed"
    assert "exited with status 7" in diagnostic.message
    assert (diagnostic.file, diagnostic.line) == ("bench.toml", 4)


def test_death_by_signal_is_import_crashed(tmp_path: Path) -> None:
    """A registration that kills its interpreter with a signal is import-crashed."""
    bench = make_bench(
        tmp_path, "aa", before="import os, signal\nos.kill(os.getpid(), signal.SIGKILL)"
    )
    [diagnostic] = check(bench).diagnostics
    assert diagnostic.code == "import-crashed"
    assert "SIGKILL" in diagnostic.message


def test_hang_is_import_timeout(tmp_path: Path) -> None:
    """A registration that never finishes is import-timeout after --timeout seconds."""
    bench = make_bench(tmp_path, "aa", before="import time\nwhile True:\n    time.sleep(1)")
    started = time.monotonic()
    report = check(bench, timeout=1.0)
    assert codes(report) == [("import-timeout", "aa")]
    assert time.monotonic() - started < 30


def test_not_registered(tmp_path: Path) -> None:
    """A registration that registers nothing is not-registered."""
    assert codes(check(make_bench(tmp_path, "aa", register=None))) == [("not-registered", "aa")]


def test_extra_registration_points_at_the_decorator(tmp_path: Path) -> None:
    """A registration that registers a second slug is extra-registration at that decorator."""
    bench = make_bench(tmp_path, "aa", after="@register_task_class('bb')\nclass Second:\n    pass")
    [diagnostic] = check(bench).diagnostics
    assert (diagnostic.code, diagnostic.slug) == ("extra-registration", "aa")
    assert (diagnostic.file, diagnostic.line) == ("bench/aa/registration.py", 8)
    assert "'bb'" in diagnostic.message


def test_rubric_import_found_by_ast_without_running(tmp_path: Path) -> None:
    """A registration importing its rubric is rubric-imported at the import line (once)."""
    bench = make_bench(tmp_path, "aa", before="from bench.aa import rubric")
    (bench.root / "aa" / "rubric.py").write_text("VALUE = 1\n")
    [diagnostic] = check(bench).diagnostics
    assert diagnostic.code == "rubric-imported"
    assert (diagnostic.file, diagnostic.line) == ("bench/aa/registration.py", 2)


def test_rubric_import_hidden_from_the_ast_is_found_by_importing(tmp_path: Path) -> None:
    """A rubric pulled in dynamically is caught by inspecting the worker's sys.modules."""
    bench = make_bench(
        tmp_path,
        "aa",
        before="import importlib\nimportlib.import_module('bench.aa.' + 'rub' + 'ric')",
    )
    (bench.root / "aa" / "rubric.py").write_text("VALUE = 1\n")
    [diagnostic] = check(bench).diagnostics
    assert diagnostic.code == "rubric-imported"
    assert "bench.aa.rubric" in diagnostic.message


def test_no_manifest_raises_not_found(tmp_path: Path) -> None:
    """Without a manifest there is nothing to check: BenchManifestNotFound."""
    with pytest.raises(BenchManifestNotFound):
        run_check(tmp_path / "bench.toml")


# -- the dozen-problem bench -------------------------------------------------------------


def broken_bench(base: Path) -> Bench:
    bench = Bench(base, parts=True)
    bench.add("good-one")
    bench.add("good-two")
    bench.add("exits-hard", before="import os\nos._exit(7)")
    bench.add("loops", before="while True:\n    pass")
    bench.add("raises", before="raise RuntimeError('boom')")
    bench.add("two-slugs", after="@register_task_class('sneaky')\nclass Other:\n    pass")
    bench.add("sys-exit", before="import sys\nsys.exit(0)")
    bench.add("nothing", register=None)
    bench.add("uses-rubric", before="from bench.uses_rubric import rubric")
    (bench.root / "uses_rubric" / "rubric.py").write_text("X = 1\n")
    bench.add("no-file", write=False)
    bench.add("odd-module", module="bench.odd.registration")
    bench.add("far", root="elsewhere/bench", write=False)
    shutil.rmtree(base / "elsewhere")
    bench.add("lost", declare=False)
    bench.add("good-three")
    return bench


EXPECTED_BROKEN = {
    ("import-crashed", "exits-hard"),
    ("import-timeout", "loops"),
    ("import-failed", "raises"),
    ("extra-registration", "two-slugs"),
    ("import-failed", "sys-exit"),
    ("not-registered", "nothing"),
    ("rubric-imported", "uses-rubric"),
    ("module-missing", "no-file"),
    ("module-convention", "odd-module"),
    ("root-missing", "far"),
    ("orphan-task-class", "lost"),
}


def test_one_run_reports_every_problem_of_a_broken_bench(tmp_path: Path) -> None:
    """A dozen problems at once: all reported with their slugs and lines; the good ones clean."""
    bench = broken_bench(tmp_path)
    started = time.monotonic()
    report = check(bench, timeout=2.0)
    elapsed = time.monotonic() - started
    assert set(codes(report)) == EXPECTED_BROKEN
    assert len(report.diagnostics) == len(EXPECTED_BROKEN)
    assert not {d.slug for d in report.diagnostics} & {"good-one", "good-two", "good-three"}
    assert report.checked == 13
    lines = {d.slug: (d.file, d.line) for d in report.diagnostics}
    assert lines["raises"] == ("bench/raises/registration.py", 2)
    assert lines["exits-hard"] == (
        "bench.toml",
        bench.manifest_text().splitlines().index("[task-classes.exits-hard]") + 1,
    )
    assert elapsed < 60, "the hanging registration was not cut off by its timeout"


def test_order_is_the_same_whatever_jobs_is(tmp_path: Path) -> None:
    """--jobs 1 and --jobs 3 give the same diagnostics in the same order."""
    bench = broken_bench(tmp_path)
    one = check(bench, jobs=1, timeout=1.0)
    three = check(bench, jobs=3, timeout=1.0)
    assert one.diagnostics == three.diagnostics


def test_shards_partition_the_slugs_and_their_union_is_the_full_run(tmp_path: Path) -> None:
    """The shards of K/N check disjoint slices whose union equals the full run."""
    bench = broken_bench(tmp_path)
    full = check(bench, timeout=1.0)
    shards = [check(bench, timeout=1.0, shard=Shard(k, 3)) for k in (1, 2, 3)]
    assert sum(s.checked for s in shards) == full.checked
    union = sorted((d for s in shards for d in s.diagnostics), key=lambda d: d.sort_key())
    assert tuple(union) == full.diagnostics


@pytest.mark.parametrize("text", ["0/2", "3/2", "1", "a/b", "1/0", "-1/2"])
def test_bad_shard_specs_are_refused(text: str) -> None:
    """A shard must be K/N with 1 <= K <= N."""
    with pytest.raises(ValueError, match="shard"):
        Shard.parse(text)


def test_shard_assignment_is_stable() -> None:
    """A slug's shard depends only on the slug."""
    slugs = [f"slug-{n}" for n in range(200)]
    counts = [sum(s in Shard(k, 4) for s in slugs) for k in (1, 2, 3, 4)]
    assert sum(counts) == 200
    assert min(counts) > 20
    assert ("slug-7" in Shard(2, 4)) == ("slug-7" in Shard(2, 4))


def test_slugs_sharing_a_worker_do_not_see_each_others_registrations(tmp_path: Path) -> None:
    """With one worker, each slug is imported with a fresh registry and clean modules."""
    bench = make_bench(tmp_path, "aa")
    bench.add("bb", register="aa")
    bench.add("cc", before="import bench.aa.registration")
    expected = {
        ("not-registered", "bb"),
        ("extra-registration", "bb"),
        ("extra-registration", "cc"),
    }
    one = check(bench, jobs=1)
    assert set(codes(one)) == expected
    assert len(one.diagnostics) == 3
    assert one.diagnostics == check(bench, jobs=3).diagnostics


def test_check_imports_nothing_into_the_calling_process(tmp_path: Path) -> None:
    """run_check leaves sys.modules free of the bench's registrations."""
    bench = make_bench(tmp_path, "aa", "bb")
    before = set(sys.modules)
    check(bench)
    assert not {m for m in set(sys.modules) - before if m.startswith("bench")}


# -- the command line -----------------------------------------------------------------


def test_cli_exit_codes_and_text_format(tmp_path: Path) -> None:
    """check exits 1 with compiler-style lines on stdout and a summary on stderr."""
    bench = make_bench(tmp_path, "aa", register=None)
    result = run("check", cwd=tmp_path)
    assert result.returncode == 1
    assert result.stdout.startswith("bench.toml:4:1: error[not-registered]: ")
    assert "  hint: " in result.stdout
    assert "checked 1 task class in bench.toml: 1 error, 0 warnings" in result.stderr
    bench.add("aa")
    assert run("check", cwd=tmp_path).returncode == 0


def test_cli_strict_fails_on_warnings(tmp_path: Path) -> None:
    """A warning passes without --strict and fails with it."""
    bench = make_bench(tmp_path, "aa")
    bench.add("odd-one", module="bench.other.registration")
    assert run("check", cwd=tmp_path).returncode == 0
    assert run("check", "--strict", cwd=tmp_path).returncode == 1


def test_cli_json_format_validates(tmp_path: Path) -> None:
    """--format json prints the documented check document."""
    broken = broken_bench(tmp_path)
    result = run("check", "--format", "json", "--timeout", "1", cwd=tmp_path)
    assert result.returncode == 1
    document = json.loads(result.stdout)
    jsonschema.Draft202012Validator({**OUTPUT_SCHEMA, "$ref": "#/$defs/check"}).validate(document)
    assert document["ok"] is False
    assert document["manifest"] == str(broken.manifest)
    assert document["checked"] == 13
    assert {(d["code"], d["slug"]) for d in document["diagnostics"]} == EXPECTED_BROKEN


def test_cli_github_format(tmp_path: Path) -> None:
    """--format github prints workflow-command annotations with file, line and title."""
    make_bench(tmp_path, "aa", before="raise RuntimeError('a, b: c')")
    result = run("check", "--format", "github", cwd=tmp_path)
    assert result.returncode == 1
    first = result.stdout.splitlines()[0]
    assert first.startswith(
        "::error file=bench/aa/registration.py,line=2,col=1,title=import-failed (aa)::"
    )
    assert "RuntimeError: a, b: c" in first
    assert "%0Ahint: " in first


def test_cli_github_summary_goes_to_stderr(tmp_path: Path) -> None:
    """Under --format github, stdout holds only workflow commands; the summary is on stderr, as in text."""
    make_bench(tmp_path, "aa", before="raise RuntimeError('boom')")
    result = run("check", "--format", "github", cwd=tmp_path)
    assert result.returncode == 1
    assert all(line.startswith("::") for line in result.stdout.splitlines())
    assert result.stderr == "checked 1 task class in bench.toml: 1 error, 0 warnings\n"
    quiet = run("check", "--format", "github", "-q", cwd=tmp_path)
    assert (quiet.stdout, quiet.stderr) == (result.stdout, "")


def test_summary_counts_what_was_checked_of_what_is_declared(tmp_path: Path) -> None:
    """An entry too broken to check is declared but not checked: 'checked 1 of 2', and JSON says both."""
    bench = make_bench(tmp_path, "aa")
    bench.add("bb", module="bench.aa.registration", write=False)  # a duplicate module
    result = run("check", cwd=tmp_path)
    assert result.returncode == 1
    assert result.stderr == "checked 1 of 2 task classes in bench.toml: 1 error, 0 warnings\n"
    document = json.loads(run("check", "--format", "json", cwd=tmp_path).stdout)
    assert_shape(document, "check")
    assert (document["checked"], document["declared"]) == (1, 2)


def test_an_entry_with_a_misnamed_root_is_declared_not_checked(tmp_path: Path) -> None:
    """A root that is not there, with a module under another root: 'checked 0 of 1', root-missing."""
    bench = make_bench(tmp_path, "aa")
    bench.manifest.write_text(bench.manifest_text().replace('root = "bench"', 'root = "bnch"'))
    result = run("check", cwd=tmp_path)
    assert result.returncode == 1
    assert result.stdout.startswith("bench.toml:6:8: error[root-missing]: root 'bnch' of 'aa'")
    assert result.stderr == "checked 0 of 1 task class in bench.toml: 1 error, 0 warnings\n"


def _misspelt_table(bench_dir: Path, *, module_too: bool = False) -> None:
    """``[task-classes.dockerfile-pinn]`` for the package of ``dockerfile-pin`` (its module too)."""
    make_bench(bench_dir, "dockerfile-pin")
    manifest = bench_dir / "bench.toml"
    text = manifest.read_text().replace(
        "[task-classes.dockerfile-pin]", "[task-classes.dockerfile-pinn]"
    )
    if module_too:
        text = text.replace("bench.dockerfile_pin.", "bench.dockerfile_pinn.")
    manifest.write_text(text)


def test_a_misspelt_table_is_one_problem_naming_the_slug_the_code_registers(
    tmp_path: Path,
) -> None:
    """A table misspelling the slug its module registers: one not-registered that says to rename the table.

    Not three diagnostics (not-registered, extra-registration, module-convention),
    and never a hint to copy the typo into the decorator.
    """
    _misspelt_table(tmp_path)
    result = run("check", "--strict", cwd=tmp_path)
    assert result.returncode == 1
    assert result.stdout.splitlines() == [
        "bench.toml:4:1: error[not-registered]: bench.dockerfile_pin.registration registers "
        "'dockerfile-pin', but bench.toml declares it as 'dockerfile-pinn': the table "
        "[task-classes.dockerfile-pinn] probably misspells the slug",
        "  hint: rename [task-classes.dockerfile-pinn] to [task-classes.dockerfile-pin] "
        "in bench.toml",
    ]
    assert "register_task_class('dockerfile-pinn')" not in result.stdout


def test_a_misspelt_table_and_module_beside_an_unlisted_package_is_one_problem(
    tmp_path: Path,
) -> None:
    """Table and module both misspelt, the real package unlisted: one module-missing naming it, no orphan."""
    _misspelt_table(tmp_path, module_too=True)
    report = check(Bench(tmp_path))
    assert codes(report) == [("module-missing", "dockerfile-pinn")]
    [found] = report.diagnostics
    assert "bench/dockerfile_pin/registration.py, which no entry lists" in found.message
    assert found.hint == (
        "rename [task-classes.dockerfile-pinn] to [task-classes.dockerfile-pin] and set "
        'module = "bench.dockerfile_pin.registration" in bench.toml'
    )


def test_a_slug_registered_under_another_declared_name_is_not_called_a_typo(
    tmp_path: Path,
) -> None:
    """When the name the module registers is declared too, the code is what is wrong: the plain hint."""
    bench = make_bench(tmp_path, "alpha-one")
    bench.add("alpha-two", register="alpha-one", module="bench.alpha_two.registration")
    report = check(bench)
    wrong = next(d for d in report.diagnostics if d.code == "not-registered")
    assert wrong.hint == "decorate the task class with @register_task_class('alpha-two')"


def test_cli_no_manifest_exits_4(tmp_path: Path) -> None:
    """check with no manifest exits 4 with a diagnostic, no traceback."""
    result = run("check", cwd=tmp_path)
    assert result.returncode == 4
    assert "error[manifest-not-found]" in result.stderr
    assert "Traceback" not in result.stderr


def test_cli_unreadable_manifest_is_a_diagnostic(tmp_path: Path) -> None:
    """A manifest of binary junk gives a manifest-syntax diagnostic and exit 4: nothing to check."""
    (tmp_path / "bench.toml").write_bytes(b"\x00\xff\x00junk")
    result = run("check", cwd=tmp_path)
    assert result.returncode == 4
    assert "error[manifest-syntax]" in result.stdout
    assert "Traceback" not in result.stderr


@pytest.mark.parametrize(
    "args", [["--jobs", "0"], ["--timeout", "0"], ["--shard", "5/4"], ["--shard", "x"]]
)
def test_cli_bad_check_options_exit_2(tmp_path: Path, args: list[str]) -> None:
    """Bad --jobs, --timeout or --shard values are usage errors."""
    make_bench(tmp_path, "aa")
    result = run("check", *args, cwd=tmp_path)
    assert result.returncode == 2
    assert result.stdout == ""


def test_github_format_is_only_for_check(tmp_path: Path) -> None:
    """--format github on another command is a usage error."""
    make_bench(tmp_path, "aa")
    assert run("list", "--format", "github", cwd=tmp_path).returncode == 2


@pytest.mark.shipped_bench
def test_shipped_bench_passes_strict_check() -> None:
    """The repository's own bench passes `check --strict`."""
    result = run("check", "--strict", cwd=REPO)
    assert result.returncode == 0, result.stdout
    assert result.stdout == ""


def test_scaffolded_task_class_passes_check_unchanged(tmp_path: Path) -> None:
    """What `new` creates passes `check --strict` as it is."""
    make_bench(tmp_path, "aa")
    assert run("new", "fresh-one", cwd=tmp_path).returncode == 0
    result = run("check", "--strict", cwd=tmp_path)
    assert result.returncode == 0, result.stdout


def test_every_code_is_documented() -> None:
    """docs/check-codes.md has a section for every code, with an example and a fix."""
    text = (REPO / "docs" / "check-codes.md").read_text(encoding="utf-8")
    for code, spec in CODES.items():
        section = text.split(f"## `{code}`", 1)
        assert len(section) == 2, code
        body = section[1].split("\n## ", 1)[0]
        assert spec.severity in body
        assert "Example" in body
        assert "Fix" in body


def test_pre_commit_hook_runs_the_check() -> None:
    """.pre-commit-hooks.yaml offers the check to other repositories."""
    text = (REPO / ".pre-commit-hooks.yaml").read_text(encoding="utf-8")
    assert "id: codegenie-bench-check" in text
    assert "entry: codegenie-bench check" in text
    assert os.path.exists(REPO / "docs" / "ci.md")


def test_static_pass_resolves_registrations_through_symbolic_links(tmp_path: Path) -> None:
    """Each import target names its registration with every symbolic link resolved.

    The static pass resolves each root once and then looks only at the parts
    below it: a linked package directory, a linked registration file and a
    root shared by many entries must give what ``Path.resolve()`` gives.
    """
    from codegenie.eval.check.static import check_static

    bench = make_bench(tmp_path / "b", "plain-one", "linked-dir", "linked-file", "also-plain")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (bench.root / "linked_dir").rename(elsewhere / "linked_dir")
    (bench.root / "linked_dir").symlink_to(elsewhere / "linked_dir")
    registration = bench.root / "linked_file" / "registration.py"
    registration.rename(elsewhere / "file.py")
    registration.symlink_to(elsewhere / "file.py")
    (bench.root / "also_plain" / "registration.py").write_text(
        "import importlib\nimport bench.rubric\n"
        "from codegenie.eval import register_task_class\n\n"
        "register_task_class('also-plain')(type('T', (), {}))\n"
        "importlib.import_module('x.rubric')\n"
    )
    result = check_static(bench.manifest, lambda _slug: True)
    expected = {
        slug: str((bench.root / slug.replace("-", "_") / "registration.py").resolve())
        for slug in ("plain-one", "linked-dir", "linked-file", "also-plain")
    }
    assert {t.slug: t.expected_file for t in result.targets} == expected
    assert expected["linked-dir"] == str(elsewhere / "linked_dir" / "registration.py")
    assert expected["linked-file"] == str(elsewhere / "file.py")
    flagged = [(d.code, d.line) for d in result.diagnostics if d.slug == "also-plain"]
    assert flagged == [("rubric-imported", 2), ("rubric-imported", 6)]
    also = next(t for t in result.targets if t.slug == "also-plain")
    assert also.register_lines == (("also-plain", 5),)


# -- what only a rubric run uses, and slugs typed wrong ---------------------------------


@pytest.mark.parametrize(
    ("args", "option"),
    [
        (("--repeat", "3"), "--repeat"),
        (("--repeat=1",), "--repeat"),
        (("--no-build",), "--no-build"),
        (("aa", "--repeat", "2", "--format", "json"), "--repeat"),
    ],
)
def test_a_rubric_option_without_rubrics_is_a_usage_error(
    tmp_path: Path, args: tuple[str, ...], option: str
) -> None:
    """`check --repeat N` (or --no-build) without --rubrics exits 2 saying to add --rubrics."""
    make_bench(tmp_path, "aa")
    result = run("check", *args, cwd=tmp_path)
    assert result.returncode == 2, result.stdout + result.stderr
    assert f"{option} is for check --rubrics: add --rubrics" in result.stdout + result.stderr
    assert "Traceback" not in result.stderr


def test_a_repeat_setting_never_fails_a_plain_check(tmp_path: Path) -> None:
    """A table's `repeat` serves check --rubrics; a plain check passes it over (exit 0)."""
    make_bench(tmp_path, "aa")
    (tmp_path / "pyproject.toml").write_text(
        '[project]\nname = "b"\n\n[tool.codegenie-bench]\nrepeat = 3\n', "utf-8"
    )
    result = run("check", cwd=tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr
    shown = run("check", "--show-settings", "--repeat", "4", cwd=tmp_path)
    assert shown.returncode == 0, shown.stderr
    assert "repeat = 4" in shown.stdout


@pytest.mark.parametrize(
    ("typed", "meant"),
    [
        ("Vuln_Remediation", "vuln-remediation"),
        ("Vuln-remediatio", "vuln-remediation"),  # its slug form is not declared: the close one is
        ("Other_Thng", "other-thing"),
        ("-other-thing", "other-thing"),
    ],
)
def test_an_invalid_slug_suggests_the_declared_slugs(
    tmp_path: Path, typed: str, meant: str
) -> None:
    """`check SLUG` with a slug breaking the rules exits 1, naming the declared slug close to it."""
    make_bench(tmp_path, "vuln-remediation", "other-thing")
    result = run("check", "--", typed, cwd=tmp_path)
    assert result.returncode == 1, result.stdout + result.stderr
    assert "invalid-task-class-name" in result.stderr
    assert f"did you mean {meant!r}?" in result.stderr
    document = run("check", "--format", "json", "--", typed, cwd=tmp_path)
    assert document.returncode == 1
    [found] = json.loads(document.stdout)["error"]["diagnostics"]
    assert f"did you mean {meant!r}?" in found["message"]


def test_an_invalid_slug_is_exit_1_whatever_the_manifest(tmp_path: Path) -> None:
    """No manifest, or one that is not TOML: the slug is still refused with exit 1, nothing else."""
    missing = run("check", "Other_Thng", cwd=tmp_path)
    assert missing.returncode == 1, missing.stderr
    assert "did you mean 'other-thng'?" in missing.stderr
    (tmp_path / "bench.toml").write_text("schema-version = [\n")
    broken = run("check", "Other_Thng", cwd=tmp_path)
    assert broken.returncode == 1, broken.stderr
    assert "Traceback" not in broken.stderr


def test_env_build_refuses_an_invalid_slug_with_exit_1(tmp_path: Path) -> None:
    """`env build Other_Thng` is an invalid slug (exit 1) with the declared suggestion, not exit 3."""
    make_bench(tmp_path, "other-thing")
    result = run("env", "build", "Other_Thng", cwd=tmp_path)
    assert result.returncode == 1, result.stderr
    assert "invalid-task-class-name" in result.stderr
    assert "did you mean 'other-thing'?" in result.stderr
