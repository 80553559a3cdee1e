"""Hostile and confused `command` values: refused where they are written, or run to a clear error.

A manifest value that is no command is a located problem (file, line,
column, key, why) in every command that reads the manifest, with the
documented exit code and valid JSON; a command that is valid but cannot
run ends each case as an ``error`` that says why, never ``passed``, with
nothing left behind; the values a command's placeholders become are never
read as placeholders again.
"""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from codegenie.eval._command import DEFAULT_COMMAND, RubricCommand, command_problem
from codegenie.eval._manifest.model import BenchManifest
from codegenie.eval._run.spec import RunSpec, TreeRef
from codegenie.eval.cases import Case
from codegenie.eval.errors import BenchManifestInvalid

from .test_rubric_command import RUBRIC_SH, SHELL, SLUG, Bench

REPO = Path(__file__).resolve().parent.parent
OUTPUT_SCHEMA = json.loads((REPO / "docs" / "cli-output.schema.json").read_text())
HEAD_LINES = 5  # the manifest's lines before `command` (Bench.declare)
KEY = f"task-classes.{SLUG}.command"


def assert_shape(document: object, shape: str) -> None:
    """Validate a JSON document against its definition in docs/cli-output.schema.json."""
    schema = {**OUTPUT_SCHEMA, "$ref": f"#/$defs/{shape}"}
    jsonschema.Draft202012Validator(schema).validate(document)


@pytest.fixture(scope="module")
def bench(tmp_path_factory: pytest.TempPathFactory) -> Bench:
    """One shell task class for the module; each test declares its own command."""
    return Bench(tmp_path_factory.mktemp("attack"), "rubric.sh", RUBRIC_SH, SHELL)


# -- words no command may hold ---------------------------------------------------------------


@pytest.mark.parametrize(
    "char",
    [
        "\u202a",  # LEFT-TO-RIGHT EMBEDDING
        "\u202e",  # RIGHT-TO-LEFT OVERRIDE: shows the words in another order than they run
        "\u2066",  # LEFT-TO-RIGHT ISOLATE
        "\u2069",  # POP DIRECTIONAL ISOLATE
        "\u2028",  # LINE SEPARATOR: a line break in a one-line display
        "\u2029",  # PARAGRAPH SEPARATOR
    ],
)
def test_a_word_with_a_reordering_or_line_breaking_character_is_refused(char: str) -> None:
    """What the command line escapes as a control character, a command refuses as one."""
    words = ("sh", f"{{rubric}}{char}", "{case}", "{candidate}")
    assert command_problem(words) == (f"word 2 contains a control character (U+{ord(char):04X})")


def test_a_c0_control_character_is_still_named_as_before() -> None:
    assert command_problem(("sh\x00", "{case}", "{candidate}")) == (
        "word 1 contains a control character (U+0000)"
    )


@pytest.mark.parametrize(
    ("words", "problem"),
    [
        # `{{case}}` is the literal text {case}: the command names no case.
        (("sh", "{rubric}", "{{case}}", "{candidate}"), "does not name {case}"),
        # Full-width braces are text, not placeholders.
        (("sh", "{rubric}", "\uff5bcase\uff5d", "{candidate}"), "does not name {case}"),
        (("sh", "{rubric}", "{Case}", "{candidate}"), "did you mean '{case}'?"),
        (("sh", "{rubric}", "{ case }", "{candidate}"), "did you mean '{case}'?"),
        (("sh", "{", "{case}", "{candidate}"), "has an unmatched '{'"),
        (("x{python}", "{case}", "{candidate}"), "only as its whole first word"),
        (("sh", "{python}", "{case}", "{candidate}"), "only as its whole first word"),
    ],
)  # fmt: skip
def test_a_lookalike_placeholder_is_no_placeholder(words: tuple[str, ...], problem: str) -> None:
    found = command_problem(words)
    assert found is not None
    assert problem in found


