"""One mistake, one exit code and one description, in every command; paths and places as text shows them.

Each test runs the installed console script on a bench built in tmp_path, as
a curator would, and pins the exit code, stdout and stderr.
"""

from __future__ import annotations

import argparse
import json
import re
from collections.abc import Callable
from pathlib import Path

import pytest

from codegenie.eval.cli._app import COMMANDS, _parser

from .factory import Bench, make_bench, write_case
from .test_cli import json_error, run

REPO = Path(__file__).resolve().parent.parent

# -- the mistakes of the exit-code table in docs/cli.md -----------------------------------


def _clean(base: Path) -> Bench:
    return make_bench(base, "alpha-one", parts=True)


def _no_manifest(base: Path) -> None:
    base.mkdir(exist_ok=True)


def _toml_syntax(base: Path) -> None:
    bench = _clean(base)
    bench.manifest.write_text(bench.manifest_text() + "[task-classes.broken\n")


def _schema(base: Path) -> None:
    bench = _clean(base)
    bench.manifest.write_text(bench.manifest_text() + "extra = 1\n")


def _root_missing(base: Path) -> None:
    bench = _clean(base)
    bench.add("beta-two", root="elsewhere", write=False)
    (base / "elsewhere").rmdir()


def _module_missing(base: Path) -> None:
    _clean(base).add("beta-two", write=False)


def _registers_an_invalid_slug(base: Path) -> None:
    _clean(base).add("beta-two", register="Beta-Two", parts=True)


def _raises(base: Path) -> None:
    _clean(base).add("beta-two", before="raise RuntimeError('boom')", parts=True)


def _not_registered(base: Path) -> None:
    _clean(base).add("beta-two", register=None, parts=True)


def _invalid_case(base: Path) -> None:
    bench = _clean(base)
    write_case(bench.root / "alpha_one" / "cases", "bad", "timeout = 0\n")


#: mistake -> (how to make it, the command lines that meet it and the exit code of each).
MISTAKES: dict[str, tuple[Callable[[Path], object], dict[tuple[str, ...], int]]] = {
    "invalid slug typed": (
        _clean,
        {
            ("show", "Alpha"): 1,
            ("plan", "Alpha"): 1,
            ("plan", "Alpha", "alpha-one"): 1,
            ("grade", "Alpha", "runs"): 1,
            ("new", "Alpha"): 1,
            ("check", "Alpha"): 1,
        },
    ),
    "invalid slug a registration declares": (
        _registers_an_invalid_slug,
        {
            ("show", "beta-two"): 1,
            ("plan", "beta-two"): 1,
            ("grade", "beta-two", "runs"): 1,
            ("check",): 1,
        },
    ),
    "bad option value": (
        _clean,
        {
            ("check", "--jobs", "0"): 2,
            ("grade", "alpha-one", "runs", "--jobs", "0"): 2,
            ("list", "--format", "xml"): 2,
            ("explain", "no-such-code"): 2,
        },
    ),
    "no manifest": (
        _no_manifest,
        {
            ("list",): 4,
            ("show", "alpha-one"): 4,
            ("plan",): 4,
            ("grade", "alpha-one", "runs"): 4,
            ("new", "gamma-three"): 4,
            ("check",): 4,
        },
    ),
    "manifest not TOML": (
        _toml_syntax,
        {
            ("list",): 4,
            ("show", "alpha-one"): 4,
            ("plan",): 4,
            ("grade", "alpha-one", "runs"): 4,
            ("new", "gamma-three"): 4,
            ("check",): 4,
        },
    ),
    "manifest breaks the schema": (
        _schema,
        {
            ("list",): 4,
            ("show", "alpha-one"): 4,
            ("plan",): 4,
            ("grade", "alpha-one", "runs"): 4,
            ("new", "gamma-three"): 4,
            ("check",): 1,
        },
    ),
    "slug not declared": (
        _clean,
        {("show", "alpha-two"): 3, ("plan", "alpha-two"): 3, ("grade", "alpha-two", "runs"): 3},
    ),
    "root missing": (
        _root_missing,
        {
            ("list",): 0,
            ("show", "beta-two"): 4,
            ("plan", "beta-two"): 4,
            ("grade", "beta-two", "runs"): 4,
            ("check",): 1,
        },
    ),
    "registration file missing": (
        _module_missing,
        {
            ("list",): 0,
            ("show", "beta-two"): 4,
            ("plan", "beta-two"): 4,
            ("grade", "beta-two", "runs"): 4,
            ("check",): 1,
        },
    ),
    "registration raises": (
        _raises,
        {
            ("show", "beta-two"): 1,
            ("plan", "beta-two"): 1,
            ("grade", "beta-two", "runs"): 1,
            ("check",): 1,
        },
    ),
    "slug not registered": (
        _not_registered,
        {
            ("show", "beta-two"): 3,
            ("plan", "beta-two"): 3,
            ("grade", "beta-two", "runs"): 3,
            ("check",): 1,
        },
    ),
    "invalid case": (
        _invalid_case,
        {
            ("show", "alpha-one"): 4,
            ("plan", "alpha-one"): 4,
            ("grade", "alpha-one", "runs"): 4,
            ("check",): 1,
        },
    ),
}

