"""Seams are interfaces: registered executors and sandbox providers, and one table of settings."""

from __future__ import annotations

import argparse
import ast
import dataclasses
import re
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

import pytest

from codegenie.eval import _exec
from codegenie.eval._sandbox import provider
from codegenie.eval._setting_table import SETTINGS
from codegenie.eval._settings import Options, SettingsFile
from codegenie.eval.cli._base import UsageError, add_executor_options, choose_executor
from codegenie.eval.executors import ExecutorKind, get_executor, register_executor
from codegenie.eval.rubrics import RubricResult
from codegenie.eval.sandboxes import Sandbox, choose_sandbox, named_sandbox, register_sandbox

REPO = Path(__file__).resolve().parent.parent
SOURCE = REPO / "src" / "codegenie" / "eval"


# -- one table of settings -------------------------------------------------------------


def test_the_options_and_the_file_model_are_the_settings_table() -> None:
    """Options' fields and defaults, and the file's keys, are the table's, in its order."""
    assert [(f.name, f.default) for f in dataclasses.fields(Options)] == [
        (spec.attribute, spec.default) for spec in SETTINGS
    ]
    assert list(SettingsFile.model_fields) == [spec.attribute for spec in SETTINGS]
    # The file writes the table's names (``ignore-exploits``), Python its attributes.
    assert [f.alias or name for name, f in SettingsFile.model_fields.items()] == [
        spec.name for spec in SETTINGS
    ]


def test_the_reference_settings_table_is_the_settings_table() -> None:
    """docs/cli.md's table of [tool.codegenie-bench] says what the table declares, row for row."""
    text = (REPO / "docs" / "cli.md").read_text(encoding="utf-8")
    header = "| key | type | option | default | used by |"
    start = text.index(header)
    rows = []
    for line in text[start:].splitlines()[2:]:
        if not line.startswith("|"):
            break
        rows.append(line)
    expected = [
        f"| `{s.name}` | {s.kind} | `{s.flag}` | {s.shown_default} | {s.used_by} |"
        for s in SETTINGS
    ]
    assert rows == expected


def test_grade_uses_the_settings_the_table_gives_it() -> None:
    """grade's settings are those the table marks as grade's."""
    from codegenie.eval.cli import cmd_grade

    assert cmd_grade.SETTINGS == ("jobs", "sandbox", "executor", "format")


# -- executors: registered kinds ---------------------------------------------------------


class _Inline:
    """An executor that makes every run as an error saying which executor it is (never runs)."""

    name = "inline"
    runs_here = True

    def __init__(self, label: str) -> None:
        self.label = label
        self.closed = False

    def run(
        self,
        runs: Sequence[object],
        *,
        jobs: int,
        sandbox: Sandbox,
        on_result: Callable[[int, RubricResult], None] | None = None,
    ) -> list[RubricResult]:
        del jobs, sandbox
        results = [
            RubricResult(case="c", status="error", reason=self.label, duration_s=0.0) for _ in runs
        ]
        for index, result in enumerate(results):
            if on_result is not None:
                on_result(index, result)
        return results

    def close(self) -> None:
        self.closed = True


def _inline_kind() -> ExecutorKind:
    def add(parser: argparse.ArgumentParser) -> None:
        parser.add_argument("--inline-label", default=None, metavar="LABEL")

    def read(args: argparse.Namespace) -> dict[str, object]:
        label = getattr(args, "inline_label", None)
        return {} if label is None else {"label": label}

    def make(options: Mapping[str, object]) -> _Inline:
        return _Inline(str(options.get("label", "inline")))

    return ExecutorKind(
        "inline",
        "runs nothing",
        make,
        add_arguments=add,
        options_from=read,
        flags=("--inline-label",),
    )


@pytest.fixture
def inline(monkeypatch: pytest.MonkeyPatch) -> ExecutorKind:
    """The registry with the inline executor registered too (for this test only)."""
    monkeypatch.setattr(_exec, "_KINDS", dict(_exec._KINDS))
    return register_executor(_inline_kind())


def test_a_registered_executor_is_an_executor_choice_with_its_own_options(
    inline: ExecutorKind,
) -> None:
    """Registering a kind adds it to --executor and its options to the command line."""
    parser = argparse.ArgumentParser()
    add_executor_options(parser)
    executor_action = next(a for a in parser._actions if "--executor" in a.option_strings)
    assert executor_action.choices == ("local", "ray", "inline")
    assert "inline (runs nothing)" in (executor_action.help or "")
    args = parser.parse_args(["--executor", "inline", "--inline-label", "here"])
    made = choose_executor(args.executor, args, "usage")
    assert isinstance(made, _Inline)
    assert made.label == "here"
    made_by_name = get_executor("inline", label="there")
    assert isinstance(made_by_name, _Inline)
    assert made_by_name.label == "there"


