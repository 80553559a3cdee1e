"""Where each key of a TOML document is written: key path → (line, column).

``tomllib`` returns values without positions. This scanner reads a document
that ``tomllib`` has already accepted and records the position of every table
header and key, so a schema problem at ``task-classes.foo.module`` can be
reported as ``bench.toml:7:1``. It relies on the input being valid TOML (and
within the bounds of :mod:`codegenie.eval._toml.limits`) and does no error reporting of its
own; it is only run when a position is needed. Its loops are regular
expressions, so a 16 MiB document is scanned in well under a second.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Final

__all__ = (
    "OPTIONAL_ENTRY_KEYS",
    "EntryPositions",
    "KeyPath",
    "Position",
    "TomlPositions",
    "entry_positions",
    "line_text",
    "value_position",
)

KeyPath = tuple[str | int, ...]
Position = tuple[int, int]
#: ``(header_line, header_column, module_line, module_column, root_line, root_column)``
EntryPositions = tuple[int, int, int, int, int, int]

_BARE_KEY: Final = re.compile(r"[A-Za-z0-9_-]+")
_INLINE_WS: Final = re.compile(r"[ \t]*")
_TRIVIA: Final = re.compile(r"(?:[ \t\r\n]++|#[^\n]*+)*+")
_STRINGS: Final = {
    '"""': re.compile(r'"""(?:[^"\\]++|\\.|"{1,2}(?!"))*+"{3,5}', re.S),
    "'''": re.compile(r"'''(?:[^']++|'{1,2}(?!'))*+'{3,5}", re.S),
    '"': re.compile(r'"(?:[^"\\\n]++|\\.)*+"'),
    "'": re.compile(r"'[^'\n]*+'"),
}
_SCALAR_END: Final = re.compile(r"[,\]\}#\r\n]")
_ESCAPE: Final = re.compile(r"\\(u[0-9A-Fa-f]{4}|U[0-9A-Fa-f]{8}|.)", re.S)
_SIMPLE_ESCAPES: Final = {
    "b": "\b",
    "t": "\t",
    "n": "\n",
    "f": "\f",
    "r": "\r",
    '"': '"',
    "\\": "\\",
}


def _unescape(body: str) -> str:
    def replace(match: re.Match[str]) -> str:
        token = match.group(1)
        if token[0] in "uU":
            return chr(int(token[1:], 16))
        return _SIMPLE_ESCAPES.get(token, token)

    return _ESCAPE.sub(replace, body)


class TomlPositions:
    """Positions of the keys, values and table headers of one valid TOML document.

    ``find(path)`` returns the 1-based ``(line, column)`` of the key or table
    at ``path``, or of its nearest written ancestor, or ``(1, 1)``: where a
    problem *with the key* is (unknown, missing from its table).
    ``find_value(path)`` returns where the value of the key at ``path``
    starts, or ``find(path)`` when ``path`` is not a key with a value (a
    table header): where a problem *with the value* is (``root = "bnch"``
    at the ``"``). The document is scanned lazily, only as far as the keys
    asked for (a problem near the top of a huge file costs a few lines, not
    the file). Nothing here raises: should the scanner misread a document,
    the keys after that point resolve to their nearest recorded ancestor.
    """

    def __init__(self, text: str) -> None:
        self._text = text
        self._line = 1  # the line of offset _counted_to
        self._counted_to = 0
        self._positions: dict[KeyPath, Position] = {}
        self._values: dict[KeyPath, Position] = {}
        self._aot_counts: dict[KeyPath, int] = {}
        self._offset = 0  # where the scan goes on
        self._table: KeyPath = ()  # the table that the scan is in
        self._done = False

    def find(self, path: KeyPath) -> Position:
        """Return where ``path`` (or its longest written prefix) is written."""
        self._scan_to(path)
        for end in range(len(path), 0, -1):
            position = self._positions.get(path[:end])
            if position is not None:
                return position
        return (1, 1)

    def exact(self, path: KeyPath) -> Position | None:
        """Return where ``path`` itself is written, or ``None``."""
        self._scan_to(path)
        return self._positions.get(path)

    def find_value(self, path: KeyPath) -> Position:
        """Return where the value of the key at ``path`` starts, else :meth:`find`'s answer."""
        self._scan_to(path)
        value = self._values.get(path)
        return value if value is not None else self.find(path)

    # -- scanning ---------------------------------------------------------

    def _scan_to(self, path: KeyPath) -> None:
        try:
            while not self._done and path not in self._positions:
                self._step()
        except (IndexError, ValueError, RecursionError):
            self._done = True  # a position is a courtesy: the problem is reported without one

    def _position(self, offset: int) -> Position:
        # The scan asks in increasing order: count the newlines since the last answer.
        if offset < self._counted_to:
            self._counted_to, self._line = 0, 1
        self._line += self._text.count("\n", self._counted_to, offset)
        self._counted_to = offset
        return (self._line, offset - self._text.rfind("\n", 0, offset))

    def _record(self, path: KeyPath, offset: int) -> None:
        if path not in self._positions:
            self._positions[path] = self._position(offset)

    def _skip_ws(self, i: int) -> int:
        match = _INLINE_WS.match(self._text, i)
        return match.end() if match else i

    def _skip_trivia(self, i: int) -> int:
        """Skip white space, newlines and comments (inside arrays)."""
        match = _TRIVIA.match(self._text, i)
        return match.end() if match else i

    def _step(self) -> None:
        """Scan one statement: a table header or a key/value pair."""
        text = self._text
        i = self._skip_trivia(self._offset)
        if i >= len(text):
            self._done = True
            return
        if text.startswith("[[", i):
            start = i
            key, i = self._key(i + 2)
            i = self._skip_ws(i) + 2
            index = self._aot_counts.get(key, 0)
            self._aot_counts[key] = index + 1
            for end in range(1, len(key) + 1):
                self._record(key[:end], start)
            self._table = (*key, index)
            self._record(self._table, start)
        elif text[i] == "[":
            start = i
            key, i = self._key(i + 1)
            i = self._skip_ws(i) + 1
            self._table = key
            for end in range(1, len(key) + 1):
                self._record(key[:end], start)
        else:
            i = self._key_value(i, self._table)
        end = text.find("\n", i)
        self._offset = len(text) if end < 0 else end + 1

    def _key(self, i: int) -> tuple[KeyPath, int]:
        text = self._text
        parts: list[str | int] = []
        while True:
            i = self._skip_ws(i)
            char = text[i]
            if char in "\"'":
                end = self._string(i)
                body = text[i + 1 : end - 1]
                parts.append(_unescape(body) if char == '"' else body)
                i = end
            else:
                match = _BARE_KEY.match(text, i)
                if match is None:
                    raise ValueError("not a key: the document is not valid TOML")
                parts.append(match.group())
                i = match.end()
            i = self._skip_ws(i)
            if i < len(text) and text[i] == ".":
                i += 1
                continue
            return tuple(parts), i

    def _key_value(self, i: int, table: KeyPath) -> int:
        start = i
        key, i = self._key(i)
        for end in range(1, len(key) + 1):
            self._record((*table, *key[:end]), start)
        i = self._skip_ws(i) + 1  # the '='
        i = self._skip_ws(i)
        return self._value(i, (*table, *key))

    def _value(self, i: int, path: KeyPath) -> int:
        text = self._text
        if path not in self._values:
            self._values[path] = self._position(i)
        char = text[i]
        if char in "\"'":
            return self._string(i)
        if char == "[":
            index = 0
            i += 1
            while True:
                i = self._skip_trivia(i)
                if text[i] == "]":
                    return i + 1
                self._record((*path, index), i)
                i = self._value(i, (*path, index))
                index += 1
                i = self._skip_trivia(i)
                if text[i] == ",":
                    i += 1
        if char == "{":
            i = self._skip_ws(i + 1)
            while text[i] != "}":
                i = self._key_value(i, path)
                i = self._skip_ws(i)
                if text[i] == ",":
                    i = self._skip_ws(i + 1)
            return i + 1
        match = _SCALAR_END.search(text, i)
        return match.start() if match else len(text)

    def _string(self, i: int) -> int:
        """Return the offset just past the string that starts at ``i``."""
        text = self._text
        opening = text[i : i + 3]
        pattern = _STRINGS.get(opening) or _STRINGS[text[i]]
        match = pattern.match(text, i)
        if match is None:
            raise ValueError("unterminated string: the document is not valid TOML")
        return match.end()


def line_text(document: str | bytes, number: int) -> str | None:
    """Return line ``number`` (1-based) of ``document`` as text, ``None`` past its end.

    Bytes are decoded line by line: a 16 MiB manifest is not decoded whole
    to locate one value.
    """
    if isinstance(document, str):
        start = 0
        for _ in range(number - 1):
            start = document.find("\n", start) + 1
            if start == 0:
                return None
        end = document.find("\n", start)
        return document[start : end if end >= 0 else len(document)]
    begin = 0
    for _ in range(number - 1):
        begin = document.find(b"\n", begin) + 1
        if begin == 0:
            return None
    stop = document.find(b"\n", begin)
    return document[begin : stop if stop >= 0 else len(document)].decode("utf-8", "replace")


def value_position(line: str, key_at: Position) -> Position | None:
    """Return where the value of the key written at ``key_at`` on ``line`` starts, or ``None``.

    ``line`` is the text of line ``key_at[0]`` of a valid TOML document (a
    key, its ``=`` and the start of its value share one line in TOML).
    ``None`` when no key with a value starts at ``key_at`` (a table header).
    """
    scanner = TomlPositions(line)
    try:
        _, i = scanner._key(key_at[1] - 1)
        i = scanner._skip_ws(i)
        if line[i : i + 1] != "=":
            return None
        i = scanner._skip_ws(i + 1)
    except (IndexError, ValueError, RecursionError):
        return None
    return (key_at[0], i + 1) if i < len(line) else None


#: The optional keys of an entry whose positions :func:`entry_positions` also finds, when set.
OPTIONAL_ENTRY_KEYS: Final = ("accept", "environment", "python", "command")


def entry_positions(
    text: str, slugs: Sequence[str]
) -> tuple[Position, Position, list[EntryPositions], list[dict[str, Position]]]:
    """Return where a valid manifest writes its keys, as :class:`TomlPositions` finds them.

    ``text`` must be a manifest that validated into ``slugs`` (in file
    order). Returns the positions of ``schema-version`` and of the first
    ``task-classes``, for each slug those of its table header, its
    ``module`` key and its ``root`` key, and for each slug those of the
    :data:`OPTIONAL_ENTRY_KEYS` it sets (``accept``, ``environment``,
    ``python``, ``command``). A manifest in the plain layout (statements at the start of
    their line, ``[task-classes.<slug>]`` headers, one-line values) is read
    in one pass over its lines; any other is left to :class:`TomlPositions`,
    which gives the same answers more slowly.
    """
    found = _plain_entry_positions(text, slugs)
    if found is not None:
        return found
    positions = TomlPositions(text)
    records: list[EntryPositions] = []
    optional: list[dict[str, Position]] = []
    for slug in slugs:
        table = positions.find(("task-classes", slug))
        module = positions.find(("task-classes", slug, "module"))
        root = positions.find(("task-classes", slug, "root"))
        records.append((*table, *module, *root))
        optional.append(
            {
                key: at
                for key in OPTIONAL_ENTRY_KEYS
                if (at := positions.find(("task-classes", slug, key))) != table
            }
        )
    return (
        positions.find(("schema-version",)),
        positions.find(("task-classes",)),
        records,
        optional,
    )


_KEY_ENDS: Final = (" ", "\t", "=")


def _plain_entry_positions(
    text: str, slugs: Sequence[str]
) -> tuple[Position, Position, list[EntryPositions], list[dict[str, Position]]] | None:
    """:func:`entry_positions` for the plain layout; ``None`` for anything else."""
    index = {slug: number for number, slug in enumerate(slugs)}
    headers: list[Position | None] = [None] * len(slugs)
    modules: list[Position | None] = [None] * len(slugs)
    roots: list[Position | None] = [None] * len(slugs)
    optional: list[dict[str, Position]] = [{} for _ in slugs]
    schema_version: Position | None = None
    task_classes: Position | None = None
    table = -1  # the slug whose table the lines are in; -1 top level, -2 [task-classes]
    for number, line in enumerate(text.split("\n"), 1):
        first = line[:1]
        if first == "[":
            if line.startswith("[task-classes."):
                slug = line[14 : line.find("]")]
                table = index.get(slug, -3)
                if table < 0 or headers[table] is not None:
                    return None
                headers[table] = (number, 1)
            elif line.startswith("[task-classes]"):
                table = -2
            else:
                return None
            if task_classes is None:
                task_classes = (number, 1)
        elif first == "m":
            if table < 0 or not line.startswith("module") or line[6:7] not in _KEY_ENDS:
                return None
            if modules[table] is not None:
                return None
            modules[table] = (number, 1)
        elif first == "r":
            if table < 0 or not line.startswith("root") or line[4:5] not in _KEY_ENDS:
                return None
            if roots[table] is not None:
                return None
            roots[table] = (number, 1)
        elif first in _OPTIONAL_FIRST:
            key = _OPTIONAL_FIRST[first]
            if (
                table < 0
                or not line.startswith(key)
                or line[len(key) : len(key) + 1] not in _KEY_ENDS
            ):
                return None
            if key in optional[table] or not _one_line_value(line):
                return None
            optional[table][key] = (number, 1)
        elif first == "s":
            if table != -1 or schema_version is not None:
                return None
            if not line.startswith("schema-version") or line[14:15] not in _KEY_ENDS:
                return None
            schema_version = (number, 1)
        elif first not in {"", "#", "\r"}:
            return None  # indented, quoted, dotted: not the plain layout
    if schema_version is None or task_classes is None:
        return None
    records: list[EntryPositions] = []
    for header, module, root in zip(headers, modules, roots, strict=True):
        if header is None or module is None or root is None:
            return None
        records.append((*header, *module, *root))
    return schema_version, task_classes, records, optional


#: The optional keys of an entry, by their first letter (one each).
_OPTIONAL_FIRST: Final = {key[0]: key for key in OPTIONAL_ENTRY_KEYS}


def _one_line_value(line: str) -> bool:
    """Whether ``line`` (``key = value``) holds its whole value: no array left open.

    An ``accept`` or ``command`` array written over several lines continues on lines this
    reader does not look at: such a manifest is left to :class:`TomlPositions`.
    """
    value = line.partition("=")[2].strip()
    return not value.startswith("[") or "]" in value
