"""The content-keyed cache of validated manifests: one entry per manifest's bytes.

Validating a large manifest costs far more than answering for one of its
slugs. Every command and library call that reads a manifest without needing
a fresh validation (``list``, ``show``, ``plan``, a fresh process's first
``load_task_class``) therefore looks here first, under the BLAKE2b-256 digest
of the manifest's bytes — never its modification time — and this package's
version. An entry is written only for a manifest that validated, and holds
what was learnt from it: the slugs in file order, ``list``'s text output, and
every entry's module, root and positions (line, column of its table header,
``module`` and ``root`` keys), and each optional key it sets (``accept``,
``environment``, ``python``, ``command``: value and position) in blocks
sorted by slug, so that one slug is
found by a binary search over the blocks' first slugs and one block read,
whatever the number of slugs. Large manifests also get a bigram index for
suggestions (:meth:`Entry.shortlist`).

The directory follows the rules of :mod:`codegenie.eval._cache.directory`
(private, keyed checksum, atomic writes): anything off is a miss, never an
error. An entry records the digest of the manifest it describes and, under
the directory's keyed checksum, its header and table of contents; the table
of contents holds the BLAKE2b of every section, and a section is checked
against it each time it is read. Pruning keeps the 32 newest entries and at
most 256 MiB of them.

Entries are immutable once renamed into place: an :class:`Entry` keeps its
file open and reads sections on demand, so an entry pruned or replaced by
another process meanwhile is still read whole and consistent.

This module reads entries, and imports only the standard library's lightest
modules: the cached ``list`` runs it before anything else is imported. Writing
is :mod:`codegenie.eval._cache.store`'s, imported when an entry is stored.
"""

from __future__ import annotations

import os

from codegenie.eval._cache.directory import (
    checksum,
    hash_hex,
    open_private,
    open_to_read,
    read_key,
)
from codegenie.eval._paths import MANIFEST_SIZE_LIMIT
from codegenie.eval._version import __version__

__all__ = (
    "DIRECTORY",
    "MAGIC",
    "SUFFIX",
    "Damaged",
    "Entry",
    "Extra",
    "Positions",
    "Record",
    "digest",
    "open_entry",
)

#: The cache directory's name under the cache home.
DIRECTORY = "manifests"
#: An entry's first line: the format and this package's version.
MAGIC = f"codegenie-eval manifest cache 4 {__version__}"
#: An entry's name is the manifest's digest and this suffix.
SUFFIX = ".cache"
# What an entry holds is derived from the manifest's bytes (at most 16 MiB):
# its strings twice, positions and the bigram index stay within four times that.
_MAX_ENTRY = 4 * MANIFEST_SIZE_LIMIT + (1 << 20)
_HEAD_READ = 1 << 16

#: Where an entry's table header, ``module`` key and ``root`` key are written:
#: ``(header_line, header_column, module_line, module_column, root_line, root_column)``.
Positions = tuple[int, int, int, int, int, int]
#: An optional key an entry sets (``accept``, ``environment``, ``python``, ``command``): the
#: key, the line and column where it is written, and its value as text (``accept``: its
#: codes, space-separated; ``command``: its words as a JSON array).
Extra = tuple[str, int, int, str]
#: What the cache keeps of one entry: its module, root, positions, and the optional keys it sets.
Record = tuple[str, str, Positions, tuple[Extra, ...]]


class Damaged(Exception):
    """A section of an open entry does not match its checksum, or cannot be read."""


def digest(data: bytes) -> str:
    """Return the key of the manifest whose bytes are ``data``: its BLAKE2b-256, in hex."""
    return hash_hex(data)


# -- reading -------------------------------------------------------------------------


def _pread_exactly(fd: int, length: int, offset: int) -> bytes:
    """Read ``length`` bytes at ``offset``; raise :class:`Damaged` when they are not all there."""
    chunks = []
    remaining = length
    while remaining > 0:
        chunk = os.pread(fd, remaining, offset)
        if not chunk:
            raise Damaged("the entry is shorter than its table of contents says")
        chunks.append(chunk)
        offset += len(chunk)
        remaining -= len(chunk)
    return chunks[0] if len(chunks) == 1 else b"".join(chunks)


def _span(text: str, size: int) -> tuple[int, int, str]:
    """Parse ``OFFSET,LENGTH,HASH`` of a section inside a body of ``size`` bytes."""
    offset, length, expected = text.split(",")
    start, count = int(offset), int(length)
    if start < 0 or count < 0 or start + count > size or len(expected) != 64:
        raise ValueError("a section outside the entry")
    return start, count, expected


