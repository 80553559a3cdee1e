"""Bytes to a TOML document under the manifest's reading rules, every failure located.

The manifest's reading rules (``docs/security.md``), for any small TOML file the bench reads
(``case.toml``): no byte-order mark, valid UTF-8, within the bounds of
:mod:`codegenie.eval._toml.limits` (nesting, dotted keys, 64-bit integers)
before ``tomllib`` sees it, and ``tomllib``'s own syntax errors turned into
a line and column. Whatever the bytes, :func:`parse_toml` returns the
document or raises :class:`TomlUnreadable`; nothing else escapes.

The manifest model reads ``bench.toml`` through the same two steps, so one
kind of bad byte reads the same in ``bench.toml`` and in a ``case.toml``.
"""

from __future__ import annotations

import re
import tomllib
from typing import Any, Final, final

from codegenie.eval._toml.fast import parse_plain
from codegenie.eval._toml.limits import MAX_KEY_PARTS, MAX_NESTING, excess

__all__ = ("TomlUnreadable", "decode_toml", "load_toml", "parse_toml")

_TOML_POSITION: Final = re.compile(r"\s*\(at line (\d+), column (\d+)\)$")
_TOML_AT_END: Final = re.compile(r"\s*\(at end of document\)$")


@final
class TomlUnreadable(Exception):
    """The bytes are not a TOML document this library reads; ``line`` and ``column`` are 1-based."""

    def __init__(self, line: int, column: int, message: str) -> None:
        super().__init__(f"{line}:{column}: {message}")
        self.line = line
        self.column = column
        self.message = message


def _line_column(text: str, offset: int) -> tuple[int, int]:
    line_start = text.rfind("\n", 0, offset) + 1
    return text.count("\n", 0, offset) + 1, offset - line_start + 1


def _syntax_error(exc: tomllib.TOMLDecodeError, text: str) -> TomlUnreadable:
    message = str(exc)
    match = _TOML_POSITION.search(message)
    if match:
        line, column = int(match.group(1)), int(match.group(2))
        message = message[: match.start()]
    else:
        lines = text.split("\n")
        line, column = len(lines), len(lines[-1]) + 1
        message = _TOML_AT_END.sub("", message) + " at end of file"
    return TomlUnreadable(line, column, f"TOML syntax error: {message}")


# A run that could hold an integer beyond 64 bits (decimal, hexadecimal, octal, binary).
_LONG_RUN: Final = re.compile(r"[0-9A-Fa-f_]{17}")


def _may_exceed(text: str) -> bool:
    """Whether :func:`excess` could find anything: a cheap test on the raw text.

    ``excess`` looks at the text with strings and comments blanked out, which
    only removes brackets, dots and digits; so a text with at most
    ``MAX_NESTING`` openers, fewer than ``MAX_KEY_PARTS - 1`` dots and no run of
    17 digit-like characters has nothing for it to find. Most case files are
    like that, and skip its scan.
    """
    return (
        text.count("[") + text.count("{") > MAX_NESTING
        or text.count(".") >= MAX_KEY_PARTS - 1
        or _LONG_RUN.search(text) is not None
    )


def parse_toml(data: bytes) -> tuple[str, dict[str, Any]]:
    """Return ``(text, document)`` for ``data``: :func:`decode_toml`, then :func:`load_toml`.

    The caller bounds the size of ``data`` (it is read whole).
    """
    text = decode_toml(data)
    # The plain layout (most case files: strings, integers, booleans, one-line
    # arrays of strings) is read without tomllib, to the very dict tomllib
    # would return; nothing it accepts can go beyond load_toml's bounds.
    plain = parse_plain(text)
    return text, load_toml(text) if plain is None else plain


def decode_toml(data: bytes) -> str:
    """Return the text of ``data``; :class:`TomlUnreadable` for a byte-order mark or bad UTF-8."""
    if data.startswith(b"\xef\xbb\xbf"):
        raise TomlUnreadable(
            1, 1, "the file starts with a byte-order mark; save it as UTF-8 without BOM"
        )
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        before = data[: exc.start]
        line = before.count(b"\n") + 1
        column = len(before[before.rfind(b"\n") + 1 :].decode("utf-8", "replace")) + 1
        bad = data[exc.start : exc.end].hex(" ")
        raise TomlUnreadable(
            line, column, f"not valid UTF-8 (byte {bad}); save the file as UTF-8"
        ) from None


def load_toml(text: str) -> dict[str, Any]:
    """Return ``tomllib.loads(text)`` within the bounds of :mod:`~codegenie.eval._toml.limits`.

    Raises :class:`TomlUnreadable` with a line and column for nesting deeper
    than 32, a dotted key of more than 32 parts, an integer beyond 64 bits, or
    a TOML syntax error; nothing else escapes.
    """
    found = excess(text) if _may_exceed(text) else None
    if found is not None:
        offset, message = found
        raise TomlUnreadable(*_line_column(text, offset), message)
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise _syntax_error(exc, text) from None
    except (RecursionError, ValueError, OverflowError, MemoryError) as exc:
        # Beyond what excess() bounds: a last line of defence.
        raise TomlUnreadable(1, 1, f"the TOML reader gave up ({type(exc).__name__})") from None