def test_another_executors_option_is_refused(inline: ExecutorKind) -> None:
    """An option of the inline executor given with the local one is a usage error naming it."""
    parser = argparse.ArgumentParser()
    add_executor_options(parser)
    args = parser.parse_args(["--inline-label", "x"])
    with pytest.raises(UsageError, match="--inline-label is for --executor inline"):
        choose_executor("local", args, "usage")


def test_an_executor_chosen_by_value_makes_the_runs(tmp_path: Path) -> None:
    """grade hands the runs to the executor it is given, whatever its name."""
    from codegenie.eval.cases import Case
    from codegenie.eval.grading import GradeOptions, grade

    from .factory import write_case

    rubric = tmp_path / "rubric.py"
    rubric.write_text("raise SystemExit(3)\n", encoding="utf-8")
    write_case(tmp_path / "cases", "a")
    (tmp_path / "candidates" / "a").mkdir(parents=True)
    case = Case(task_class="t", id="a", directory=tmp_path / "cases" / "a")
    executor = _Inline("made inline")
    report = grade(
        "t",
        rubric,
        [case],
        tmp_path / "candidates",
        GradeOptions(reuse=False),
        sandbox=named_sandbox("none"),
        executor=executor,
    )
    assert [(r.status, r.reason) for r in report.results] == [("error", "made inline")]


# -- sandbox providers: registered kinds -------------------------------------------------


@dataclasses.dataclass(frozen=True)
class _Plainer:
    name: str = "plainer"

    def choose(self, requested: str) -> Sandbox:
        del requested
        return Sandbox("none")

    def named(self, requested: str) -> Sandbox:
        return self.choose(requested)


def test_a_registered_sandbox_provider_is_chosen_by_its_word(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """choose_sandbox and named_sandbox ask the provider registered under the word."""
    monkeypatch.setattr(provider, "REGISTRY", dict(provider.REGISTRY))
    register_sandbox(_Plainer())
    assert choose_sandbox("plainer") == Sandbox("none")
    assert named_sandbox("plainer") == Sandbox("none")
    assert named_sandbox("auto") == Sandbox("bwrap")  # auto: the first registered
    with pytest.raises(ValueError, match="auto, bwrap, none, plainer"):
        choose_sandbox("other")


# -- no command tests a name -----------------------------------------------------------

_NAMES = {"local", "ray", "bwrap", "none"}
_OWNERS = ("_exec", "_sandbox")


def _name_tests(tree: ast.AST) -> list[int]:
    """The lines of ``x.name == "local"`` (or ``!=``, ``in``) comparisons with a seam's name."""
    lines = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Compare):
            continue
        operands = [node.left, *node.comparators]
        named = any(isinstance(o, ast.Attribute) and o.attr in {"name", "mode"} for o in operands)
        words = any(isinstance(o, ast.Constant) and o.value in _NAMES for o in operands)
        if named and words:
            lines.append(node.lineno)
    return lines


def test_the_scanner_sees_a_name_test() -> None:
    """The fence's scanner finds the comparisons it forbids."""
    source = 'if executor.name == "local": pass\nif "ray" != self.name: pass\nx = a.name == b\n'
    assert _name_tests(ast.parse(source)) == [1, 2]


@pytest.mark.parametrize(
    "path",
    sorted(p for p in SOURCE.rglob("*.py") if not set(p.relative_to(SOURCE).parts) & set(_OWNERS)),
    ids=lambda p: str(p.relative_to(SOURCE)),
)
def test_no_module_outside_the_seams_tests_an_executors_or_providers_name(path: Path) -> None:
    """Only an executor's or a provider's own modules compare its name to a word."""
    found = _name_tests(ast.parse(path.read_text(encoding="utf-8")))
    assert not found, f"{path.relative_to(SOURCE)}: lines {found}"


def test_the_sandbox_words_of_the_command_line_are_the_registered_providers() -> None:
    """--sandbox's cheap word list and the registry name the same providers, in order."""
    from codegenie.eval._sandbox.choices import PROVIDERS

    assert tuple(provider.REGISTRY) == PROVIDERS
    assert re.fullmatch(r"[a-z]+", "".join(PROVIDERS))