CASES = [
    pytest.param(make, command, code, id=f"{mistake}: {' '.join(command)}")
    for mistake, (make, commands) in MISTAKES.items()
    for command, code in commands.items()
]


@pytest.mark.parametrize(("make", "command", "code"), CASES)
def test_one_mistake_one_exit_code_in_every_command(
    tmp_path: Path, make: Callable[[Path], object], command: tuple[str, ...], code: int
) -> None:
    """Each mistake exits with the code docs/cli.md's table gives it, whichever command meets it.

    The same under --format json, where the failure is one error document
    on stdout (check's own verdicts are its report).
    """
    base = tmp_path / "bench"
    make(base)
    (base / "runs").mkdir(exist_ok=True)
    result = run(*command, cwd=base)
    assert result.returncode == code, result.stdout + result.stderr
    assert "Traceback" not in result.stderr
    as_json = run(*command, "--format", "json", cwd=base)
    assert as_json.returncode == code
    document = json.loads(as_json.stdout)
    if "error" in document:
        assert document["error"]["exit_code"] == code


def test_the_exit_code_table_is_in_the_reference() -> None:
    """docs/cli.md has the table of mistakes and their exit codes by command, and says why."""
    text = (REPO / "docs" / "cli.md").read_text(encoding="utf-8")
    section = text.split("## Exit codes\n", 1)[1].split("\n## ", 1)[0]
    assert "One mistake, one exit code, in every command." in section
    assert "| mistake | `list` | `show`, `plan`, `grade` | `new` | `check` |" in section


# -- paths in text output, relative to the working directory ------------------------------


def test_list_in_an_empty_directory_names_the_manifest_relative(tmp_path: Path) -> None:
    """`list` with no manifest says where it looked as text shows paths: bench.toml, not /tmp/…."""
    result = run("list", cwd=tmp_path)
    assert result.returncode == 4
    assert result.stderr.splitlines()[0] == (
        "codegenie-bench: error[manifest-not-found]: no bench manifest found "
        "(looked for bench.toml and in its parents)"
    )
    assert json_error(run("list", "--format", "json", cwd=tmp_path))["attributes"]["path"] == (
        str(tmp_path / "bench.toml")
    )


def test_init_twice_names_the_manifest_relative(tmp_path: Path) -> None:
    """A second `init` refuses, naming bench.toml as text shows paths; JSON keeps it absolute."""
    assert run("init", cwd=tmp_path).returncode == 0
    result = run("init", cwd=tmp_path)
    assert result.returncode == 1
    assert result.stderr.splitlines()[0] == (
        "bench.toml: error[init-conflict]: cannot start a bench at bench.toml: "
        "a manifest is already there"
    )
    error = json_error(run("init", "--format", "json", cwd=tmp_path))
    assert error["attributes"]["path"] == str(tmp_path / "bench.toml")


# -- where a problem points: the key, or the value --------------------------------------------


def test_a_value_problem_points_at_the_value(tmp_path: Path) -> None:
    """`root = "bnch"` is reported at column 8, in show and check alike; `timeout = 0` at 11."""
    bench = make_bench(tmp_path, "alpha-one", parts=True)
    text = bench.manifest_text().replace('root = "bench"', 'root = "bnch"')
    text = text.replace('module = "bench.', 'module = "bnch.')
    bench.manifest.write_text(text)
    shown = run("show", "alpha-one", cwd=tmp_path)
    checked = run("check", cwd=tmp_path)
    assert shown.stderr.splitlines()[0].startswith("bench.toml:6:8: error[root-missing]:")
    assert checked.stdout.splitlines()[0] == shown.stderr.splitlines()[0]
    bench.write_manifest()
    write_case(bench.root / "alpha_one" / "cases", "bad", "timeout = 0\n")
    result = run("check", cwd=tmp_path)
    assert result.stdout.startswith(
        "bench/alpha_one/cases/bad/case.toml:1:11: error[case-invalid]: case 'bad' of "
        "'alpha-one': timeout: must be greater than 0"
    )


