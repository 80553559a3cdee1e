"""The table of report formats: the one place a format is declared, read by everything else."""

from __future__ import annotations

import ast
import importlib
import subprocess
import sys
from pathlib import Path

import pytest
from pydantic import ValidationError

from codegenie.eval._reports.formats import (
    FORMATS,
    NAMES,
    commands_writing,
    format_help,
    formats_of,
    renderer_path,
)
from codegenie.eval._settings import SettingsFile
from codegenie.eval.cli._app import _parser

REPO = Path(__file__).resolve().parent.parent
CLI = REPO / "src" / "codegenie" / "eval" / "cli"


@pytest.mark.parametrize("name", NAMES)
def test_every_renderer_of_the_table_is_a_function_of_its_module(name: str) -> None:
    for kind, path in FORMATS[name].renderers.items():
        module, _, function = path.partition(":")
        assert callable(getattr(importlib.import_module(module), function)), (name, kind)


def test_the_command_line_and_the_settings_take_the_names_of_the_table() -> None:
    format_actions = [a for a in _parser()._actions if "--format" in a.option_strings]
    assert [tuple(a.choices or ()) for a in format_actions] == [NAMES]
    assert format_actions[0].help == format_help()
    for name in NAMES:
        assert SettingsFile(format=name).format == name
    with pytest.raises(ValidationError):
        SettingsFile(format="xml")


def test_which_command_writes_which_format_is_read_from_the_renderers() -> None:
    assert commands_writing("text") is None
    assert commands_writing("json") is None
    assert commands_writing("github") == ("check", "grade", "merge")
    assert commands_writing("junit") == ("check", "grade", "merge")
    assert commands_writing("sarif") == ("check", "merge")
    assert commands_writing("html") == ("check", "grade", "merge", "compare")
    assert formats_of("grade") == ("text", "json", "github", "junit", "html")
    assert formats_of("list") == ("text", "json")
    assert renderer_path("sarif", "grade") is None
    assert commands_writing("markdown") == ("compare",)
    assert formats_of("compare") == ("text", "json", "markdown", "html")
    assert formats_of("merge") == ("text", "json", "github", "junit", "sarif", "html")


def test_each_command_s_help_offers_only_the_formats_it_writes() -> None:
    """``grade --help`` does not offer markdown (compare's alone), nor compare's github."""
    assert "markdown" not in format_help("grade")
    assert "sarif" not in format_help("grade")
    assert format_help("compare") == (
        "output format (default: text; json: JSON; markdown: Markdown; html: HTML page)"
    )
    assert "markdown: Markdown, compare" in format_help()


def test_help_imports_no_renderer() -> None:
    """The format names are read at start-up; a renderer's module only when it renders."""
    done = subprocess.run(
        [sys.executable, "-X", "importtime", "-m", "codegenie.eval", "--help"],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    imported = {line.split("|")[-1].strip() for line in done.stderr.splitlines() if "|" in line}
    assert "codegenie.eval._reports.formats" in imported
    renderers = {path.partition(":")[0] for f in FORMATS.values() for path in f.renderers.values()}
    assert not renderers & imported


@pytest.mark.parametrize("path", sorted(CLI.glob("cmd_*.py")), ids=lambda p: p.name)
def test_no_command_module_imports_another(path: Path) -> None:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    imported = {
        node.module or "" for node in ast.walk(tree) if isinstance(node, ast.ImportFrom)
    } | {
        alias.name
        for node in ast.walk(tree)
        if isinstance(node, ast.Import)
        for alias in node.names
    }
    assert not {name for name in imported if name.startswith("codegenie.eval.cli.cmd_")}
