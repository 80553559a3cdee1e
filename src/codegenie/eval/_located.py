"""Schema problems located in a TOML file: pydantic's errors in a curator's words.

``bench.toml`` and every ``case.toml`` are validated by pydantic models; this
module is the one place that turns pydantic's errors into problems a curator
can act on — a line and column, the key as TOML writes it
(``task-classes."a.b".module``), and a message that says what is wrong in
TOML's terms ("expected a string, got an integer", "unknown key 'modul'; did
you mean 'module'?"). A misspelt required key is one problem (the unknown
key, with the suggestion), not two.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any, Final, final

from codegenie.eval._toml.positions import KeyPath, Position

__all__ = ("LocatedProblem", "locate_errors", "render_key", "toml_type")

# What pydantic's type errors expected, in TOML's words.
_EXPECTED: Final = {
    "string_type": "a string",
    "int_type": "an integer",
    "float_type": "a number",
    "bool_type": "a boolean",
    "list_type": "an array",
    "tuple_type": "an array",
    "set_type": "an array",
    "dict_type": "a table",
    "model_type": "a table",
    "model_attributes_type": "a table",
    "date_type": "a date",
    "datetime_type": "a date-time",
    "time_type": "a time",
}
# bool before int: True is an int to isinstance, not to TOML.
_TOML_TYPES: Final = (
    (bool, "a boolean"),
    (str, "a string"),
    (int, "an integer"),
    (float, "a float"),
    (dict, "a table"),
    (list, "an array"),
)
_CONTROL: Final = re.compile(r"[\x00-\x1f\x7f-\x9f]")
_KEY_ESCAPES: Final = {"\b": "\\b", "\t": "\\t", "\n": "\\n", "\f": "\\f", "\r": "\\r"}
_BARE_KEY: Final = re.compile(r"[A-Za-z0-9_-]+")
#: Pydantic's prefixes of a validator's own message, which the curator need not read.
_VALIDATOR_PREFIXES: Final = ("Value error, ", "Assertion failed, ")


def toml_type(value: object) -> str:
    """Name the TOML type of a parsed ``value``, such as "a string" or "an array"."""
    for kind, name in _TOML_TYPES:
        if isinstance(value, kind):
            return name
    return "a date or time" if value is not None else "nothing"


def _escape_control(match: re.Match[str]) -> str:
    char = match.group()
    return _KEY_ESCAPES.get(char) or f"\\u{ord(char):04X}"


def render_key(path: KeyPath) -> str:
    r"""Render a key path the way TOML writes it: ``task-classes."foo.bar".module``.

    A quoted part escapes ``\``, ``"`` and every control character as TOML
    does (``"a\nb"``), so a rendered key is always one line of plain text.
    """
    rendered = []
    for part in path:
        text = str(part)
        if isinstance(part, int):
            rendered.append(f"[{text}]")
        elif _BARE_KEY.fullmatch(text):
            rendered.append(text)
        else:
            quoted = text.replace("\\", "\\\\").replace('"', '\\"')
            rendered.append('"' + _CONTROL.sub(_escape_control, quoted) + '"')
    return ".".join(rendered).replace(".[", "[")


@final
@dataclass(frozen=True, slots=True)
class LocatedProblem:
    """One schema problem: where it is written, the key as TOML writes it, and what is wrong.

    ``loc`` is the key path the problem belongs to (for a missing key, the
    table that misses it plus the key's name).
    """

    line: int
    column: int
    key: str
    message: str
    loc: KeyPath


def _close_key(loc: KeyPath, known_keys: Callable[[KeyPath], Sequence[str]]) -> str | None:
    """Return the known key that the unknown key at ``loc`` is a misspelling of, if any."""
    close = difflib.get_close_matches(str(loc[-1]), known_keys(loc), n=1, cutoff=0.6)
    return close[0] if close else None


def _misspelt(
    errors: Sequence[Any], known_keys: Callable[[KeyPath], Sequence[str]]
) -> set[KeyPath]:
    """Return the locations of missing keys that an unknown key of their table misspells."""
    misspelt: set[KeyPath] = set()
    for error in errors:
        loc: KeyPath = tuple(error["loc"])
        if error["type"] == "extra_forbidden" and loc:
            close = _close_key(loc, known_keys)
            if close is not None:
                misspelt.add((*loc[:-1], close))
    return misspelt


def _message(
    error: Any, loc: KeyPath, known_keys: Callable[[KeyPath], Sequence[str]], *, list_known: bool
) -> str:
    kind: str = error["type"]
    message: str = error["msg"]
    if kind == "extra_forbidden" and loc:
        message = f"unknown key {str(loc[-1])!r}"
        close = _close_key(loc, known_keys)
        if close is not None:
            return f"{message}; did you mean {close!r}?"
        known = known_keys(loc) if list_known else ()
        if known:
            message += f" (expected {', '.join(repr(k) for k in known)})"
        return message
    if kind in _EXPECTED:
        return f"expected {_EXPECTED[kind]}, got {toml_type(error.get('input'))}"
    if message.startswith(_VALIDATOR_PREFIXES):
        return message.split(", ", 1)[1]
    if message.startswith("Input should be "):
        return "must be " + message.removeprefix("Input should be ")
    return message


def locate_errors(
    errors: Iterable[Any],
    find: Callable[[KeyPath], Position],
    known_keys: Callable[[KeyPath], Sequence[str]],
    *,
    list_known: bool = True,
    find_value: Callable[[KeyPath], Position] | None = None,
) -> list[LocatedProblem]:
    """Locate pydantic ``errors`` (``ValidationError.errors()``, ``loc`` as TOML keys).

    ``find`` says where a key (or its nearest parent) is written, and
    ``find_value`` where the value of a key starts (default: ``find``): a
    problem with a key — unknown, missing, a table name that breaks a rule —
    is at the key, a problem with a value — its type, its range, a
    validator's verdict — at the value (``timeout = 0`` at the ``0``).
    ``known_keys(loc)`` lists the keys the table holding ``loc[-1]`` may
    have, for "did you mean" (and, with ``list_known``, listed after an
    unknown key that is close to none of them). An error may carry a ``suffix``,
    put after its message as worded here (``; did you mean python = "3.12"?``
    after "expected a string, got a float"). Returns one problem per error in the order
    given, leaving out a missing key that an unknown key of the same table
    misspells (that unknown key says "did you mean" instead).
    """
    at_value = find_value or find
    errors = list(errors)
    misspelt = _misspelt(errors, known_keys)
    problems = []
    for error in errors:
        kind: str = error["type"]
        loc: KeyPath = tuple(error["loc"])
        locate = at_value
        if len(loc) > 1 and loc[-1] == "[key]" and kind not in {"extra_forbidden", "missing"}:
            loc = loc[:-1]  # pydantic's marker for a bad key: the key's own table
            locate = find  # the key (a table's name) is what is wrong, not its value
        if kind == "missing" and loc:
            if loc in misspelt:
                continue
            parent = loc[:-1]
            where = find(parent) if parent else (1, 1)
            message = f"missing required key {str(loc[-1])!r}"
            problems.append(LocatedProblem(*where, render_key(parent), message, loc))
            continue
        message = _message(error, loc, known_keys, list_known=list_known) + error.get("suffix", "")
        if kind == "extra_forbidden":
            locate = find
        problems.append(LocatedProblem(*locate(loc), render_key(loc), message, loc))
    return problems
