"""Each command's options for its settings are made from the settings table, and only from it."""

from __future__ import annotations

import argparse
import dataclasses
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from codegenie.eval import _setting_table
from codegenie.eval._reports.formats import NAMES, formats_of
from codegenie.eval._sandbox.choices import CHOICES
from codegenie.eval._setting_table import SETTINGS, setting, settings_of
from codegenie.eval.cli._app import COMMANDS, _parser
from codegenie.eval.cli._base import positive_int
from codegenie.eval.cli._settings_args import add_setting_options

COMMANDS_WITH_SETTINGS = sorted({command for spec in SETTINGS for command in spec.commands})


def subparser(command: str) -> argparse.ArgumentParser:
    """Return ``command``'s parser, as the command line builds it."""
    parser = _parser()
    subparsers = next(
        action for action in parser._actions if isinstance(action, argparse._SubParsersAction)
    )
    sub: argparse.ArgumentParser = subparsers.choices[command]
    return sub


def option(parser: argparse.ArgumentParser, flag: str) -> argparse.Action:
    """Return ``parser``'s action for ``flag``."""
    return next(action for action in parser._actions if flag in action.option_strings)


def run(*args: str) -> subprocess.CompletedProcess[str]:
    """Run the installed console script, its help as wide as the widest line."""
    script = shutil.which("codegenie-bench", path=str(Path(sys.executable).parent))
    assert script is not None
    return subprocess.run(
        [script, *args],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
        env={"COLUMNS": "400", "PATH": "/usr/bin:/bin"},
    )


def test_the_commands_with_settings_are_check_and_grade() -> None:
    """The table names commands that exist (a misspelt one would get no option)."""
    assert COMMANDS_WITH_SETTINGS == ["check", "grade"]
    assert set(COMMANDS_WITH_SETTINGS) <= set(COMMANDS)


@pytest.mark.parametrize("command", list(COMMANDS))
def test_each_command_has_exactly_the_options_of_its_settings(command: str) -> None:
    """A command takes the option of each setting it uses, and of no other (but ``--format``)."""
    flags = {flag for action in subparser(command)._actions for flag in action.option_strings}
    own = {spec.flag for spec in SETTINGS if not spec.global_option}
    assert flags & own == {setting(name).flag for name in settings_of(command)} & own
    assert "--format" in flags  # every command's global option


@pytest.mark.parametrize("command", COMMANDS_WITH_SETTINGS)
def test_each_setting_option_is_what_the_table_declares(command: str) -> None:
    """Flag, words, metavar, how the value is read and the unset default: the table's."""
    parser = subparser(command)
    for name in settings_of(command):
        spec = setting(name)
        action = option(parser, spec.flag)
        if spec.reader == "format":
            assert action.choices == NAMES
            assert action.metavar == "{" + ",".join(formats_of(command)) + "}"
            assert action.default is argparse.SUPPRESS  # the top level's value stays
            continue
        assert action.default is None, name  # not given: the file's value, else the default
        if spec.reader == "executor":
            assert action.help is not None
            assert action.help.startswith(spec.help.split("{")[0]), name
            continue
        assert action.help == spec.help_of(command), name
        assert action.metavar == spec.metavar, name
        if spec.reader == "flag":
            assert isinstance(action, argparse._StoreTrueAction), name
        elif spec.reader == "sandbox":
            assert action.choices == CHOICES
        elif spec.reader == "positive_int":
            assert action.type is positive_int, name
        else:
            assert callable(action.type), name


def test_the_words_a_command_says_otherwise_are_the_tables(monkeypatch: pytest.MonkeyPatch) -> None:
    """Changing a setting's words in the table changes the option's words, for that command only."""
    jobs = setting("jobs")
    changed = dataclasses.replace(
        jobs, help_for=(*jobs.help_for, ("grade", "how many rubrics run at once"))
    )
    table = tuple(changed if spec is jobs else spec for spec in SETTINGS)
    monkeypatch.setattr(_setting_table, "SETTINGS", table)
    assert option(subparser("grade"), "--jobs").help == "how many rubrics run at once"
    assert option(subparser("check"), "--jobs").help == jobs.help_of("check")


def test_a_setting_the_table_gives_a_command_becomes_its_option(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A command the table adds to a setting must place its option: else its parser is not built."""
    timeout = setting("timeout")
    changed = dataclasses.replace(timeout, commands=(*timeout.commands, "grade"))
    table = tuple(changed if spec is timeout else spec for spec in SETTINGS)
    monkeypatch.setattr(_setting_table, "SETTINGS", table)
    with pytest.raises(ValueError, match="grade's options name the settings"):
        subparser("grade")


def test_a_layout_names_each_setting_of_the_command_once() -> None:
    """A missing, repeated or foreign setting in a command's layout is refused."""
    names = [name for name in settings_of("grade") if not setting(name).global_option]
    for layout in (names[:-1], [*names, names[0]], [*names, "timeout"]):
        with pytest.raises(ValueError, match="the table gives it"):
            add_setting_options(argparse.ArgumentParser(), "grade", layout)


def test_the_formats_a_command_does_not_write_are_in_the_tables_words() -> None:
    """``used_by`` of ``format`` names, for each command, the formats it does not write."""
    spec = setting("format")
    written = [name for name in NAMES if f'`"{name}"`' in spec.kind]
    parts = []
    for command in spec.commands:
        missing = [name for name in written if name not in formats_of(command)]
        not_written = " or ".join(f'`"{name}"`' for name in missing)
        parts.append(f"`{command}`" + (f" (not {not_written})" if missing else ""))
    assert spec.used_by == ", ".join(parts)


@pytest.mark.parametrize("command", COMMANDS_WITH_SETTINGS)
def test_the_help_says_the_tables_words(command: str) -> None:
    """``COMMAND --help`` (the installed script) says each setting's words of the table."""
    result = run(command, "--help")
    assert result.returncode == 0, result.stderr
    shown = " ".join(result.stdout.split())
    for name in settings_of(command):
        spec = setting(name)
        if spec.reader in {"format", "executor"}:
            continue  # their words are their registry's
        assert f"{spec.flag} " in shown, name
        assert " ".join(spec.help_of(command).split()) in shown, name


@pytest.mark.parametrize(
    ("args", "detail"),
    [
        (
            ("check", "--jobs", "0"),
            "argument --jobs: expected a whole number of at least 1, not '0'",
        ),
        (
            ("grade", "--jobs", "x"),
            "argument --jobs: expected a whole number of at least 1, not 'x'",
        ),
        (
            ("check", "--timeout", "0"),
            "argument --timeout: expected a number of seconds above 0 (or inf), not '0'",
        ),
        (
            ("grade", "--sandbox", "bogus"),
            "argument --sandbox: invalid choice: 'bogus' (choose from 'auto', 'bwrap', 'none')",
        ),
        (("check", "--select", "NOPE"), "argument --select: unknown check code 'NOPE'"),
        (("grade", "--timeout", "3"), "unrecognized arguments: --timeout"),
    ],
)
def test_a_setting_option_refuses_a_value_as_before(args: tuple[str, ...], detail: str) -> None:
    """A value the table's reader refuses is a usage error (exit 2), in argparse's words."""
    result = run(*args)
    assert result.returncode == 2
    assert f"codegenie-bench: error: {detail}\n" in result.stderr