def test_an_unknown_key_points_at_the_key(tmp_path: Path) -> None:
    """A misspelt key is a problem with the key: column 1, where it is written."""
    bench = make_bench(tmp_path, "alpha-one")
    bench.manifest.write_text(bench.manifest_text().replace("root =", "roots ="))
    result = run("check", cwd=tmp_path)
    assert result.stdout.startswith(
        "bench.toml:6:1: error[manifest-schema]: task-classes.alpha-one.roots: unknown key"
    )


@pytest.mark.parametrize(
    ("line", "meant"),
    [
        ('root = "./bench"', 'did you mean root = "bench"?'),
        ('root = "bench/"', 'did you mean root = "bench"?'),
        ('root = "bench//"', 'did you mean root = "bench"?'),
        ('module = "bench.alpha-one.registration"', 'module = "bench.alpha_one.registration"?'),
        ('module = "bench/alpha_one/registration.py"', 'module = "bench.alpha_one.registration"?'),
    ],
)
def test_a_value_that_only_needs_normalising_says_what_was_meant(
    tmp_path: Path, line: str, meant: str
) -> None:
    """A root or module with a stray `./`, `/` or hyphen gets a "did you mean" with its normal form."""
    bench = make_bench(tmp_path, "alpha-one")
    key = line.split(" ", 1)[0]
    lines = [
        line if written.startswith(f"{key} =") else written
        for written in bench.manifest_text().splitlines()
    ]
    bench.manifest.write_text("\n".join(lines) + "\n")
    result = run("list", cwd=tmp_path)
    assert result.returncode == 4
    assert result.stderr.splitlines()[0].endswith(meant)


def test_new_root_that_only_needs_normalising_says_what_was_meant(tmp_path: Path) -> None:
    """`new x --root bench/` is a usage error that suggests `--root bench`."""
    make_bench(tmp_path, "alpha-one")
    result = run("new", "beta-two", "--root", "bench/", cwd=tmp_path)
    assert result.returncode == 2
    assert result.stderr.splitlines()[0].endswith("; did you mean --root bench?")


def test_an_absolute_root_gets_no_suggestion(tmp_path: Path) -> None:
    """`/abs/bench` names another directory: no "did you mean" that would drop the slash."""
    bench = make_bench(tmp_path, "alpha-one")
    bench.manifest.write_text(bench.manifest_text().replace('root = "bench"', 'root = "/bench"'))
    result = run("list", cwd=tmp_path)
    assert "did you mean" not in result.stderr


# -- show: the misspelt table seen from both slugs -------------------------------------------


def _misspelt(base: Path) -> None:
    make_bench(base, "dockerfile-pin", parts=True)
    manifest = base / "bench.toml"
    manifest.write_text(
        manifest.read_text().replace(
            "[task-classes.dockerfile-pin]", "[task-classes.dockerfile-pinn]"
        )
    )


def test_show_of_the_misspelt_table_says_the_table_is_wrong(tmp_path: Path) -> None:
    """`show dockerfile-pinn` says as check does: the table misspells 'dockerfile-pin'."""
    _misspelt(tmp_path)
    result = run("show", "dockerfile-pinn", cwd=tmp_path)
    assert result.returncode == 3
    assert result.stderr.splitlines() == [
        "bench.toml:4:1: error[not-registered]: bench.dockerfile_pin.registration registers "
        "'dockerfile-pin', but bench.toml declares it as 'dockerfile-pinn': the table "
        "[task-classes.dockerfile-pinn] probably misspells the slug",
        "  hint: rename [task-classes.dockerfile-pinn] to [task-classes.dockerfile-pin] "
        "in bench.toml",
    ]
    assert run("check", cwd=tmp_path).stdout == result.stderr


def test_show_of_the_right_slug_points_at_the_misspelt_table(tmp_path: Path) -> None:
    """`show dockerfile-pin` does not suggest the typo: it points at the table that has it."""
    _misspelt(tmp_path)
    result = run("show", "dockerfile-pin", cwd=tmp_path)
    assert result.returncode == 3
    assert result.stderr.splitlines() == [
        "bench.toml:4:1: error[task-class-not-found]: task class 'dockerfile-pin' is not "
        "declared in bench.toml, but [task-classes.dockerfile-pinn] names its package "
        "(bench.dockerfile_pin.registration): the table probably misspells the slug",
        "  hint: rename [task-classes.dockerfile-pinn] to [task-classes.dockerfile-pin] "
        "in bench.toml",
    ]


# -- -v, -V -----------------------------------------------------------------------------------