class Entry:
    """One open, authenticated cache entry: sections are read and checked on demand.

    Obtain one with :func:`open_entry`. Every method reads only what it needs
    and checks it against the (authenticated) table of contents first;
    whatever does not match raises :class:`Damaged`. The entry keeps its file
    open until :meth:`close` (or until it is garbage collected), so it stays
    readable whatever happens to the directory meanwhile.
    """

    __slots__ = (
        "_blocks",
        "_blocks_line",
        "_body",
        "_fd",
        "_fences",
        "_grams",
        "_size",
        "_slugs",
        "_spans",
        "count",
        "digest",
        "globals",
        "schema_version",
    )

    def __init__(self, fd: int, size: int, body: int, manifest_digest: str, toc: str) -> None:
        # The descriptor is taken last: a table of contents that does not parse
        # leaves it to the caller to close.
        self._fd = -1
        self._size = size - body
        self._body = body
        self.digest = manifest_digest
        self._blocks: dict[int, dict[str, str]] = {}
        self._slugs: tuple[str, ...] | None = None
        self._grams: dict[str, tuple[str, int, int, str]] | None = None
        fields = dict(line.split(" ", 1) for line in toc.split("\n"))
        #: How many slugs the manifest declares.
        self.count = int(fields["count"])
        version, sv_line, sv_column, tc_line, tc_column = map(int, fields["globals"].split(" "))
        #: The manifest's ``schema-version``.
        self.schema_version = version
        #: Where ``schema-version`` and ``task-classes`` are first written.
        self.globals = ((sv_line, sv_column), (tc_line, tc_column))
        self._spans = {
            name: _span(fields[name], self._size)
            for name in ("text", "slugs", "grams")
            if fields.get(name, "-") != "-"
        }
        self._fences = fields["fences"].split(" ")
        self._blocks_line = fields["blocks"].split(" ")
        if self.count < 1 or len(self._fences) != len(self._blocks_line):
            raise ValueError("an entry without slugs, or fences that do not match its blocks")
        if self._fences != sorted(self._fences):
            raise ValueError("fences out of order")
        self._fd = fd

    # Held by the class: at interpreter exit, module globals may be gone before us.
    _close_fd = staticmethod(os.close)

    def close(self) -> None:
        """Close the entry's file; further reads raise :class:`Damaged`."""
        fd, self._fd = getattr(self, "_fd", -1), -1
        if fd >= 0:
            self._close_fd(fd)

    def __del__(self) -> None:
        self.close()

    def _text_section(self, offset: int, length: int, expected: str) -> str:
        try:
            return self._section(offset, length, expected).decode()
        except UnicodeDecodeError:
            raise Damaged("a section that is not UTF-8") from None

    def _section(self, offset: int, length: int, expected: str) -> bytes:
        if self._fd < 0:
            raise Damaged("the entry is closed")
        try:
            data = _pread_exactly(self._fd, length, self._body + offset)
        except OSError as exc:
            raise Damaged(str(exc)) from None
        if hash_hex(data) != expected:
            raise Damaged("a section does not match its checksum")
        return data

    def _named(self, name: str) -> bytes | None:
        span = self._spans.get(name)
        return None if span is None else self._section(*span)

    def text(self) -> bytes:
        """Return ``list``'s text output (``render_text`` of the entries), in UTF-8."""
        data = self._named("text")
        if data is None:
            raise Damaged("no text section")
        return data

    def slugs(self) -> tuple[str, ...]:
        """Return every slug, in file order."""
        if self._slugs is None:
            span = self._spans.get("slugs")
            if span is None:
                raise Damaged("no slugs section")
            slugs = tuple(self._text_section(*span).split("\n"))
            if len(slugs) != self.count:
                raise Damaged("the slugs section does not hold every slug")
            self._slugs = slugs
        return self._slugs

    def _block(self, index: int) -> dict[str, str]:
        block = self._blocks.get(index)
        if block is None:
            try:
                span = _span(self._blocks_line[index], self._size)
            except ValueError:
                raise Damaged("a block outside the entry") from None
            lines = self._text_section(*span).split("\n")
            block = {line.partition("\t")[0]: line for line in lines}
            if len(block) != len(lines) or next(iter(block)) != self._fences[index]:
                raise Damaged("a block that does not start at its fence")
            self._blocks[index] = block
        return block

    def record(self, slug: str) -> Record | None:
        """Return the module, root, positions and optional keys of ``slug``; ``None``: undeclared.

        Reads at most one block: a binary search over the blocks' first slugs
        finds the only block that can hold ``slug``.
        """
        from bisect import bisect_right  # noqa: PLC0415 - not on list's path

        index = bisect_right(self._fences, slug) - 1
        if index < 0:
            return None
        line = self._block(index).get(slug)
        return None if line is None else _parse_record(line)

    def records(self) -> dict[str, Record]:
        """Return every slug's record (reads every block)."""
        found: dict[str, Record] = {}
        for index in range(len(self._fences)):
            for slug, line in self._block(index).items():
                found[slug] = _parse_record(line)
        if len(found) != self.count:
            raise Damaged("the blocks do not hold every slug")
        return found

    def has_grams(self) -> bool:
        """Whether the entry holds the bigram index (manifests of ``GRAMS_FROM`` slugs or more)."""
        return "grams" in self._spans

    def shortlist(self, normalized: str, size: int) -> list[str]:
        """Return the ``size`` slugs sharing the most character pairs with ``normalized``.

        Exactly :func:`codegenie.eval.naming.shortlist` over :meth:`slugs`:
        by the number of distinct character pairs shared, most first, ties in
        file order. Computed on bit sets (one bit per slug, one set per
        character pair, added with bit-sliced counters), so it costs a few
        hundred big-integer operations instead of one step per slug.
        """
        slugs = self.slugs()
        count = len(slugs)
        pairs = {normalized[i : i + 2] for i in range(len(normalized) - 1)}
        sets = [bits for pair in sorted(pairs) if (bits := self._gram(pair, count))]
        slices: list[int] = []  # slices[k]: bit k of each slug's count
        for bits in sets:
            carry = bits
            for k, current in enumerate(slices):
                if not carry:
                    break
                slices[k] = current ^ carry
                carry &= current
            if carry:
                slices.append(carry)
        everyone = (1 << count) - 1
        chosen: list[int] = []
        for shared in range((1 << len(slices)) - 1, -1, -1):
            exactly = everyone
            for k, current in enumerate(slices):
                exactly &= current if shared >> k & 1 else ~current
            while exactly and len(chosen) < size:
                lowest = exactly & -exactly
                chosen.append(lowest.bit_length() - 1)
                exactly ^= lowest
            if len(chosen) >= size:
                break
        return [slugs[index] for index in chosen]

    def _gram(self, pair: str, count: int) -> int:
        """Return the bit set of the slugs that contain ``pair`` (0 when none does)."""
        if self._grams is None:
            span = self._spans.get("grams")
            if span is None:
                raise Damaged("no bigram index")
            grams = {}
            try:
                for line in self._text_section(*span).split("\n"):
                    gram, kind, offset, length, expected = line.split(" ")
                    start, size, _ = _span(f"{offset},{length},{expected}", self._size)
                    grams[gram] = (kind, start, size, expected)
            except ValueError:
                raise Damaged("a malformed bigram index") from None
            self._grams = grams
        found = self._grams.get(pair)
        if found is None:
            return 0
        kind, start, size, expected = found
        data = self._section(start, size, expected)
        if kind == "bits":
            return int.from_bytes(data, "little") & ((1 << count) - 1)
        if kind != "list" or size % 4:
            raise Damaged("an unknown kind of bigram set")
        bits = bytearray((count + 7) // 8)
        try:
            for at in range(0, size, 4):
                index = int.from_bytes(data[at : at + 4], "little")
                bits[index >> 3] |= 1 << (index & 7)
        except IndexError:
            raise Damaged("a bigram set names a slug that does not exist") from None
        return int.from_bytes(bits, "little") & ((1 << count) - 1)


def _parse_record(line: str) -> Record:
    """Parse ``slug TAB module TAB root TAB positions``, then ``TAB key line column value`` each."""
    try:
        _, module, root, numbers, *optional = line.split("\t")
        a, b, c, d, e, f = map(int, numbers.split(" "))
        extras = []
        for field in optional:
            key, at_line, at_column, value = field.split(" ", 3)
            extras.append((key, int(at_line), int(at_column), value))
    except ValueError:
        raise Damaged("a malformed record") from None
    return module, root, (a, b, c, d, e, f), tuple(extras)


def open_entry(manifest_digest: str) -> Entry | None:
    """Open the entry of the manifest whose digest is ``manifest_digest``; ``None`` on any doubt.

    Never raises: a missing, foreign, damaged or unsafe entry is a miss. The
    entry's header and table of contents are authenticated here; its
    sections are checked as they are read.
    """
    directory = open_to_read(DIRECTORY)
    if directory is None:
        return None
    try:
        opened = open_private(directory, manifest_digest + SUFFIX, _MAX_ENTRY)
        key = read_key(directory) if opened is not None else None
    except OSError:
        return None
    finally:
        os.close(directory)
    if opened is None:
        return None
    fd, size = opened
    if key is None:
        os.close(fd)
        return None
    try:
        return _authenticate(fd, size, manifest_digest, key)
    except (OSError, ValueError, KeyError, Damaged):  # truncated, not UTF-8, not ours
        os.close(fd)
        return None


def _authenticate(fd: int, size: int, manifest_digest: str, key: bytes) -> Entry | None:
    head = os.pread(fd, min(size, _HEAD_READ), 0)
    magic, recorded, signature, toc_size, _ = head.split(b"\n", 4)
    if magic.decode() != MAGIC or recorded.decode() != manifest_digest:
        os.close(fd)
        return None
    toc_start = len(magic) + len(recorded) + len(signature) + len(toc_size) + 4
    toc_length = int(toc_size)
    if toc_length < 0 or toc_start + toc_length > size:
        raise ValueError("a table of contents beyond the entry")
    toc = head[toc_start : toc_start + toc_length]
    if len(toc) < toc_length:
        toc = _pread_exactly(fd, toc_length, toc_start)
    signed = b"\n".join((magic, recorded, toc_size, toc))
    if checksum(key, signed) != signature.decode():
        os.close(fd)
        return None
    return Entry(fd, size, toc_start + toc_length, manifest_digest, toc.decode())
