"""A manifest served from the cache: a :class:`BenchManifest` that reads its entries on demand.

Validating a manifest of 100,000 task classes costs far more than answering
for one of them. A manifest whose bytes the cache already knows is therefore
a :class:`ServedManifest`: it starts without ``task_classes`` in its instance
dictionary, and ``entry``, ``slugs``, ``in``, ``root_dir`` and ``position``
answer from the cache entry, one block at a time. Whatever needs the whole
mapping reads it through ``self.task_classes`` or ``self.__dict__``
(pydantic's equality, ``model_dump``, copies, ``repr`` and pydantic-core's
serializers all do): both build it first, from the cache, so the manifest is
then exactly what validation would have given. A cache entry found damaged
on the way falls back to validating the bytes it stood for; every answer
already given stays true. A served manifest pickles as the validated one.

The model itself knows nothing of this: the cache's failure modes stay here.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final, final

from pydantic import BaseModel, PrivateAttr

from codegenie.eval._cache.entry import Damaged, Entry, Extra, Positions, Record
from codegenie.eval._manifest.model import BenchManifest, ManifestEntry, parse_manifest
from codegenie.eval._toml.positions import KeyPath, Position, TomlPositions, line_text
from codegenie.eval.errors import TaskClassNotFound
from codegenie.eval.naming import SHORTLIST_SIZE, closest, rank, suggestion_key

__all__ = ("ServedManifest",)

_INSTANCE_DICT: Final[Any] = BaseModel.__dict__["__dict__"]
_object_setattr: Final = object.__setattr__


def _trusted_entry(module: str, root: str, extras: tuple[Extra, ...]) -> ManifestEntry:
    """Return the ``ManifestEntry`` validating ``{module, root, *extras}`` gives, unvalidated.

    ``extras`` are the optional keys the entry sets (``accept``,
    ``environment``, ``python``, ``command``) and their values as the cache
    keeps them (``command``: its words as a JSON array);
    the others keep their defaults and are not among the fields set.

    For entries read back from the cache, which only ever holds entries that
    validated: the same fields, fields set, extra and private state as a
    validated one, at a fraction of the cost (a manifest may hold 100,000).
    """
    entry = ManifestEntry.__new__(ManifestEntry)
    fields: dict[str, object] = {
        "module": module,
        "root": root,
        "accept": (),
        "environment": None,
        "python": None,
        "command": None,
    }
    fields_set = {"module", "root"}
    for key, _, _, value in extras:
        if key not in fields or key in fields_set:
            raise Damaged("a record with an unknown or repeated key")
        fields[key] = _field(key, value)
        fields_set.add(key)
    _object_setattr(entry, "__dict__", fields)
    _object_setattr(entry, "__pydantic_fields_set__", fields_set)
    _object_setattr(entry, "__pydantic_extra__", None)
    _object_setattr(entry, "__pydantic_private__", None)
    return entry


def _field(key: str, value: str) -> object:
    """Return the value of optional ``key`` from its text in the cache (:func:`_optional_text`)."""
    if key == "accept":
        return tuple(value.split(" ")) if value else ()
    if key == "command":
        try:
            words = json.loads(value)
        except ValueError:
            raise Damaged("a command that is not JSON") from None
        if not isinstance(words, list) or not all(isinstance(word, str) for word in words):
            raise Damaged("a command that is not a list of words")
        return tuple(words)
    return value


#: Where a slug's keys are written, as the cache keeps them: the six positions, and each
#: optional key it sets by its name.
_Where = tuple[Positions, dict[str, Position]]


def _where(record: Record) -> _Where:
    return record[2], {key: (line, column) for key, line, column, _ in record[3]}


def _find(
    key: KeyPath, version_at: Position, table_at: Position, record: _Where | None
) -> Position:
    """Answer :meth:`TomlPositions.find` for a valid manifest from what the cache keeps.

    A valid manifest writes ``schema-version``, ``task-classes``, and per slug
    its table, ``module``, ``root`` and the optional keys it sets: the
    longest of those that ``key`` starts with is where ``key`` is
    (``record`` being the positions of ``key[1]`` when that is a declared slug).
    """
    if not key:
        return (1, 1)
    if key[0] == "task-classes":
        if record is None or len(key) < 2:
            return table_at
        positions, optional = record
        if len(key) >= 3 and key[2] == "module":
            return (positions[2], positions[3])
        if len(key) >= 3 and key[2] == "root":
            return (positions[4], positions[5])
        if len(key) >= 3 and isinstance(key[2], str) and key[2] in optional:
            return optional[key[2]]
        return (positions[0], positions[1])
    if key[0] == "schema-version":
        return version_at
    return (1, 1)


def _beyond_the_cache(key: KeyPath) -> bool:
    """Whether ``key`` is inside an entry's ``accept`` (an item): a position the cache lacks."""
    return len(key) > 3 and key[0] == "task-classes" and key[2] == "accept"


