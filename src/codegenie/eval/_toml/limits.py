"""Bounds on a TOML document before ``tomllib`` reads it: nesting, dotted keys, integers.

``tomllib`` recurses once per nested array or inline table (a document
nested a few hundred deep raises ``RecursionError``), converts integers with
``int()`` (over 4,300 digits raises ``ValueError``), and walks every prefix
of a dotted key (quadratic: a 16 MiB key takes hours). A valid manifest needs
none of that: its values are strings and one small integer, nested at most
two deep (``task-classes = { slug = { … } }``), and its keys have at most
three parts. :func:`excess` finds the first place where a document goes
beyond bounds far above that, without parsing it, so that the caller reports
it at its line instead of handing the document to ``tomllib``.

The scan is lexical: strings and comments are blanked out (C-speed regular
expressions, linear in the size of the document), then brackets, dotted
chains and digit runs are looked for in what remains. On a document that is
not valid TOML it may find an excess where ``tomllib`` would have reported a
syntax error first; either way the document is refused with a line.
"""

from __future__ import annotations

import re
from typing import Final

__all__ = ("INT64_MAX", "INT64_MIN", "MAX_KEY_PARTS", "MAX_NESTING", "excess")

#: Arrays and inline tables open at once (a ``[table]`` header counts one, ``[[x]]`` two).
MAX_NESTING: Final = 32
#: Parts of one dotted key or table header.
MAX_KEY_PARTS: Final = 32
#: TOML integers are 64-bit (TOML 1.0, "Integer"); larger ones are refused.
INT64_MIN: Final = -(2**63)
INT64_MAX: Final = 2**63 - 1

# Every string and comment, each matched to its end or, unterminated, to the end
# of its line (or of the document), so that no start is tried twice: linear.
_STRINGS_AND_COMMENTS: Final = re.compile(
    r'"""(?:[^"\\]++|\\.|"{1,2}(?!"))*+(?:"{3,5}|\Z)'
    r"|'''(?:[^']++|'{1,2}(?!'))*+(?:'{3,5}|\Z)"
    r'|"(?:[^"\\\n]++|\\.)*+(?:"|$)'
    r"|'[^'\n]*+(?:'|$)"
    r"|#[^\n]*+",
    re.S | re.M,
)
_PLACEHOLDER: Final = '""'  # what a string or comment becomes: a quoted key part still counts
_NOT_BRACKET: Final = re.compile(r"[^\[\]{}]++")
_BRACKET: Final = re.compile(r"[\[\]{}]")
# MAX_NESTING + 1 openers with no closer between them: nesting beyond the bound, found at C speed.
_OPEN_RUN: Final = re.compile(r"[\[{](?:[^\[\]{}]*+[\[{]){" + str(MAX_NESTING) + "}")
_TO_SQUARE: Final = str.maketrans("{}", "[]")
_PART: Final = r'(?:[A-Za-z0-9_-]++|"")'
_LONG_KEY: Final = re.compile(
    rf'(?<![A-Za-z0-9_."-]){_PART}(?:[ \t]*+\.[ \t]*+{_PART}){{{MAX_KEY_PARTS}}}'
)
# A key cannot span lines: only a line with that many dots can hold one (a
# pattern that starts with a literal is scanned for at C speed).
_MANY_DOTS: Final = re.compile(rf"\.(?:[^.\n]*+\.){{{MAX_KEY_PARTS - 1}}}")
# Where a long integer may be: a run of digits (hexadecimal ones included).
_DIGIT_RUN: Final = re.compile(r"[0-9A-Fa-f_]{17,}+")
# A decimal, hexadecimal, octal or binary integer long enough to leave 64 bits
# (not a bare key made of digits: one followed by "=" or ".").
_LONG_INTEGER: Final = re.compile(
    r"(?<![\w.+:-])([+-]?)(?:"
    r"0x((?:_?+[0-9A-Fa-f]){17,}+)|0o((?:_?+[0-7]){22,}+)|0b((?:_?+[01]){64,}+)"
    r"|([0-9](?:_?+[0-9]){18,}+))(?![\w.:+-]|[ \t]*+=)"
)


