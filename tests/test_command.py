"""A rubric's command: its words, its placeholders, what a run starts, and when it can go warm."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from codegenie.eval._command import (
    DEFAULT_COMMAND,
    MAX_WORD_LENGTH,
    MAX_WORDS,
    PLACEHOLDERS,
    PROTOCOL_COMMAND,
    RubricCommand,
    command_problem,
)

PATHS = {"python": "/py/bin/python", "rubric": "/tc/rubric.py", "case": "/w/c", "candidate": "/w/d"}


def test_the_default_command_is_the_rubric_protocol_s() -> None:
    """``python -B RUBRIC CASE CANDIDATE``, exactly as runs were started before commands."""
    assert RubricCommand().words == DEFAULT_COMMAND == PROTOCOL_COMMAND.words
    assert RubricCommand().render(**PATHS) == [
        "/py/bin/python",
        "-B",
        "/tc/rubric.py",
        "/w/c",
        "/w/d",
    ]
    assert RubricCommand().python


def test_a_shell_command_renders_its_words_with_the_copies() -> None:
    command = RubricCommand(("sh", "{rubric}", "--case={case}", "{candidate}", "{{x}}", "{{case}}"))
    assert command.render(**PATHS) == [
        "sh",
        "/tc/rubric.py",
        "--case=/w/c",
        "/w/d",
        "{x}",
        "{case}",
    ]
    assert command.shown() == "sh {rubric} --case={case} {candidate} {{x}} {{case}}"


@pytest.mark.parametrize(
    ("words", "python"),
    [
        (("{python}", "{rubric}", "{case}", "{candidate}"), True),
        (("{python}", "{rubric}", "--strict", "{case}", "{candidate}"), True),
        (("sh", "{rubric}", "{case}", "{candidate}"), False),
        (("{python}", "-m", "pytest", "{case}", "{candidate}"), False),
        (("{python}", "{case}/check.py", "{case}", "{candidate}"), False),
        (("{rubric}", "{case}", "{candidate}"), False),
        (("python3", "{rubric}", "{case}", "{candidate}"), False),
    ],
)
def test_only_the_interpreter_on_the_rubric_is_a_python_rubric(
    words: tuple[str, ...], python: bool
) -> None:
    """A warm worker runs ``python RUBRIC ARGS`` and nothing else: every other command is plain."""
    assert RubricCommand(words).python is python


@pytest.mark.parametrize(
    ("words", "problem"),
    [
        ((), "is empty: a command needs at least the program to run"),
        (("sh", "", "{case}", "{candidate}"), "word 2 is empty"),
        (
            ("sh", "{rubrc}", "{case}", "{candidate}"),
            "has an unknown placeholder '{rubrc}' (known: {python}, {rubric}, {case}, "
            "{candidate}); did you mean '{rubric}'?",
        ),
        (
            ("sh", "{CASE_DIR}", "{candidate}"),
            "has an unknown placeholder '{CASE_DIR}' (known: {python}, {rubric}, {case}, "
            "{candidate})",
        ),
        (("sh", "{python}", "{case}", "{candidate}"), "may hold '{python}' only as its whole first word"),
        (("{python}x", "{case}", "{candidate}"), "may hold '{python}' only as its whole first word"),
        (("sh", "{rubric}", "{case}"), "does not name {candidate}: the rubric would not know where the run's copies are"),
        (("sh", "{rubric}"), "does not name {case} or {candidate}: the rubric would not know where the run's copies are"),
        (("sh", "{case", "{candidate}"), "word '{case' has an unmatched '{' (write '{{' for one)"),
        (("sh", "a}", "{case}", "{candidate}"), "word 'a}' has an unmatched '}' (write '}}' for one)"),
        (("sh", "a\nb", "{case}", "{candidate}"), "word 2 contains a control character (U+000A)"),
        (("sh", "{case}", "{candidate}", *["x"] * MAX_WORDS), f"has {MAX_WORDS + 3} words; at most {MAX_WORDS} are allowed"),
        (("sh", "x" * (MAX_WORD_LENGTH + 1), "{case}", "{candidate}"), f"word 2 is {MAX_WORD_LENGTH + 1} characters long; at most {MAX_WORD_LENGTH} are allowed"),
    ],
)  # fmt: skip
def test_a_command_that_cannot_run_says_why(words: tuple[str, ...], problem: str) -> None:
    assert command_problem(words) == problem
    with pytest.raises(ValueError, match="the command") as raised:
        RubricCommand(words)
    assert problem in str(raised.value)


literal = st.text(
    st.characters(
        codec="utf-8",
        exclude_categories=("Cc", "Cs"),
        # Braces, and the separators and bidirectional controls a command refuses.
        exclude_characters="{}\u2028\u2029\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069",
    ),
    min_size=1,
    max_size=12,
)
word = st.one_of(literal, st.sampled_from(["{rubric}", "{case}", "{candidate}"]))


@given(st.lists(word, max_size=6))
def test_every_placeholder_is_replaced_and_every_literal_kept(words: list[str]) -> None:
    """What a command renders is its words, each placeholder its value, nothing else changed."""
    command = RubricCommand(("run", *words, "{case}", "{candidate}"))
    values = {f"{{{name}}}": PATHS[name] for name in PLACEHOLDERS}
    assert command.render(**PATHS) == ["run", *(values.get(w, w) for w in words), "/w/c", "/w/d"]


def test_a_command_is_a_frozen_hashable_value() -> None:
    command = RubricCommand(("sh", "{rubric}", "{case}", "{candidate}"))
    assert command == RubricCommand(("sh", "{rubric}", "{case}", "{candidate}"))
    assert len({command, RubricCommand(("sh", "{rubric}", "{case}", "{candidate}"))}) == 1
    assert command != RubricCommand()