def _validated(state: dict[str, Any]) -> BenchManifest:
    """Rebuild, from a served manifest's state, the manifest validation gives (unpickling)."""
    manifest = BenchManifest.__new__(BenchManifest)
    manifest.__setstate__(state)
    return manifest


@final
class KnownPositions:
    """Every position a valid manifest has, held in memory (a served manifest, pickled)."""

    def __init__(
        self, version_at: Position, table_at: Position, records: dict[str, _Where]
    ) -> None:
        self.version_at = version_at
        self.table_at = table_at
        self.records = records

    def find(self, key: KeyPath) -> Position:
        """Where ``key`` (or its nearest parent) is written, as :meth:`TomlPositions.find`."""
        slug = key[1] if len(key) > 1 else None
        record = self.records.get(slug) if isinstance(slug, str) else None
        return _find(key, self.version_at, self.table_at, record)


@final
class _Served:
    """A manifest's cache entry, and the bytes it was found for (kept: the fallback)."""

    __slots__ = ("data", "entry", "made", "scanner")

    def __init__(self, entry: Entry, data: bytes) -> None:
        self.entry = entry
        self.data = data
        # Entries built so far, by slug: each slug gets one object, whoever asks.
        self.made: dict[str, ManifestEntry] = {}
        # The bytes scanned for positions the cache does not keep (an accept's items).
        self.scanner: TomlPositions | None = None

    # Shared by copies: it describes bytes that never change.
    def __copy__(self) -> _Served:
        return self

    def __deepcopy__(self, memo: dict[int, object]) -> _Served:
        return self

    def __reduce__(self) -> tuple[Any, ...]:
        msg = "a manifest's cache entry is an open file; pickle the manifest instead"
        raise TypeError(msg)

    def entry_of(self, slug: str) -> ManifestEntry | None:
        """Return the entry of ``slug``, ``None`` when the manifest does not declare it."""
        made = self.made.get(slug)
        if made is not None:
            return made
        record = self.entry.record(slug)
        if record is None:
            return None
        return self.made.setdefault(slug, _trusted_entry(record[0], record[1], record[3]))

    def all_entries(self) -> dict[str, ManifestEntry]:
        """Return every entry, in file order (reads every block of the cache entry)."""
        records = self.entry.records()
        made = self.made
        entries = {}
        for slug in self.entry.slugs():
            found = made.get(slug)
            if found is None:
                module, root, _, extras = records[slug]
                found = made.setdefault(slug, _trusted_entry(module, root, extras))
            entries[slug] = found
        return entries

    def suggestions(self, slug: str, names: tuple[str, ...]) -> tuple[str, ...]:
        """Return what :func:`closest` suggests for ``slug`` among ``names`` (every slug)."""
        if len(names) <= SHORTLIST_SIZE or not self.entry.has_grams():
            return closest(slug, names)
        normalized = suggestion_key(slug)
        return rank(normalized, self.entry.shortlist(normalized, SHORTLIST_SIZE))

    def find(self, key: KeyPath) -> Position:
        """Where ``key`` (or its nearest parent) is written, as :meth:`TomlPositions.find`.

        The cache keeps where each key is, not each item of an ``accept``
        array: those (rare: only ``check`` asks, of a manifest it validates
        itself) are found by scanning the bytes, once.
        """
        if _beyond_the_cache(key):
            if self.scanner is None:
                self.scanner = TomlPositions(self.data.decode("utf-8"))
            return self.scanner.find(key)
        version_at, table_at = self.entry.globals
        slug = key[1] if len(key) > 1 else None
        record = self.entry.record(slug) if isinstance(slug, str) else None
        return _find(key, version_at, table_at, None if record is None else _where(record))

    def keeps_every_position(self) -> bool:
        """Whether the cache knows every position of the manifest: no entry sets ``accept``."""
        return not any(
            extra[0] == "accept" for record in self.entry.records().values() for extra in record[3]
        )

    def known_positions(self) -> KnownPositions:
        """Every position, read into memory."""
        version_at, table_at = self.entry.globals
        records = {slug: _where(record) for slug, record in self.entry.records().items()}
        return KnownPositions(version_at, table_at, records)


