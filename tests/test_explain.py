"""`codegenie-bench explain CODE`: each check code's reference, from the installed package."""

from __future__ import annotations

import ast
import json
import re
from pathlib import Path

import pytest

from codegenie.eval import _code_docs
from codegenie.eval.codes import CODES

from .test_cli import assert_shape, run

REPO = Path(__file__).resolve().parent.parent
SOURCE = REPO / "src" / "codegenie" / "eval"
#: What separates docs/check-codes.md's own introduction from the generated sections.
MARKER = "<!-- generated: codegenie-bench explain --all -->\n\n"


def test_every_code_has_its_reference() -> None:
    """The package documents exactly the codes check reports, each with its severity and output."""
    assert list(_code_docs.DOCS) == list(CODES)
    for code, doc in _code_docs.DOCS.items():
        first = doc.output.strip().splitlines()[0]
        assert f": {doc.severity}[{code}]: " in first, code
        assert doc.meaning.strip()
        assert doc.example.strip()
        assert doc.fix.strip()


@pytest.mark.parametrize("code", list(CODES))
def test_explain_prints_the_code_s_reference(tmp_path: Path, code: str) -> None:
    """`explain CODE` exits 0 and prints the code's meaning, example, output and fix on stdout."""
    result = run("explain", code, cwd=tmp_path)
    assert (result.returncode, result.stderr) == (0, "")
    assert result.stdout == _code_docs.markdown(code)
    assert result.stdout.startswith(f"# `{code}`\n\nSeverity: {CODES[code].severity}")
    assert "\nExample:" in result.stdout
    assert "\nFix: " in result.stdout


def test_explain_json_is_one_document(tmp_path: Path) -> None:
    """`explain CODE --format json` prints the documented shape, the one-line summary and hint included."""
    result = run("explain", "rubric-imported", "--format", "json", cwd=tmp_path)
    assert (result.returncode, result.stderr) == (0, "")
    document = json.loads(result.stdout)
    assert_shape(document, "explain")
    assert document["code"] == "rubric-imported"
    assert document["severity"] == "error"
    assert document["hint"] == CODES["rubric-imported"].hint
    assert "\n" not in document["meaning"]  # one line a paragraph: the reader wraps


def test_explain_all_lists_every_code(tmp_path: Path) -> None:
    """`explain --all` prints every code in order; as JSON, one document with every code."""
    text = run("explain", "--all", cwd=tmp_path)
    assert text.returncode == 0
    assert re.findall(r"^## `([a-z-]+)`$", text.stdout, re.MULTILINE) == list(CODES)
    document = json.loads(run("explain", "--all", "--format", "json", cwd=tmp_path).stdout)
    assert_shape(document, "explain")
    assert [entry["code"] for entry in document["codes"]] == list(CODES)


@pytest.mark.parametrize(
    ("typed", "said"),
    [
        ("rubric-imprted", "unknown check code 'rubric-imprted'; did you mean 'rubric-imported'?"),
        ("Module-Missing", "did you mean 'module-missing'?"),
        ("task-class-not-found", "it names an error of a command, not a check"),
        ("zzz", "`codegenie-bench explain --all` explains every code"),
    ],
)
def test_an_unknown_code_is_a_usage_error_with_a_suggestion(
    tmp_path: Path, typed: str, said: str
) -> None:
    """An unknown code exits 2 with the usage, what it may have meant on stderr, nothing on stdout."""
    result = run("explain", typed, cwd=tmp_path)
    assert result.returncode == 2
    assert result.stdout == ""
    assert result.stderr.startswith("usage: codegenie-bench explain")
    assert said in result.stderr


def test_explain_without_a_code_is_a_usage_error(tmp_path: Path) -> None:
    """`explain` alone exits 2: it needs a CODE or --all."""
    result = run("explain", cwd=tmp_path)
    assert result.returncode == 2
    assert "one of the arguments CODE --all is required" in result.stderr


def test_check_codes_doc_is_the_package_s_reference() -> None:
    """docs/check-codes.md's sections are `explain --all`, word for word.

    After changing a code's reference in codegenie/eval/_code_docs.py, run
    `codegenie-bench explain --all` and put its output below the marker line.
    """
    document = (REPO / "docs" / "check-codes.md").read_text(encoding="utf-8")
    assert MARKER in document
    assert document.split(MARKER, 1)[1] == _code_docs.reference()


# -- hints stand alone in a user's repository ---------------------------------------------

#: A path of this repository's documentation, or an ADR.
_DOCS_POINTER = re.compile(r"\bdocs/|\bADR\b|ADR-\d|\badr/|\b[\w-]+\.md\b")
#: The one docs/ path a user has: `init` writes the schema there, in their repository.
_USERS_OWN = ("docs/bench.schema.json",)


def _docstrings(tree: ast.AST) -> set[int]:
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
            first = node.body[0] if node.body else None
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant):
                found.add(id(first.value))
    return found


def _strings(path: Path) -> list[tuple[int, str]]:
    """Every string literal of ``path`` that is not a docstring (f-strings' literal parts too)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    docstrings = _docstrings(tree)
    found = []
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.Constant)
            and isinstance(node.value, str)
            and id(node) not in docstrings
        ):
            found.append((node.lineno, node.value))
    return found


@pytest.mark.parametrize(
    "path", sorted(SOURCE.rglob("*.py")), ids=lambda p: str(p.relative_to(SOURCE))
)
def test_no_message_or_hint_names_a_file_the_user_lacks(path: Path) -> None:
    """No string the package prints or writes names this repository's docs or an ADR.

    A user of the installed package, in their own repository, has neither:
    hints point at `codegenie-bench explain CODE` instead, or stand alone.
    """
    offending = []
    for line, text in _strings(path):
        without_users_own = text
        for own in _USERS_OWN:
            without_users_own = without_users_own.replace(own, "")
        if _DOCS_POINTER.search(without_users_own):
            offending.append(f"{path.name}:{line}: {text[:100]!r}")
    assert offending == []


def test_the_fence_sees_what_it_forbids(tmp_path: Path) -> None:
    """The scan flags a docs path or an ADR in a message, never in a docstring."""
    module = tmp_path / "module.py"
    module.write_text(
        '"""See docs/cli.md and ADR-0001."""\n'
        'HINT = "see docs/rubrics.md"\n'
        'OTHER = f"{1} (ADR-0001)"\n'
        'FINE = "codegenie-bench explain rubric-imported"\n'
    )
    assert [line for line, text in _strings(module) if _DOCS_POINTER.search(text)] == [2, 3]


def test_hints_that_point_at_explain_name_a_code() -> None:
    """Every `codegenie-bench explain X` a string of the package names is a code explain knows."""
    named = {
        match
        for path in SOURCE.rglob("*.py")
        for _, text in _strings(path)
        for match in re.findall(r"codegenie-bench explain ([a-z][a-z-]*)", text)
    }
    assert named
    assert named <= set(CODES)