def test_a_value_is_never_read_as_a_placeholder_again() -> None:
    """Braces and spaces in the paths a run's placeholders become stay as they are: one render."""
    command = RubricCommand(("sh", "{rubric}", "--r={rubric}", "{case}", "-c={candidate}"))
    rubric, case, candidate = "/b {case}/r{{.sh", "/w/{candidate}}/c", "/w/ {rubric} /k"
    argv = command.render(python="/py", rubric=rubric, case=case, candidate=candidate)
    assert argv == ["sh", rubric, f"--r={rubric}", case, f"-c={candidate}"]


# -- located in the manifest -----------------------------------------------------------------


@pytest.mark.parametrize(
    ("value", "column", "key", "message"),
    [
        ('[["sh"], "{case}", "{candidate}"]', 12, f"{KEY}[0]", "expected a string, got an array"),
        ("{ a = 1 }", 11, KEY, "expected an array, got a table"),
        ("[1, 2]", 12, f"{KEY}[0]", "expected a string, got an integer"),
        ('["", "{case}", "{candidate}"]', 11, KEY, "command word 1 is empty"),
        (json.dumps(["x"] * 100_000), 11, KEY, "command has 100000 words; at most 64 are allowed"),
        (
            json.dumps(["x" * 1_000_000, "{case}", "{candidate}"]),
            11,
            KEY,
            "command word 1 is 1000000 characters long; at most 1024 are allowed",
        ),
        (
            '["sh", "{rubric}\\u202e", "{case}", "{candidate}"]',
            11,
            KEY,
            "command word 2 contains a control character (U+202E)",
        ),
        (
            '["sh\\u2028", "{rubric}", "{case}", "{candidate}"]',
            11,
            KEY,
            "command word 1 contains a control character (U+2028)",
        ),
    ],
)  # fmt: skip
def test_a_hostile_value_is_a_problem_at_its_place(
    tmp_path: Path, value: str, column: int, key: str, message: str
) -> None:
    path = tmp_path / "bench.toml"
    path.write_text(
        f'schema-version = 1\n\n[task-classes.{SLUG}]\nmodule = "bench.sh_task.registration"\n'
        f'root = "bench"\ncommand = {value}\n',
        encoding="utf-8",
    )
    with pytest.raises(BenchManifestInvalid) as raised:
        BenchManifest.load(path)
    found = [(p.line, p.column, p.key, p.message) for p in raised.value.problems]
    assert found[0] == (HEAD_LINES + 1, column, key, message)


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ('"sh {rubric} {case} {candidate}"', f"{KEY}: expected an array, got a string"),
        (
            '["sh", "{rubric}", "{{case}}", "{candidate}"]',
            f"{KEY}: command does not name {{case}}: the rubric would not know where the run's "
            "copies are",
        ),
        (
            '["sh", "\\u202e{rubric}", "{case}", "{candidate}"]',
            f"{KEY}: command word 2 contains a control character (U+202E)",
        ),
    ],
)
def test_every_command_that_reads_the_manifest_locates_the_problem(
    bench: Bench, value: str, message: str
) -> None:
    """check (text and JSON), plan, show and grade: the same place, the documented exit codes."""
    bench.declare(value)
    try:
        text = bench.run("check")
        assert text.returncode == 1
        assert text.stdout.startswith(f"bench.toml:6:11: error[manifest-schema]: {message}\n")
        as_json = bench.run("check", "--format", "json")
        assert as_json.returncode == 1
        document = json.loads(as_json.stdout)
        assert_shape(document, "check")
        [diagnostic] = document["diagnostics"]
        assert (diagnostic["file"], diagnostic["line"], diagnostic["column"]) == (
            "bench.toml",
            6,
            11,
        )
        assert (diagnostic["slug"], diagnostic["message"]) == (SLUG, message)
        for args in (("plan", SLUG), ("show", SLUG), ("grade", SLUG, "candidates")):
            done = bench.run(*args, "--sandbox", "none") if args[0] == "grade" else bench.run(*args)
            assert done.returncode == 4, (args, done.stderr)
            assert f"bench.toml:6:11: error[manifest-schema]: {message}\n" in done.stderr
            assert "Traceback" not in done.stderr
    finally:
        bench.declare(SHELL)