@final
class ServedManifest(BenchManifest):
    """A :class:`BenchManifest` answering from its cache entry until it needs every entry.

    Observably the manifest validation gives for the same bytes: equal to it,
    the same answers, the same errors; pickled, it is that manifest.
    """

    _served: _Served | None = PrivateAttr(default=None)

    @classmethod
    def serve(cls, entry: Entry, data: bytes, path: Path) -> ServedManifest:
        """Return the manifest that ``entry``, the cache entry of ``data``, describes.

        ``path`` is where ``data`` was read from. The manifest owns ``entry``
        (an open file) from now on.
        """
        manifest = cls.model_construct(schema_version=entry.schema_version, task_classes={})
        del _INSTANCE_DICT.__get__(manifest)["task_classes"]
        _object_setattr(manifest, "__pydantic_fields_set__", {"schema_version", "task_classes"})
        manifest._path = path
        manifest._served = _Served(entry, data)
        return manifest

    @property
    def __dict__(self) -> dict[str, Any]:
        """Return the instance dictionary, ``task_classes`` included (built if need be)."""
        fields: dict[str, Any] = _INSTANCE_DICT.__get__(self)
        if "task_classes" not in fields:
            self._materialize(fields)
        return fields

    @__dict__.setter
    def __dict__(self, value: dict[str, Any]) -> None:
        _INSTANCE_DICT.__set__(self, value)

    if not TYPE_CHECKING:  # type checkers keep seeing the declared fields only

        def __getattr__(self, name: str) -> Any:
            if name == "task_classes":
                return self.__dict__["task_classes"]
            return super().__getattr__(name)

    @property
    def served(self) -> _Served | None:
        """The cache entry answering for this manifest; ``None`` once it fell back to validation."""
        private = self.__pydantic_private__
        served: _Served | None = private.get("_served") if private is not None else None
        return served

    def _lazy(self) -> _Served | None:
        """Return the cache entry answering while ``task_classes`` is not built yet."""
        if "task_classes" in _INSTANCE_DICT.__get__(self):
            return None
        return self.served

    def _materialize(self, fields: dict[str, Any]) -> None:
        """Build ``task_classes`` from the cache into ``fields`` (the instance dictionary)."""
        served = self._lazy()
        if served is None:
            return
        try:
            entries = served.all_entries()
        except Damaged:
            entries = self._fall_back(served)
        fields.setdefault("task_classes", entries)

    def _fall_back(self, served: _Served) -> dict[str, ManifestEntry]:
        """Validate the bytes the cache entry stood for: the entry could not be read after all.

        The entries already handed out are kept (they are equal to what
        validation gives), so every answer the manifest gave stays true.
        """
        validated = parse_manifest(served.data, self.path)
        private = self.__pydantic_private__
        assert private is not None
        private["_text"] = validated._text
        private["_positions"] = None
        private["_served"] = None
        served.entry.close()
        return {
            slug: served.made.get(slug) or entry for slug, entry in validated.task_classes.items()
        }

    def _damaged(self) -> None:
        """Answer from validation from now on: the entry could not be read."""
        self._materialize(_INSTANCE_DICT.__get__(self))
        served = self.served
        if served is not None:  # built before the damage was found
            self._fall_back(served)

    def slugs(self) -> tuple[str, ...]:
        """Return the declared slugs, in file order."""
        served = self._lazy()
        if served is not None:
            try:
                return served.entry.slugs()
            except Damaged:
                self._damaged()
        return super().slugs()

    def __contains__(self, slug: object) -> bool:
        served = self._lazy()
        if served is not None and type(slug) is str:
            try:
                return served.entry_of(slug) is not None
            except Damaged:
                self._damaged()
        return super().__contains__(slug)

    def entry(self, slug: str) -> ManifestEntry:
        """Return the entry of ``slug``; ``TaskClassNotFound`` with suggestions if undeclared."""
        served = self._lazy()
        if served is not None and type(slug) is str:
            try:
                found = served.entry_of(slug)
                if found is not None:
                    return found
                names = served.entry.slugs()
                suggestions = served.suggestions(slug, names)
            except Damaged:
                self._damaged()
            else:
                raise TaskClassNotFound(
                    slug,
                    looked_up_in=str(self.path),
                    available_names=names,
                    suggestions=suggestions,
                )
        return super().entry(slug)

    def position(self, *key: str | int) -> tuple[int, int]:
        """Return the (line, column) where ``key`` (or its nearest parent) is written."""
        served = self.served
        if served is not None:
            try:
                return served.find(key)
            except Damaged:
                self._damaged()
        return super().position(*key)

    def _line_text(self, number: int) -> str | None:
        """Return the text of line ``number`` of the bytes the cache entry stands for."""
        served = self.served
        if served is not None:
            return line_text(served.data, number)
        return super()._line_text(number)

    def __eq__(self, other: object) -> bool:
        """Equal as :meth:`BenchManifest.__eq__`; served from one entry: without building."""
        if isinstance(other, ServedManifest) and other._path == self._path:
            mine, theirs = self._lazy(), other._lazy()
            if mine is not None and theirs is not None and mine.entry.digest == theirs.entry.digest:
                return True
        return super().__eq__(other)

    __hash__ = None

    def __repr_name__(self) -> str:
        """Name the model as validation would: a served manifest is a ``BenchManifest``."""
        return BenchManifest.__name__

    def __reduce_ex__(self, protocol: Any) -> tuple[Any, ...]:
        """Pickle as the validated manifest: every entry, positions without the cache file."""
        served = self.served
        state = self.__getstate__()
        private = dict(state["__pydantic_private__"] or {})
        private.pop("_served", None)
        if served is not None:
            try:
                if not served.keeps_every_position():
                    raise Damaged("positions the cache does not keep")  # read from the text
                private["_positions"] = served.known_positions()
            except Damaged:
                private["_text"] = served.data.decode("utf-8")
                private["_positions"] = None
        state = {**state, "__pydantic_private__": private}
        return (_validated, (state,))