def test_under_v_the_hint_does_not_ask_for_v(tmp_path: Path) -> None:
    """`show -v` of a registration that raises shows the traceback, and a hint without '-v shows'."""
    make_bench(tmp_path, "alpha-one", before="raise RuntimeError('boom')")
    plain = run("show", "alpha-one", cwd=tmp_path)
    assert plain.stderr.splitlines()[-1] == (
        "  hint: fix the error; -v shows the registration's traceback"
    )
    verbose = run("show", "alpha-one", "-v", cwd=tmp_path)
    assert verbose.returncode == 1
    assert "Traceback (most recent call last):" in verbose.stderr
    assert "-v shows" not in verbose.stderr
    assert "  hint: fix the error\n" in verbose.stderr


@pytest.mark.parametrize("args", [["-V"], ["--version"], ["list", "-V"]])
def test_capital_v_is_the_version(tmp_path: Path, args: list[str]) -> None:
    """-V prints the version and exits 0, before or after the command, as --version does."""
    from codegenie.eval import __version__

    result = run(*args, cwd=tmp_path)
    assert (result.returncode, result.stdout, result.stderr) == (
        0,
        f"codegenie-bench {__version__}\n",
        "",
    )


# -- the locale --------------------------------------------------------------------------------


def test_what_a_locale_cannot_encode_is_escaped_and_lc_all_c_prints_utf8(tmp_path: Path) -> None:
    """ASCII output escapes `café`; under LC_ALL=C Python writes UTF-8, so `café` is printed."""
    make_bench(tmp_path, "alpha-one")
    run("new", "cafe-one", "--description", "café", cwd=tmp_path)
    ascii_only = run("show", "cafe-one", cwd=tmp_path, env={"PYTHONIOENCODING": "ascii"})
    assert "description: caf\\xe9\n" in ascii_only.stdout
    c_locale = run("show", "cafe-one", cwd=tmp_path, env={"LC_ALL": "C"})
    assert "description: café\n" in c_locale.stdout


# -- the references list every option ----------------------------------------------------------


def _own_options(name: str) -> list[str]:
    """The options and arguments of command ``name`` that are not global ones."""
    parser = _parser()
    subparsers = next(
        action for action in parser._actions if isinstance(action, argparse._SubParsersAction)
    )
    sub = subparsers.choices[name]
    global_dests = {action.dest for action in parser._actions}
    found = []
    for action in sub._actions:
        if action.dest in global_dests or action.dest == "help":
            continue
        found.append(action.option_strings[-1] if action.option_strings else action.metavar)
    return [option for option in found if option]


@pytest.mark.parametrize("name", list(COMMANDS))
def test_every_option_is_in_the_reference_headings_and_the_readme(name: str) -> None:
    """Each command's own options appear in its docs/cli.md heading and its README row."""
    reference = (REPO / "docs" / "cli.md").read_text(encoding="utf-8")
    heading = next(line for line in reference.splitlines() if re.match(rf"### `{name}\b", line))
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    row = next(
        line for line in readme.splitlines() if line.startswith(f"| `codegenie-bench {name}")
    )
    for option in _own_options(name):
        assert option in heading, (name, option)
        assert option in row, (name, option)


def test_ci_doc_names_what_ci_runs() -> None:
    """docs/ci.md says which check .ci/run runs, as .ci/run runs it."""
    ci = (REPO / ".ci" / "run").read_text(encoding="utf-8")
    [command] = [line for line in ci.splitlines() if "codegenie-bench check" in line]
    check = command.split("/bin/", 1)[1]
    assert f"`{check}`" in (REPO / "docs" / "ci.md").read_text(encoding="utf-8").replace("\n", " ")


def test_list_describes_a_bad_manifest_from_the_manifest_alone(tmp_path: Path) -> None:
    """`list` looks at no directory: a module not under its root is manifest-schema there, exit 4.

    `show` and `check`, which look at the tree, call the same entry's missing
    root `root-missing`.
    """
    bench = make_bench(tmp_path, "alpha-one")
    bench.manifest.write_text(bench.manifest_text().replace('root = "bench"', 'root = "bnch"'))
    listed = run("list", cwd=tmp_path)
    assert listed.returncode == 4
    assert listed.stderr.splitlines()[0] == (
        "bench.toml:5:10: error[manifest-schema]: task-classes.alpha-one.module: module "
        "'bench.alpha_one.registration' is not under root 'bnch': its first part must be 'bnch'"
    )
    shown = run("show", "alpha-one", cwd=tmp_path)
    assert shown.stderr.startswith("bench.toml:6:8: error[root-missing]:")