# -- valid, but it cannot run ----------------------------------------------------------------


def grade_errors(bench: Bench, sandbox: str) -> dict[str, tuple[str, str]]:
    """Grade with ``sandbox`` and no store; return each case's (status, reason)."""
    done = bench.run(
        "grade", SLUG, "candidates", "--format", "json", "--sandbox", sandbox, "--no-cache"
    )
    assert done.returncode == 1, done.stderr
    assert "Traceback" not in done.stderr
    report: dict[str, Any] = json.loads(done.stdout)
    assert_shape(report, "grade")
    return {r["case"]: (r["status"], r["reason"]) for r in report["results"]}


@pytest.mark.parametrize(
    ("command", "said", "program"),
    [
        ('["nonexistent-prog", "{case}", "{candidate}"]', "No such file or directory", "nonexistent-prog"),
        ('["./run.sh", "{case}", "{candidate}"]', "No such file or directory", "./run.sh"),
        ('["/etc", "{case}", "{candidate}"]', "Permission denied", "/etc"),
        ('["{rubric}", "{case}", "{candidate}"]', "Permission denied", "rubric.sh"),  # not executable
    ],
)  # fmt: skip
def test_a_program_that_cannot_start_is_an_error_per_case(
    bench: Bench,
    command: str,
    said: str,
    program: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Under bubblewrap: every case an error naming the program and why; nothing left behind.

    The run was confined: what failed is the command's program, not the sandbox.
    """
    scratch = tmp_path / "tmp"
    scratch.mkdir()
    monkeypatch.setenv("TMPDIR", str(scratch))
    bench.declare(command)
    try:
        outcomes = grade_errors(bench, "auto")
    finally:
        bench.declare(SHELL)
    assert set(outcomes) == {"bad", "good"}
    for status, reason in outcomes.values():
        assert status == "error"
        assert said in reason
        assert program in reason
        assert "cannot confine the run" not in reason
    assert list(scratch.iterdir()) == []


@pytest.mark.parametrize(
    ("source", "reason"),
    [
        ("printf '{\"passed\": true, \"reason\": \"x\"}\\n'\nexit 127\n", "the rubric exited with status 127 (0 is a pass, 1 a fail)"),
        ("printf '{\"passed\": true, \"reason\": \"x\"}\\n'\nkill -9 $$\n", "the rubric was killed by SIGKILL"),
    ],
)  # fmt: skip
def test_a_shell_rubric_that_says_passed_and_then_breaks_is_an_error(
    tmp_path: Path, source: str, reason: str
) -> None:
    bench = Bench(tmp_path, "rubric.sh", source, SHELL)
    assert grade_errors(bench, "none") == {"bad": ("error", reason), "good": ("error", reason)}


def test_placeholders_in_the_bench_s_own_path_are_not_expanded(
    tmp_path_factory: pytest.TempPathFactory,
) -> None:
    """A bench under `{case} x/{{candidate}} }{`: the rubric receives its paths as they are."""
    rubric = (
        'test "$1" = "--r=$0" || exit 3\n'
        'test -d "$2" && test -d "$3" || exit 4\n'
        'printf \'{"passed": true, "reason": "ok"}\\n\'\n'
    )
    base = tmp_path_factory.mktemp("braces") / "w {case} x" / "{{candidate}} }{"
    base.mkdir(parents=True)
    bench = Bench(
        base, "rubric.sh", rubric, '["sh", "{rubric}", "--r={rubric}", "{case}", "{candidate}"]'
    )
    done = bench.run(
        "grade", SLUG, "candidates", "--format", "json", "--sandbox", "auto", "--no-cache"
    )
    assert done.returncode == 0, done.stdout + done.stderr
    results = json.loads(done.stdout)["results"]
    assert {(r["case"], r["status"], r["reason"]) for r in results} == {
        ("bad", "passed", "ok"),
        ("good", "passed", "ok"),
    }


# -- one run, one key ------------------------------------------------------------------------


def test_the_default_written_out_is_the_key_of_no_command_and_any_change_is_another(
    bench: Bench,
) -> None:
    case = Case(task_class=SLUG, id="good", directory=bench.package / "cases" / "good")

    def key(command: RubricCommand | None) -> str | None:
        spec = RunSpec.of(
            bench.package / "rubric.sh",
            case,
            bench.base / "candidates" / "good",
            sandbox="none",
            command=command,
        )
        digested = replace(
            spec,
            task_class=TreeRef(spec.task_class.path, "0" * 64),
            case=TreeRef(spec.case.path, "1" * 64),
            candidate=TreeRef(spec.candidate.path, "2" * 64),
        )
        return digested.key()

    default = key(None)
    assert default is not None
    assert key(RubricCommand(DEFAULT_COMMAND)) == default
    changed = {
        key(RubricCommand(words))
        for words in (
            ("{python}", "{rubric}", "{case}", "{candidate}", "{candidate}"),
            ("{python}", "{rubric}", "{candidate}", "{case}"),
            ("{python}", "{rubric}", "{case}", "{candidate}", "{{"),
        )
    }
    assert default not in changed
    assert len(changed) == 3


def test_a_command_naming_the_candidate_twice_runs_as_written(tmp_path: Path) -> None:
    """Both words are the one copy: the rubric sees the same path twice."""
    rubric = (
        'test "$2" = "$3" || exit 3\n'
        'if [ -f "$2/answer.txt" ]; then printf \'{"passed": true, "reason": "twice"}\\n\'; exit 0; fi\n'
        'printf \'{"passed": false, "reason": "twice"}\\n\'; exit 1\n'
    )
    bench = Bench(
        tmp_path, "rubric.sh", rubric, '["sh", "{rubric}", "{case}", "{candidate}", "{candidate}"]'
    )
    done = bench.run(
        "grade", SLUG, "candidates", "--format", "json", "--sandbox", "none", "--no-cache"
    )
    results = {r["case"]: r["status"] for r in json.loads(done.stdout)["results"]}
    assert (done.returncode, results) == (1, {"bad": "failed", "good": "passed"})


def test_a_command_beside_an_environment_is_no_problem(tmp_path: Path) -> None:
    """Both keys together are documented (``{python}`` is then the environment's interpreter)."""
    bench = Bench(tmp_path, "rubric.sh", RUBRIC_SH, f'{SHELL}\nenvironment = "envs/sh.txt"')
    (tmp_path / "envs").mkdir()
    (tmp_path / "envs" / "sh.txt").write_text("", encoding="utf-8")
    done = bench.run("check")
    assert (done.returncode, done.stdout) == (0, ""), done.stderr


@pytest.mark.parametrize("sandbox", ["none", "auto"])
def test_a_python_rubric_s_words_reach_it_as_written_warm_or_not(
    tmp_path: Path, sandbox: str
) -> None:
    """``{python} {rubric}`` then any words in any order: a warm fork passes them as a plain run."""
    rubric = (
        "import json, sys\n"
        "words = ['/'.join(w.split('/')[-2:]) if '/' in w else w for w in sys.argv[1:]]\n"
        "print(json.dumps({'passed': True, 'reason': ' '.join(words)}))\n"
    )
    command = '["{python}", "{rubric}", "{candidate}", "--c={case}", "x y", "{{z}}"]'
    bench = Bench(tmp_path, "rubric.py", rubric, command)
    done = bench.run(
        "grade", SLUG, "candidates", "--format", "json", "--sandbox", sandbox, "--no-cache"
    )
    assert done.returncode == 0, done.stdout + done.stderr
    reasons = {r["case"]: r["reason"] for r in json.loads(done.stdout)["results"]}
    assert reasons == {
        "bad": "candidate/bad case/bad x y {z}",
        "good": "candidate/good case/good x y {z}",
    }
