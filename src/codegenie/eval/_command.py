"""A rubric's command: the words a run starts, with placeholders for what only the run knows.

A task class's rubric runs as a command. By default it is the rubric
protocol's own, ``{python} {rubric} {case} {candidate}``: the task class's
interpreter (started with ``-B``, so that no ``__pycache__`` is written into
the bench) on its ``rubric.py``, with the case's and the candidate's copies.
A task class may declare another in its manifest entry (``command``), such
as ``["sh", "{rubric}", "{case}", "{candidate}"]`` for a shell rubric.

A word is literal text with placeholders in braces, each replaced when a
run starts (:meth:`RubricCommand.render`):

- ``{python}``: the run's interpreter, followed by ``-B``; only the whole
  first word;
- ``{rubric}``: the task class's rubric file (read-only in the run);
- ``{case}``, ``{candidate}``: the run's copies of the case directory and
  of the candidate, which every command must name (nothing else tells the
  rubric where they are);
- ``{{`` and ``}}``: a literal brace.

A command ``{python} {rubric} …`` is a Python rubric (:attr:`RubricCommand.python`):
it may be started by a warm worker's fork. Any other runs plainly, a fresh
process per run. Standard library only: the manifest validates a declared
command with :func:`command_problem`, and a run spec carries a
:class:`RubricCommand` to wherever it is made.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Final, final

__all__ = (
    "DEFAULT_COMMAND",
    "MAX_WORDS",
    "MAX_WORD_LENGTH",
    "PLACEHOLDERS",
    "PROTOCOL_COMMAND",
    "RubricCommand",
    "command_problem",
)

#: The placeholders a command's words may hold (in braces), in the order the docs list them.
PLACEHOLDERS: Final = ("python", "rubric", "case", "candidate")
#: The rubric protocol's command, what a task class that declares none runs.
DEFAULT_COMMAND: Final = ("{python}", "{rubric}", "{case}", "{candidate}")
#: The most words a command may have.
MAX_WORDS: Final = 64
#: The longest word of a command, in characters.
MAX_WORD_LENGTH: Final = 1024
#: What ``{python}`` is followed by: no bytecode is written into the read-only bench.
PYTHON_FLAGS: Final = ("-B",)

# A literal brace, a placeholder, or a brace left alone (refused).
_PART: Final = re.compile(r"\{\{|\}\}|\{([^{}]*)\}|[{}]")
# C0 controls, DEL, the C1 controls, the line and paragraph separators and the bidirectional
# embedding, override and isolate controls (what the command line escapes): never in an argv
# the docs could show, nor one that reads in another order than it runs.
_CONTROL: Final = re.compile(r"[\x00-\x1f\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069]")
_REQUIRED: Final = ("case", "candidate")


def _placeholders(word: str) -> tuple[list[str], str | None]:
    """Return the placeholders ``word`` names, and why it cannot be read (``None``: it can)."""
    names: list[str] = []
    for found in _PART.finditer(word):
        text = found.group()
        if text in {"{{", "}}"}:
            continue
        if text in {"{", "}"}:
            return names, f"word {word!r} has an unmatched {text!r} (write {text * 2!r} for one)"
        names.append(found.group(1))
    return names, None


def command_problem(words: Sequence[str]) -> str | None:
    """Return why ``words`` is no command a rubric can be run with; ``None`` when it is one.

    A command has 1 to :data:`MAX_WORDS` words, each a non-empty string of
    at most :data:`MAX_WORD_LENGTH` characters without control characters
    (C0, DEL, C1, U+2028/U+2029 and the bidirectional controls);
    its placeholders are among :data:`PLACEHOLDERS` (a close misspelling is
    named), ``{python}`` is only ever the whole first word, and ``{case}``
    and ``{candidate}`` each appear.
    """
    if not words:
        return "is empty: a command needs at least the program to run"
    if len(words) > MAX_WORDS:
        return f"has {len(words)} words; at most {MAX_WORDS} are allowed"
    seen: set[str] = set()
    for index, word in enumerate(words):
        if not word:
            return f"word {index + 1} is empty"
        if len(word) > MAX_WORD_LENGTH:
            return (
                f"word {index + 1} is {len(word)} characters long; "
                f"at most {MAX_WORD_LENGTH} are allowed"
            )
        control = _CONTROL.search(word)
        if control is not None:
            return f"word {index + 1} contains a control character (U+{ord(control.group()):04X})"
        names, problem = _placeholders(word)
        if problem is not None:
            return problem
        for name in names:
            if name not in PLACEHOLDERS:
                close = difflib.get_close_matches(name, PLACEHOLDERS, n=1, cutoff=0.6)
                meant = f"; did you mean '{{{close[0]}}}'?" if close else ""
                known = ", ".join(f"{{{each}}}" for each in PLACEHOLDERS)
                return f"has an unknown placeholder '{{{name}}}' (known: {known}){meant}"
            if name == "python" and (index != 0 or word != "{python}"):
                return "may hold '{python}' only as its whole first word"
            seen.add(name)
    missing = [f"{{{name}}}" for name in _REQUIRED if name not in seen]
    if missing:
        return (
            f"does not name {' or '.join(missing)}: the rubric would not know where "
            "the run's copies are"
        )
    return None


@final
@dataclass(frozen=True, slots=True)
class RubricCommand:
    """A rubric's command as declared: its ``words``, placeholders unreplaced.

    Equal commands are one run (the words are part of a run's key). Raises
    ``ValueError`` (:func:`command_problem`'s reason) for words that are no
    command.
    """

    words: tuple[str, ...] = DEFAULT_COMMAND

    def __post_init__(self) -> None:
        problem = command_problem(self.words)
        if problem is not None:
            msg = f"the command {list(self.words)!r} {problem}"
            raise ValueError(msg)

    @property
    def python(self) -> bool:
        """Whether this is a Python rubric, ``{python} {rubric} …``: one a warm fork can start."""
        return self.words[:2] == ("{python}", "{rubric}")

    def render(self, *, python: str, rubric: str, case: str, candidate: str) -> list[str]:
        """Return the argv of a run: each placeholder replaced by its value.

        ``python`` is the interpreter's executable (``{python}`` becomes it
        and ``-B``), ``rubric`` the rubric file, ``case`` and ``candidate``
        the run's copies.
        """
        values = {"rubric": rubric, "case": case, "candidate": candidate}
        argv: list[str] = []
        for word in self.words:
            if word == "{python}":
                argv += [python, *PYTHON_FLAGS]
            elif "{" not in word and "}" not in word:  # the common words, at a run's start
                argv.append(word)
            elif word[1:-1] in values and word[0] == "{" and word[-1] == "}":
                argv.append(values[word[1:-1]])
            else:
                argv.append(_PART.sub(lambda found: _replaced(found, values), word))
        return argv

    def shown(self) -> str:
        """Return the command as the docs write it: its words, space-separated."""
        return " ".join(self.words)


#: The rubric protocol's command, as a value: what a task class that declares none runs.
PROTOCOL_COMMAND: Final = RubricCommand()


def _replaced(found: re.Match[str], values: dict[str, str]) -> str:
    text = found.group()
    if text in {"{{", "}}"}:
        return text[0]
    return values[found.group(1)]
