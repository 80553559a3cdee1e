"""JSON that a report may hold, read within bounds: finite numbers, bounded nesting and size.

Python's :mod:`json` reads ``NaN``, ``Infinity`` and ``-Infinity``, turns
``1e309`` into ``inf``, keeps the last of two equal keys, and recurses once
per level of nesting (a document nested a few thousand levels deep ends in
``RecursionError``). None of that is JSON a report may hold: RFC 8259 has no
non-finite number, and a writer of such a value writes invalid JSON again.
:func:`load_bounded` reads a text as JSON only when every number is finite
(as a float too: an integer beyond a float's range is refused, as ``1e309``
is), no object repeats a key, and the nesting, the keys of an object and the
number of values stay within :class:`Bounds`, checked by one pass over the
text *before* the parser builds anything. Otherwise it raises
:class:`JsonRefused`, whose ``pointer`` says where (a JSON path such as
``results[3].samples[0].score``; the top level is ``$``).
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass
from typing import Any, Final, final

__all__ = ("Bounds", "JsonRefused", "json_path", "load_bounded")


@final
@dataclass(frozen=True, slots=True)
class Bounds:
    """How deep a document may nest, how many keys one object may have, how many values in all."""

    depth: int
    keys: int
    values: int


@final
class JsonRefused(ValueError):
    """A text that is not JSON within the bounds: ``pointer`` (a JSON path), and what is wrong.

    ``pointer`` is ``None`` when the text is not JSON at all (its ``message``
    then gives the line and column, as :mod:`json` does).
    """

    def __init__(self, pointer: str | None, message: str) -> None:
        self.pointer = pointer
        self.message = message
        super().__init__(message if pointer is None else f"{pointer}: {message}")


def json_path(parts: tuple[str | int, ...]) -> str:
    """Return the path of a value in a document: ``$``, ``results[3].score``, ``files["a b"]``."""
    text = ""
    for part in parts:
        if isinstance(part, int):
            text += f"[{part}]"
        elif re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", part):
            text += f".{part}" if text else part
        else:
            text += f"[{json.dumps(part, ensure_ascii=True)}]"
    return text or "$"


# A string, its escapes included: what a bracket or a comma inside does not count in.
_STRING: Final = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"')
# Everything but the brackets.
_NOT_BRACKETS: Final = re.compile(r"[^\[\]{}]+")


def _scan(text: str, bounds: Bounds) -> None:
    """Refuse a text nested deeper than ``bounds.depth`` or holding more values than allowed.

    No recursion, and the text is walked by the regular expression engine:
    strings are blanked whole (a bracket or comma inside one does not count),
    commas counted, and only the brackets that are left are walked here. A
    text that is not JSON may pass: the parser says so.
    """
    bare = _STRING.sub('""', text)
    if bare.count(",") + 1 > bounds.values:
        msg = f"the document holds more than {bounds.values:,} values"
        raise JsonRefused(None, msg)
    depth = 0
    for mark in _NOT_BRACKETS.sub("", bare):
        if mark in "[{":
            depth += 1
            if depth > bounds.depth:
                msg = f"the document nests more than {bounds.depth} levels deep"
                raise JsonRefused(None, msg)
        else:
            depth -= 1


class _Number(float):
    """A number as the parser read it that is not finite: kept, to be named with its path."""

    __slots__ = ("text",)

    text: str

    def __new__(cls, text: str) -> _Number:
        number = super().__new__(cls, math.inf)
        number.text = text
        return number


class _Repeated(dict[str, Any]):
    """An object that repeats a key, or has too many: kept, to be named with its path."""

    __slots__ = ("problem",)

    problem: str


def _first_repeated(items: list[tuple[str, Any]]) -> str:
    seen: set[str] = set()
    for key, _ in items:
        if key in seen:
            return key
        seen.add(key)
    return ""  # pragma: no cover - called only when a key repeats


def load_bounded(text: str, bounds: Bounds) -> Any:
    """Return the JSON value ``text`` holds; raise :class:`JsonRefused` unless within ``bounds``.

    Refused: a text that is not JSON; nesting deeper than ``bounds.depth``
    (objects and arrays alike); more than ``bounds.values`` values; an
    object with more than ``bounds.keys`` keys or a key twice; ``NaN``,
    ``Infinity``, ``-Infinity`` and any number whose float is not finite
    (``1e309``, ``-1e309``, an integer of 400 digits). The first problem
    found, in document order of a walk that costs no recursion, is the one
    raised.
    """
    _scan(text, bounds)
    marked: list[bool] = []  # a value was marked: only then is the document walked

    def pairs(items: list[tuple[str, Any]]) -> dict[str, Any]:
        made: dict[str, Any] = dict(items)
        if len(made) == len(items) and len(items) <= bounds.keys:
            return made
        marked.append(True)
        kept = _Repeated(made)
        if len(items) > bounds.keys:
            kept.problem = f"the object has {len(items):,} keys, more than {bounds.keys:,}"
        else:
            kept.problem = f"the key {_first_repeated(items)!r} appears twice"
        return kept

    def number(text: str) -> float:
        value = float(text)
        if math.isfinite(value):
            return value
        marked.append(True)
        return _Number(text)

    def integer(text: str) -> int | float:
        value = int(text)
        if len(text) < 300:  # far below a float's 309 digits: no need to convert
            return value
        try:
            float(value)
        except OverflowError:
            marked.append(True)
            return _Number(text if len(text) <= 24 else f"{text[:12]}…({len(text)} digits)")
        return value

    def constant(text: str) -> float:
        marked.append(True)
        return _Number(text)

    try:
        value = json.loads(
            text,
            object_pairs_hook=pairs,
            parse_float=number,
            parse_int=integer,
            parse_constant=constant,
        )
    except json.JSONDecodeError as error:
        raise JsonRefused(None, f"not JSON: {error}") from None
    except ValueError as error:  # an integer of more digits than Python converts
        raise JsonRefused(None, f"not JSON this reads: {error}") from None
    except RecursionError:  # pragma: no cover - _scan bounds the depth below the parser's
        raise JsonRefused(None, "the document nests too deeply") from None
    if marked:
        _refuse_marked(value)
    return value


def _refuse_marked(value: Any) -> None:
    """Raise :class:`JsonRefused` at the first non-finite number or object the parser marked."""
    stack: list[tuple[Any, tuple[str | int, ...]]] = [(value, ())]
    while stack:
        node, where = stack.pop()
        if isinstance(node, _Number):
            msg = f"{node.text} is not a finite number; a report holds only finite numbers"
            raise JsonRefused(json_path(where), msg)
        if isinstance(node, _Repeated):
            raise JsonRefused(json_path(where), node.problem)
        if isinstance(node, dict):
            stack += [(item, (*where, key)) for key, item in reversed(node.items())]
        elif isinstance(node, list):
            stack += [(item, (*where, at)) for at, item in reversed(list(enumerate(node)))]
