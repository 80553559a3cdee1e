"""A fast reader for the plain layout of ``bench.toml``; ``tomllib`` reads everything else.

``tomllib`` is written in Python and dominates loading a large manifest
(about 150 ms for 13,000 entries). Nearly every manifest is written in one
plain layout — the one ``codegenie-bench new`` appends and the docs show:
comments, ``key = "string"`` or ``key = 123`` lines, and ``[a.b]`` table headers
with bare keys; the plain layout of a ``case.toml`` adds ``key = true`` (or
``false``) and one-line arrays of such strings (``tags = ["a", "b"]``).
:func:`parse_plain` reads exactly that layout, line by line, and returns
``None`` for anything else (escapes, multi-line values, other arrays, floats,
inline tables, dotted keys, a repeated key or table, a control character, an
integer beyond 64 bits, a table name of many parts…), so the caller falls
back to ``tomllib`` (after the bounds of :mod:`codegenie.eval._toml.limits`).
Whatever it accepts, it reads to the very dict ``tomllib`` would: the tests
check that on generated documents and on the toml-test suite.
"""

from __future__ import annotations

import re
from typing import Any, Final

from codegenie.eval._toml.limits import INT64_MAX, MAX_KEY_PARTS

__all__ = ("parse_plain",)

_BARE: Final = r"[A-Za-z0-9_-]+"
# A basic string without escapes: no quote, no backslash, no control
# character other than tab (DEL included).
_STRING: Final = r'"([^"\\\x00-\x08\x0a-\x1f\x7f]*)"'
_ITEM: Final = r'"[^"\\\x00-\x08\x0a-\x1f\x7f]*"'
# A one-line array of such strings; a trailing comma is allowed, as in TOML.
_ARRAY: Final = rf"\[[ \t]*(?:{_ITEM}[ \t]*(?:,[ \t]*{_ITEM}[ \t]*)*(?:,[ \t]*)?)?\]"
# At most 19 digits: the range of a TOML (64-bit) integer, and never near int()'s limit.
_INTEGER: Final = r"(0|[1-9][0-9]{0,18})"
# A comment may hold any character but the control characters TOML forbids.
_COMMENT: Final = r"(?:#[^\x00-\x08\x0a-\x1f\x7f]*)?"
_LINE: Final = re.compile(
    rf"[ \t]*(?:"
    rf"\[[ \t]*({_BARE}(?:[ \t]*\.[ \t]*{_BARE}){{0,{MAX_KEY_PARTS - 1}}})[ \t]*\]"  # 1: header
    rf"|({_BARE})[ \t]*=[ \t]*(?:{_STRING}|{_INTEGER}|({_ARRAY})|(true|false))"
    # 2: key, 3: string, 4: integer, 5: array of strings, 6: boolean
    rf")?[ \t]*{_COMMENT}"
)
_DOT: Final = re.compile(r"[ \t]*\.[ \t]*")
_ITEMS: Final = re.compile(_STRING)


def parse_plain(text: str) -> dict[str, Any] | None:
    """Return what ``tomllib.loads(text)`` returns, or ``None`` outside the plain layout."""
    if "\r" in text:
        if "\r" in text.replace("\r\n", ""):
            return None  # a bare carriage return: let tomllib report it
        text = text.replace("\r\n", "\n")
    document: dict[str, Any] = {}
    table = document
    headers: set[tuple[str, ...]] = set()  # tables defined by a header: not twice
    match = _LINE.fullmatch
    for line in text.split("\n"):
        found = match(line)
        if found is None:
            return None
        header, key, string, integer, array, boolean = found.groups()
        if header is not None:
            path = tuple(_DOT.split(header))
            if path in headers:
                return None
            headers.add(path)
            table = document
            for part in path:
                child = table.get(part)
                if child is None:
                    child = table[part] = {}
                elif not isinstance(child, dict):
                    return None
                table = child
        elif key is not None:
            if key in table:
                return None
            if string is not None:
                table[key] = string
            elif array is not None:
                table[key] = _ITEMS.findall(array)
            elif boolean is not None:
                table[key] = boolean == "true"
            else:
                value = int(integer)
                if value > INT64_MAX:
                    return None
                table[key] = value
    return document