def excess(text: str) -> tuple[int, str] | None:
    """Return ``(offset, message)`` of a place where ``text`` goes beyond the bounds, or None.

    The bounds: :data:`MAX_NESTING` arrays and inline tables open at once,
    :data:`MAX_KEY_PARTS` parts in a dotted key or table header, and integers
    within 64 bits. ``offset`` indexes ``text``.
    """
    bare = _STRINGS_AND_COMMENTS.sub(_PLACEHOLDER, text)
    found = [f for f in (_too_deep(bare), _too_long_key(bare), _too_large_integer(bare)) if f]
    if not found:
        return None
    offset, message = min(found)
    return _offset_in(text, offset), message


def _too_deep(bare: str) -> tuple[int, str] | None:
    message = f"arrays and inline tables are nested more than {MAX_NESTING} deep"
    run = _OPEN_RUN.search(bare)
    if run is not None:
        return run.end() - 1, message
    brackets = _NOT_BRACKET.sub("", bare)
    if brackets.count("[") + brackets.count("{") <= MAX_NESTING:
        return None  # cannot open more than that at once
    # Openers and closers interleaved ("[[][[][[]…"): each pass removes the
    # innermost pairs; what survives MAX_NESTING passes was nested deeper, or
    # is a run of unclosed brackets.
    reduced = brackets.translate(_TO_SQUARE)
    for _ in range(MAX_NESTING):
        shorter = reduced.replace("[]", "")
        if shorter == reduced:
            break
        reduced = shorter
    if "[]" not in reduced and reduced.count("[") <= MAX_NESTING:
        return None
    depth = 0
    for match in _BRACKET.finditer(bare):
        if match.group() in "[{":
            depth += 1
            if depth > MAX_NESTING:
                return match.start(), message
        elif depth:
            depth -= 1
    return None


def _too_long_key(bare: str) -> tuple[int, str] | None:
    position = 0
    while (dots := _MANY_DOTS.search(bare, position)) is not None:
        line_start = bare.rfind("\n", 0, dots.start()) + 1
        line_end = bare.find("\n", dots.end())
        line_end = len(bare) if line_end < 0 else line_end
        match = _LONG_KEY.search(bare, line_start, line_end)
        if match is not None:
            return match.start(), f"a dotted key or table name has more than {MAX_KEY_PARTS} parts"
        position = line_end
    return None


def _too_large_integer(bare: str) -> tuple[int, str] | None:
    for run in _DIGIT_RUN.finditer(bare):
        # The integer starts at most 3 characters before its digits ("-0x"), and
        # the window ends past anything its look-ahead needs to see.
        match = _LONG_INTEGER.search(bare, max(run.start() - 3, 0), run.end() + 256)
        if match is None or match.start() >= run.end():
            continue
        sign, hexadecimal, octal, binary, decimal = match.groups()
        prefix, base, digits = next(
            (prefix, base, digits)
            for prefix, base, digits in (
                ("0x", 16, hexadecimal),
                ("0o", 8, octal),
                ("0b", 2, binary),
                ("", 10, decimal),
            )
            if digits is not None
        )
        digits = digits.replace("_", "")
        significant = digits.lstrip("0") or "0"
        # int() refuses over 4,300 decimal digits; 20 are already beyond 64 bits.
        if len(significant) <= 20:
            value = int(sign + significant, base)
            if INT64_MIN <= value <= INT64_MAX:
                continue
        shown = digits if len(digits) <= 24 else f"{digits[:20]}…"
        return (
            match.start(),
            f"integer {sign}{prefix}{shown} ({len(digits)} digits) is out of range: "
            "TOML integers are 64-bit",
        )
    return None


def _offset_in(text: str, bare_offset: int) -> int:
    """Map an offset in the blanked-out text back to ``text``."""
    shift = 0
    width = len(_PLACEHOLDER)
    for match in _STRINGS_AND_COMMENTS.finditer(text):
        start = match.start() - shift  # where this string starts in the blanked text
        if start > bare_offset:
            break
        if bare_offset < start + width:
            return match.start()
        shift += match.end() - match.start() - width
    return bare_offset + shift
