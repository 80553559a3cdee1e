"""An entry's `command` (its rubric's words and placeholders): the model, its errors, the cache."""

from __future__ import annotations

from pathlib import Path

import pytest

from codegenie.eval._cache.served import ServedManifest
from codegenie.eval._command import RubricCommand
from codegenie.eval._manifest.model import BenchManifest, ManifestEntry
from codegenie.eval._toml.positions import entry_positions
from codegenie.eval.errors import BenchManifestInvalid
from codegenie.eval.manifest import clear_manifest_cache, load_manifest_cached

HEAD = (
    "schema-version = 1\n\n[task-classes.sh-task]\n"
    'module = "bench.sh_task.registration"\nroot = "bench"\n'
)
SHELL = '["sh", "{rubric}", "{case}", "{candidate}"]'


def manifest(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "bench.toml"
    path.write_text(text, encoding="utf-8")
    return path


def problems(path: Path) -> list[tuple[str, int, int, str, str]]:
    """Return (file, line, column, key, message) of each problem of the manifest at ``path``."""
    with pytest.raises(BenchManifestInvalid) as raised:
        BenchManifest.load(path)
    assert raised.value.path == path
    return [(str(path), p.line, p.column, p.key, p.message) for p in raised.value.problems]


def test_an_entry_without_a_command_runs_the_rubric_protocol_s() -> None:
    entry = ManifestEntry.model_validate({"module": "bench.a.registration", "root": "bench"})
    assert entry.command is None
    assert "command" not in entry.model_fields_set
    assert entry.rubric_command == RubricCommand()


def test_a_declared_command_is_read_as_its_words(tmp_path: Path) -> None:
    path = manifest(tmp_path, HEAD + f"command = {SHELL}\n")
    entry = BenchManifest.load(path).entry("sh-task")
    assert entry.command == ("sh", "{rubric}", "{case}", "{candidate}")
    assert entry.rubric_command == RubricCommand(("sh", "{rubric}", "{case}", "{candidate}"))
    assert not entry.rubric_command.python


@pytest.mark.parametrize(
    ("value", "column", "key", "message"),
    [
        ("[]", 11, "command", "command is empty: a command needs at least the program to run"),
        (
            '["sh", "{rubric}", "{cse}", "{candidate}"]',
            11,
            "command",
            "command has an unknown placeholder '{cse}' (known: {python}, {rubric}, {case}, "
            "{candidate}); did you mean '{case}'?",
        ),
        (
            '["sh", "{rubric}", "{case}"]',
            11,
            "command",
            "command does not name {candidate}: the rubric would not know where the run's "
            "copies are",
        ),
        ('"sh {rubric} {case} {candidate}"', 11, "command", "expected an array, got a string"),
        ('["sh", 1, "{case}", "{candidate}"]', 18, "command[1]", "expected a string, got an integer"),
    ],
)  # fmt: skip
def test_a_command_that_cannot_run_is_a_manifest_problem_at_its_value(
    tmp_path: Path, value: str, column: int, key: str, message: str
) -> None:
    """Refused when the manifest is read, before anything runs: file, line, slug and why."""
    path = manifest(tmp_path, HEAD + f"command = {value}\n")
    assert problems(path) == [(str(path), 6, column, f"task-classes.sh-task.{key}", message)]


def test_a_misspelt_command_key_suggests_it(tmp_path: Path) -> None:
    path = manifest(tmp_path, HEAD + f"comand = {SHELL}\n")
    [(_, line, _, key, message)] = problems(path)
    assert (line, key) == (6, "task-classes.sh-task.comand")
    assert "did you mean 'command'?" in message


def test_a_manifest_with_a_command_is_served_from_the_cache_whole(tmp_path: Path) -> None:
    """The cache keeps the words: the second read is served, equal to the validated manifest."""
    words = '["sh", "{rubric}", "--x=é {{y}}\\\\", "{case}", "{candidate}"]'
    text = HEAD + f"command = {words}\n"
    text += '\n[task-classes.bb]\nmodule = "bench.bb.registration"\nroot = "bench"\n'
    path = manifest(tmp_path, text)
    for attempt in range(2):
        clear_manifest_cache()  # as a fresh process: the user's cache is all that is left
        loaded = load_manifest_cached(str(path))
        assert isinstance(loaded, ServedManifest) == (attempt == 1)
        assert loaded.entry("sh-task").command == (
            "sh",
            "{rubric}",
            "--x=é {{y}}\\",
            "{case}",
            "{candidate}",
        )
        assert loaded.entry("bb").command is None
        assert loaded == BenchManifest.load(path)
        assert loaded.position("task-classes", "sh-task", "command") == (6, 1)


@pytest.mark.parametrize("layout", ["one line", "several lines"])
def test_the_command_s_position_is_found_in_either_layout(tmp_path: Path, layout: str) -> None:
    """The plain reader and the full one agree on where ``command`` is written."""
    value = SHELL if layout == "one line" else SHELL.replace(", ", ",\n  ")
    text = HEAD + f"command = {value}\n"
    path = manifest(tmp_path, text)
    BenchManifest.load(path)
    _, _, _, optional = entry_positions(text, ["sh-task"])
    assert optional == [{"command": (6, 1)}]
