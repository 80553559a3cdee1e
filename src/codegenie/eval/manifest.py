"""``bench.toml``: the manifest model, and reading it with precise errors.

The manifest is the one declarative list of task classes (design section 3)::

    #:schema ./docs/bench.schema.json
    schema-version = 1

    [task-classes.vuln-remediation]
    module = "bench.vuln_remediation.registration"
    root = "bench"

Reading turns every bad input (missing file, bad bytes, TOML syntax, schema
violations) into ``BenchManifestNotFound`` or ``BenchManifestInvalid``; the
latter lists *every* schema problem of the file with its line and column.

Whatever the bytes, nothing else escapes (design section 10): only regular
files of at most 16 MiB are read (:func:`read_manifest_bytes`, the one reader
every command uses), and a document nested too deep, with a dotted key too
long or an integer beyond 64 bits is refused at its line before ``tomllib``
sees it (:mod:`codegenie.eval._toml.limits`).
"""

from __future__ import annotations

import difflib
import functools
import keyword
import os
import re
import time
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, Final, Self, final

from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Field,
    PrivateAttr,
    ValidationError,
    model_validator,
)
from pydantic_core import PydanticCustomError

from codegenie.eval import _cache as _disk_cache
from codegenie.eval._paths import (
    MANIFEST_NAME,
    MANIFEST_SIZE_LIMIT,
    FileRefused,
    find_manifest_path,
    read_regular_file,
)
from codegenie.eval._toml.fast import parse_plain
from codegenie.eval._toml.positions import KeyPath, Position, TomlPositions
from codegenie.eval._toml.read import TomlUnreadable, decode_toml, load_toml
from codegenie.eval.errors import (
    BenchManifestInvalid,
    BenchManifestNotFound,
    ManifestProblem,
    TaskClassNotFound,
)
from codegenie.eval.naming import (
    MAX_SLUG_LENGTH,
    RESERVED_SLUGS,
    SHORTLIST_SIZE,
    SLUG_PATTERN,
    closest,
    rank,
    slug_problem,
    suggestion_key,
)

__all__ = (
    "MANIFEST_NAME",
    "MANIFEST_SIZE_LIMIT",
    "SUPPORTED_SCHEMA_VERSIONS",
    "BenchManifest",
    "ManifestEntry",
    "clear_manifest_cache",
    "json_schema",
    "load_manifest_cached",
    "read_manifest_bytes",
)

SUPPORTED_SCHEMA_VERSIONS: Final = (1,)

_IDENT_PART: Final = r"[A-Za-z_][A-Za-z0-9_]*"
# JSON Schema patterns for editors. They mirror the validators below, minus
# the keyword checks, which a regular expression without look-ahead cannot
# express; the validators are authoritative.
_MODULE_PATTERN: Final = rf"^{_IDENT_PART}(\.{_IDENT_PART})+\.registration$"
# No control characters (C0, DEL, C1): \xHH reads the same in ECMA-262, Rust and Python.
_NOT_CONTROL: Final = r"\x00-\x1f\x7f-\x9f"
_ROOT_COMPONENT: Final = (
    rf"([^./\\{_NOT_CONTROL}][^/\\{_NOT_CONTROL}]*"
    rf"|\.[^./\\{_NOT_CONTROL}][^/\\{_NOT_CONTROL}]*"
    rf"|\.\.[^/\\{_NOT_CONTROL}]+)"
)
_ROOT_PATTERN: Final = rf"^({_ROOT_COMPONENT}/)*{_IDENT_PART}$"
_ASCII_IDENT: Final = re.compile(_IDENT_PART)
_MODULE_OK: Final = re.compile(rf"{_IDENT_PART}(?:\.{_IDENT_PART})+\.registration")
_KEYWORDS: Final = frozenset(keyword.kwlist)
_CONTROL: Final = re.compile(f"[{_NOT_CONTROL}]")


def _fail(kind: str, message: str) -> PydanticCustomError:
    # No context: the message is already rendered, and braces in user input
    # must not be taken for placeholders.
    return PydanticCustomError(kind, message)


def _identifier_problem(part: str) -> str | None:
    if not _ASCII_IDENT.fullmatch(part):
        return "is not an ASCII Python identifier"
    if keyword.iskeyword(part):
        return "is a Python keyword"
    return None


def _check_module(value: str) -> str:
    if _MODULE_OK.fullmatch(value) and _KEYWORDS.isdisjoint(value.split(".")):
        return value  # the common case, decided in one match
    parts = value.split(".")
    for part in parts:
        problem = _identifier_problem(part)
        if problem is not None:
            raise _fail("module_syntax", f"module {value!r}: part {part!r} {problem}")
    if len(parts) < 3:
        raise _fail(
            "module_syntax",
            f"module {value!r} must have at least three parts: '<root>.<package>.registration'",
        )
    raise _fail("module_syntax", f"module {value!r} must end in '.registration'")


@functools.lru_cache(maxsize=1024)
def _root_problem(value: str) -> str | None:
    # Cached: a manifest repeats a handful of roots across all its entries.
    if not value:
        return "is empty"
    control = _CONTROL.search(value)
    if control is not None:
        return f"contains a control character (U+{ord(control.group()):04X})"
    if "\\" in value:
        return "must use '/' as separator, not '\\'"
    if value.startswith("/") or re.match(r"^[A-Za-z]:", value):
        return "must be relative to the manifest's directory, not absolute"
    parts = value.split("/")
    if ".." in parts:
        return "must stay inside the manifest's directory (no '..')"
    if any(part in {"", "."} for part in parts):
        return "must be a normalized path (no empty or '.' components)"
    problem = _identifier_problem(parts[-1])
    if problem is not None:
        return f"must end in a directory named like a Python package; {parts[-1]!r} {problem}"
    return None


def _check_root(value: str) -> str:
    problem = _root_problem(value)
    if problem is not None:
        raise _fail("root_syntax", f"root {value!r} {problem}")
    return value


def _check_slug(value: str) -> str:
    reason = slug_problem(value)
    if reason is not None:
        raise _fail("slug_syntax", f"invalid task-class slug {value!r}: {reason}")
    return value


def _check_schema_version(value: int) -> int:
    if value not in SUPPORTED_SCHEMA_VERSIONS:
        supported = ", ".join(str(v) for v in SUPPORTED_SCHEMA_VERSIONS)
        # str() of a huge int raises (over 4,300 digits): never print one whole.
        shown = str(value) if value.bit_length() <= 64 else "(an integer beyond 64 bits)"
        raise _fail(
            "schema_version",
            f"unsupported schema-version {shown}; this version of codegenie-eval "
            f"reads schema-version {supported}",
        )
    return value


Slug = Annotated[
    str,
    AfterValidator(_check_slug),
    Field(
        json_schema_extra={
            "pattern": SLUG_PATTERN,
            "minLength": 2,
            "maxLength": MAX_SLUG_LENGTH,
            "not": {"enum": sorted(RESERVED_SLUGS)},
        }
    ),
]


class ManifestEntry(BaseModel):
    """One task class of the manifest: the module that registers it and its root.

    ``module`` is ``<root package>.<package…>.registration`` and its first part
    is the last component of ``root``; ``root`` is a relative POSIX path from
    the manifest's directory that stays inside it.
    """

    model_config = ConfigDict(
        frozen=True,
        extra="forbid",
        strict=True,
        json_schema_extra={
            "description": "One task class: the module that registers it and the root "
            "directory it must be loaded from."
        },
    )

    module: Annotated[
        str,
        AfterValidator(_check_module),
        Field(
            description="Dotted path of the module that registers the task class.",
            json_schema_extra={"pattern": _MODULE_PATTERN},
        ),
    ]
    root: Annotated[
        str,
        AfterValidator(_check_root),
        Field(
            description="Directory of the root package, relative to the manifest.",
            json_schema_extra={"pattern": _ROOT_PATTERN},
        ),
    ]

    @model_validator(mode="after")
    def _module_under_root(self) -> Self:
        package = self.root.rpartition("/")[2]
        if self.module.split(".", 1)[0] != package:
            raise _fail(
                "module_outside_root",
                f"module {self.module!r} is not under root {self.root!r}: "
                f"its first part must be {package!r}",
            )
        return self

    @property
    def package_parts(self) -> tuple[str, ...]:
        """The module's parts between the root package and ``registration``."""
        return tuple(self.module.split(".")[1:-1])

    def case_dir(self, root_dir: Path) -> Path:
        """Return the task-class directory under the resolved ``root_dir``."""
        return root_dir.joinpath(*self.package_parts)

    def registration_file(self, root_dir: Path) -> Path:
        """Return the registration file under the resolved ``root_dir``."""
        return self.case_dir(root_dir) / "registration.py"


class BenchManifest(BaseModel):
    """A validated ``bench.toml`` (schema version 1).

    Build one with :meth:`load` (one file) or :meth:`discover` (the nearest
    ``bench.toml``); both raise ``BenchManifestNotFound`` or
    ``BenchManifestInvalid``. ``path`` is the file it was read from, and
    relative roots are resolved against its directory.
    """

    model_config = ConfigDict(
        frozen=True,
        extra="forbid",
        strict=True,
        validate_by_name=True,
        validate_by_alias=True,
        title="bench.toml",
        json_schema_extra={
            "description": "The codegenie-eval bench manifest: every task class, "
            "the module that registers it and the root it must come from."
        },
    )

    schema_version: Annotated[
        int,
        AfterValidator(_check_schema_version),
        Field(
            alias="schema-version",
            description="Version of this file format; must be 1.",
            json_schema_extra={"const": 1},
        ),
    ]
    task_classes: Annotated[
        dict[Slug, ManifestEntry],
        Field(
            alias="task-classes",
            default_factory=dict,
            description="Task classes by slug.",
        ),
    ]

    _path: Path | None = PrivateAttr(default=None)
    _text: str | None = PrivateAttr(default=None)
    _positions: TomlPositions | _KnownPositions | None = PrivateAttr(default=None)
    # Set on a manifest served from the cache (``load_manifest_cached``): its
    # entries are read from there, one at a time, until someone needs them all.
    _served: _Served | None = PrivateAttr(default=None)

    @model_validator(mode="after")
    def _unique_modules(self) -> Self:
        if len({entry.module for entry in self.task_classes.values()}) == len(self.task_classes):
            return self
        duplicates = _duplicate_modules(self.task_classes)
        if duplicates:
            slug, module, first = duplicates[0]
            raise _fail(
                "duplicate_module",
                f"task classes {first!r} and {slug!r} both name module {module!r}",
            )
        return self

    # -- a manifest served from the cache ------------------------------------
    #
    # A manifest from the cache starts without ``task_classes`` in its instance
    # dictionary: ``entry``, ``slugs``, ``in``, ``root_dir`` and ``position``
    # answer from the cache entry, one block at a time. Whatever needs the
    # whole mapping reads it through ``self.task_classes`` (``__getattr__``
    # below) or ``self.__dict__`` (pydantic's equality, ``model_dump``, copies,
    # pickling, ``repr`` and pydantic-core's serializers all do): both build it
    # first, from the cache, so the manifest is then exactly what validation
    # would have given.

    @property
    def __dict__(self) -> dict[str, Any]:
        """Return the instance dictionary, ``task_classes`` included (built if need be)."""
        fields: dict[str, Any] = _INSTANCE_DICT.__get__(self)
        if "task_classes" not in fields:  # served from the cache, and not built yet
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

    def _lazy(self) -> _Served | None:
        """Return the cache entry answering for this manifest while ``task_classes`` is unbuilt."""
        private = self.__pydantic_private__
        served: _Served | None = private["_served"] if private is not None else None
        if served is None or "task_classes" in _INSTANCE_DICT.__get__(self):
            return None
        return served

    def _materialize(self, fields: dict[str, Any]) -> None:
        """Build ``task_classes`` from the cache into ``fields`` (the instance dictionary)."""
        served = self._lazy()
        if served is None:
            return
        try:
            entries = served.all_entries()
        except _disk_cache.Damaged:
            entries = self._fall_back(served)
        fields.setdefault("task_classes", entries)

    def _fall_back(self, served: _Served) -> dict[str, ManifestEntry]:
        """Validate the bytes the cache entry stood for: the entry could not be read after all.

        The entries already handed out are kept (they are equal to what
        validation gives), so every answer the manifest gave stays true.
        """
        validated = _parse(served.data, self.path)
        private = self.__pydantic_private__
        assert private is not None
        private["_text"] = validated._text
        private["_positions"] = None
        private["_served"] = None
        served.close()
        return {
            slug: served.made.get(slug) or entry for slug, entry in validated.task_classes.items()
        }

    def __eq__(self, other: object) -> bool:
        """Equal: the same class, read from the same path, declaring the same task classes.

        Two manifests read from the same bytes are equal whether they were
        validated or served from the cache (then without building either).
        """
        if not isinstance(other, BaseModel):
            return NotImplemented
        if type(other) is not type(self):
            return False
        if other is self:
            return True
        assert isinstance(other, BenchManifest)
        if self._path != other._path:
            return False
        mine, theirs = self._lazy(), other._lazy()
        if mine is not None and theirs is not None and mine.digest == theirs.digest:
            return True
        return (
            self.schema_version == other.schema_version and self.task_classes == other.task_classes
        )

    # A mapping of task classes is no dictionary key (as when this was pydantic's).
    __hash__ = None  # type: ignore[assignment]

    def __getstate__(self) -> dict[Any, Any]:
        """Pickle what validation would give: every entry, and positions without the cache file."""
        state = super().__getstate__()
        served = self._lazy() or (self._served if self.__pydantic_private__ else None)
        if served is not None:
            private = dict(state["__pydantic_private__"])
            private["_served"] = None
            try:
                private["_positions"] = served.known_positions()
            except _disk_cache.Damaged:
                private["_text"] = served.data.decode("utf-8")
                private["_positions"] = None
            state["__pydantic_private__"] = private
        return state

    # -- reading ------------------------------------------------------------

    @classmethod
    def load(cls, path: Path | str) -> BenchManifest:
        """Read and validate the manifest at ``path``.

        Raises ``BenchManifestNotFound`` when there is no such file and
        ``BenchManifestInvalid`` (with every problem, line and column) when its
        bytes, TOML syntax or schema are wrong, or when it is not a regular
        file of at most 16 MiB (see :func:`read_manifest_bytes`). Always
        validates; :func:`load_manifest_cached` answers from the cache of
        validated manifests instead.
        """
        file = Path(path).absolute()
        return cls.from_bytes(read_manifest_bytes(file), file)

    @classmethod
    def discover(cls, start: Path | str = ".") -> BenchManifest:
        """Read the nearest ``bench.toml`` in ``start`` or one of its parents.

        Raises ``BenchManifestNotFound`` naming ``start/bench.toml`` when there
        is none, and ``BenchManifestInvalid`` as :meth:`load` does.
        """
        return cls.load(find_manifest(Path(start)))

    @classmethod
    def from_bytes(cls, data: bytes, path: Path) -> BenchManifest:
        """Validate manifest ``data`` as if read from ``path``.

        Whatever ``data`` holds, this returns a manifest or raises
        ``BenchManifestInvalid`` whose problems each have a line and column
        (1-based): bytes over 16 MiB, bad UTF-8, TOML syntax, nesting deeper
        than 32, a dotted key of more than 32 parts, an integer beyond 64
        bits, and every schema problem. No other exception escapes.
        """
        return _parse(data, path)

    @classmethod
    def trusted(cls, path: Path, entries: dict[str, ManifestEntry]) -> BenchManifest:
        """Return a manifest of already-validated ``entries``, as if read from ``path``.

        No validation runs: the caller vouches for the entries (``check``'s
        workers, which receive entries its static pass validated). Positions
        are unknown, so :meth:`position` answers ``(1, 1)``.
        """
        manifest = cls.model_construct(
            schema_version=SUPPORTED_SCHEMA_VERSIONS[-1], task_classes=entries
        )
        manifest._path = path
        return manifest

    @classmethod
    def _from_cache(cls, entry: _disk_cache.Entry, data: bytes, path: Path) -> BenchManifest:
        """Return the manifest that ``entry``, the cache entry of ``data``, describes.

        ``path`` is where ``data`` was read from.
        """
        manifest = cls.model_construct(schema_version=entry.schema_version, task_classes={})
        del _INSTANCE_DICT.__get__(manifest)["task_classes"]
        _object_setattr(manifest, "__pydantic_fields_set__", {"schema_version", "task_classes"})
        manifest._path = path
        manifest._served = _Served(entry, data)
        return manifest

    # -- what it says -------------------------------------------------------

    @property
    def path(self) -> Path:
        """The file this manifest was read from (``./bench.toml`` if built in memory)."""
        return self._path if self._path is not None else Path(MANIFEST_NAME).absolute()

    @property
    def directory(self) -> Path:
        """The directory relative roots are resolved against."""
        return self.path.parent

    def slugs(self) -> tuple[str, ...]:
        """Return the declared slugs, in file order."""
        served = self._lazy()
        if served is not None:
            try:
                return served.entry.slugs()
            except _disk_cache.Damaged:
                self._materialize(_INSTANCE_DICT.__get__(self))
        return tuple(self.task_classes)

    def __iter__(self) -> Iterator[tuple[str, ManifestEntry]]:  # type: ignore[override]
        """Iterate over ``(slug, entry)`` pairs, in file order."""
        return iter(self.task_classes.items())

    def __contains__(self, slug: object) -> bool:
        served = self._lazy()
        if served is not None and type(slug) is str:
            try:
                return served.entry_of(slug) is not None
            except _disk_cache.Damaged:
                self._materialize(_INSTANCE_DICT.__get__(self))
        return slug in self.task_classes

    def entry(self, slug: str) -> ManifestEntry:
        """Return the entry of ``slug``.

        Raises ``TaskClassNotFound`` with the closest declared slugs as
        suggestions when the manifest does not declare it.
        """
        served = self._lazy()
        if served is not None and type(slug) is str:
            try:
                found = served.entry_of(slug)
                if found is not None:
                    return found
                names = served.entry.slugs()
                suggestions = served.suggestions(slug, names)
            except _disk_cache.Damaged:
                self._materialize(_INSTANCE_DICT.__get__(self))
            else:
                raise TaskClassNotFound(
                    slug,
                    looked_up_in=str(self.path),
                    available_names=names,
                    suggestions=suggestions,
                )
        try:
            return self.task_classes[slug]
        except KeyError:
            names = self.slugs()
            raise TaskClassNotFound(
                slug,
                looked_up_in=str(self.path),
                available_names=names,
                suggestions=closest(slug, names),
            ) from None

    def root_dir(self, slug: str) -> Path:
        """Return the root directory of ``slug``, absolute but not resolved."""
        return self.directory / self.entry(slug).root

    def position(self, *key: str | int) -> tuple[int, int]:
        """Return the (line, column) where ``key`` (or its nearest parent) is written.

        ``manifest.position("task-classes", "foo")`` is the line of
        ``[task-classes.foo]``. Returns ``(1, 1)`` for a manifest built in memory.
        """
        private = self.__pydantic_private__
        served: _Served | None = private["_served"] if private is not None else None
        if served is not None:
            try:
                return served.find(key)
            except _disk_cache.Damaged:
                self._materialize(_INSTANCE_DICT.__get__(self))
                if self._served is not None:  # built before the damage was found
                    self._fall_back(self._served)
        if self._positions is None:
            if self._text is None:
                return (1, 1)
            self._positions = TomlPositions(self._text)
        return self._positions.find(key)

    def to_toml(self) -> str:
        """Return the manifest as TOML text (without comments)."""
        import tomli_w  # noqa: PLC0415 - only writers need it

        return tomli_w.dumps(self.model_dump(by_alias=True))


_INSTANCE_DICT: Final[Any] = BaseModel.__dict__["__dict__"]
_object_setattr: Final = object.__setattr__


def _trusted_entry(module: str, root: str) -> ManifestEntry:
    """Return the ``ManifestEntry`` that validating ``{module, root}`` gives, without validating.

    For entries read back from the cache, which only ever holds entries that
    validated: the same fields, fields set, extra and private state as a
    validated one, at a fraction of the cost (a manifest may hold 100,000).
    """
    entry = ManifestEntry.__new__(ManifestEntry)
    _object_setattr(entry, "__dict__", {"module": module, "root": root})
    _object_setattr(entry, "__pydantic_fields_set__", {"module", "root"})
    _object_setattr(entry, "__pydantic_extra__", None)
    _object_setattr(entry, "__pydantic_private__", None)
    return entry


def _find(
    key: KeyPath,
    version_at: Position,
    table_at: Position,
    record: _disk_cache.Positions | None,
) -> Position:
    """Answer :meth:`TomlPositions.find` for a valid manifest from what the cache keeps.

    A valid manifest writes ``schema-version``, ``task-classes``, and per slug
    its table, ``module`` and ``root``: the longest of those that ``key``
    starts with is where ``key`` is (``record`` being the positions of
    ``key[1]`` when that is a declared slug).
    """
    if not key:
        return (1, 1)
    if key[0] == "task-classes":
        if record is None or len(key) < 2:
            return table_at
        if len(key) >= 3 and key[2] == "module":
            return (record[2], record[3])
        if len(key) >= 3 and key[2] == "root":
            return (record[4], record[5])
        return (record[0], record[1])
    if key[0] == "schema-version":
        return version_at
    return (1, 1)


@final
class _KnownPositions:
    """Every position a valid manifest has, held in memory (a pickled cached manifest)."""

    def __init__(
        self,
        version_at: Position,
        table_at: Position,
        records: dict[str, _disk_cache.Positions],
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

    __slots__ = ("data", "entry", "made")

    def __init__(self, entry: _disk_cache.Entry, data: bytes) -> None:
        self.entry = entry
        self.data = data
        # Entries built so far, by slug: each slug gets one object, whoever asks.
        self.made: dict[str, ManifestEntry] = {}

    # Shared by copies: it describes bytes that never change.
    def __copy__(self) -> _Served:
        return self

    def __deepcopy__(self, memo: dict[int, object]) -> _Served:
        return self

    def __reduce__(self) -> tuple[Any, ...]:
        msg = "a manifest's cache entry is an open file; pickle the manifest instead"
        raise TypeError(msg)

    @property
    def digest(self) -> str:
        """The digest of the manifest's bytes."""
        return self.entry.digest

    def close(self) -> None:
        """Close the entry's file."""
        self.entry.close()

    def entry_of(self, slug: str) -> ManifestEntry | None:
        """Return the entry of ``slug``, ``None`` when the manifest does not declare it."""
        made = self.made.get(slug)
        if made is not None:
            return made
        record = self.entry.record(slug)
        if record is None:
            return None
        return self.made.setdefault(slug, _trusted_entry(record[0], record[1]))

    def all_entries(self) -> dict[str, ManifestEntry]:
        """Return every entry, in file order (reads every block of the cache entry)."""
        records = self.entry.records()
        made = self.made
        entries = {}
        for slug in self.entry.slugs():
            found = made.get(slug)
            if found is None:
                module, root, _ = records[slug]
                found = made.setdefault(slug, _trusted_entry(module, root))
            entries[slug] = found
        return entries

    def suggestions(self, slug: str, names: tuple[str, ...]) -> tuple[str, ...]:
        """Return what :func:`closest` suggests for ``slug`` among ``names`` (every slug)."""
        if len(names) <= SHORTLIST_SIZE or not self.entry.has_grams():
            return closest(slug, names)
        normalized = suggestion_key(slug)
        return rank(normalized, self.entry.shortlist(normalized, SHORTLIST_SIZE))

    def find(self, key: KeyPath) -> Position:
        """Where ``key`` (or its nearest parent) is written, as :meth:`TomlPositions.find`."""
        version_at, table_at = self.entry.globals
        slug = key[1] if len(key) > 1 else None
        record = self.entry.record(slug) if isinstance(slug, str) else None
        return _find(key, version_at, table_at, None if record is None else record[2])

    def known_positions(self) -> _KnownPositions:
        """Every position, read into memory."""
        version_at, table_at = self.entry.globals
        records = {slug: record[2] for slug, record in self.entry.records().items()}
        return _KnownPositions(version_at, table_at, records)


# -- reading, with every problem located ------------------------------------

_TYPE_NAMES: Final = {
    str: "a string",
    int: "an integer",
    float: "a float",
    bool: "a boolean",
    dict: "a table",
    list: "an array",
}
_EXPECTED: Final = {
    "string_type": "a string",
    "int_type": "an integer",
    "dict_type": "a table",
    "model_type": "a table",
    "model_attributes_type": "a table",
}


def _toml_type(value: object) -> str:
    for kind, name in _TYPE_NAMES.items():
        if type(value) is kind:
            return name
    return "a date or time" if value is not None else "nothing"


_KEY_ESCAPES: Final = {"\b": "\\b", "\t": "\\t", "\n": "\\n", "\f": "\\f", "\r": "\\r"}


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
        elif re.fullmatch(r"[A-Za-z0-9_-]+", text):
            rendered.append(text)
        else:
            quoted = text.replace("\\", "\\\\").replace('"', '\\"')
            rendered.append('"' + _CONTROL.sub(_escape_control, quoted) + '"')
    return ".".join(rendered).replace(".[", "[")


def _known_keys(path: KeyPath) -> tuple[str, ...]:
    if len(path) == 1:
        return ("schema-version", "task-classes")
    if len(path) == 3 and path[0] == "task-classes":
        return ("module", "root")
    return ()


def _close_key(loc: KeyPath) -> str | None:
    """Return the known key that the unknown key at ``loc`` is a misspelling of, if any."""
    close = difflib.get_close_matches(str(loc[-1]), _known_keys(loc), n=1, cutoff=0.6)
    return close[0] if close else None


def _misspelt_required_keys(errors: list[Any]) -> set[tuple[object, ...]]:
    """Return the locations of missing keys that an unknown key of their table misspells.

    ``modul = "…"`` in an entry is one problem (an unknown key, "did you mean
    'module'?"), not two: the "missing required key 'module'" it causes is
    left out.
    """
    misspelt: set[tuple[object, ...]] = set()
    for error in errors:
        loc = tuple(error["loc"])
        if error["type"] == "extra_forbidden" and loc:
            close = _close_key(loc)
            if close is not None:
                misspelt.add((*loc[:-1], close))
    return misspelt


def _problem_from_pydantic(error: Any, positions: TomlPositions) -> ManifestProblem | None:
    kind: str = error["type"]
    loc: KeyPath = tuple(error["loc"])
    slug = loc[1] if len(loc) > 1 and loc[0] == "task-classes" else None
    slug = slug if isinstance(slug, str) else None
    if kind == "duplicate_module":
        return None  # reported by _duplicate_problems, with positions
    message: str = error["msg"]
    if len(loc) > 1 and loc[-1] == "[key]" and kind not in {"extra_forbidden", "missing"}:
        loc = loc[:-1]  # pydantic's marker for a bad key (a slug): the key's own table
    if kind == "module_outside_root":
        loc = (*loc, "module")
    if kind == "missing":
        where = positions.find(loc[:-1]) if len(loc) > 1 else (1, 1)
        key = render_key(loc[:-1]) if len(loc) > 1 else ""
        return ManifestProblem(*where, key, f"missing required key {loc[-1]!r}", slug=slug)
    if kind == "extra_forbidden" and loc:
        name = str(loc[-1])
        message = f"unknown key {name!r}"
        close = _close_key(loc)
        message += f"; did you mean {close!r}?" if close else ""
        known = _known_keys(loc)
        if known and not close:
            message += f" (expected {', '.join(repr(k) for k in known)})"
    elif kind in _EXPECTED:
        message = f"expected {_EXPECTED[kind]}, got {_toml_type(error.get('input'))}"
    return ManifestProblem(*positions.find(loc), render_key(loc), message, slug=slug)


def _duplicate_modules(entries: Mapping[str, object]) -> list[tuple[str, str, str]]:
    """Return ``(slug, module, first_slug)`` for every entry reusing a module."""
    first_by_module: dict[str, str] = {}
    duplicates = []
    for slug, entry in entries.items():
        module = entry.module if isinstance(entry, ManifestEntry) else None
        if isinstance(entry, Mapping):
            module = entry.get("module")
        if not isinstance(module, str):
            continue
        first = first_by_module.setdefault(module, slug)
        if first != slug:
            duplicates.append((slug, module, first))
    return duplicates


def _duplicate_problems(
    raw: Mapping[str, object], positions: TomlPositions, limit: int
) -> tuple[list[ManifestProblem], int]:
    """Return the first ``limit`` duplicate-module problems, and how many there are."""
    entries = raw.get("task-classes")
    if not isinstance(entries, Mapping):
        return [], 0
    problems = []
    duplicates = _duplicate_modules(entries)
    for slug, module, first in duplicates[:limit]:
        key: KeyPath = ("task-classes", slug, "module")
        problems.append(
            ManifestProblem(
                *positions.find(key),
                render_key(key),
                f"module {module!r} is already the module of {first!r}; "
                "each task class needs its own module",
                "duplicate-module",
                slug,
            )
        )
    return problems, len(duplicates)


def _file_problem(message: str) -> ManifestProblem:
    return ManifestProblem(1, 1, "", message, "syntax")


def _unreadable(path: Path, exc: TomlUnreadable) -> BenchManifestInvalid:
    """Return the manifest error for bytes the TOML reader refused, at the place it names."""
    return BenchManifestInvalid(
        path, (ManifestProblem(exc.line, exc.column, "", exc.message, "syntax"),)
    )


def _parse(data: bytes, path: Path) -> BenchManifest:
    if len(data) > MANIFEST_SIZE_LIMIT:
        message = f"the manifest is {len(data)} bytes; manifests over 16 MiB are not read"
        raise BenchManifestInvalid(path, (_file_problem(message),))
    try:
        text = decode_toml(data)
        raw = parse_plain(text)
        if raw is None:
            raw = load_toml(text)
    except TomlUnreadable as exc:
        raise _unreadable(path, exc) from None
    try:
        manifest = BenchManifest.model_validate(raw, by_alias=True, by_name=False)
    except ValidationError as exc:
        raise BenchManifestInvalid(path, _schema_problems(exc, raw, text)) from None
    manifest._path = path
    manifest._text = text
    return manifest


#: Problems listed at most: a file with more (a hostile or generated one) ends
#: its list with one problem saying how many more there are.
MAX_PROBLEMS: Final = 1000


def _schema_problems(
    exc: ValidationError, raw: dict[str, Any], text: str
) -> tuple[ManifestProblem, ...]:
    """Every schema problem of ``raw``, located in ``text`` — the first MAX_PROBLEMS of them."""
    positions = TomlPositions(text)
    total = exc.error_count()
    errors = None
    if total > MAX_PROBLEMS:
        # Converting a million pydantic errors takes seconds: list those of
        # the document's beginning, validated again on its own.
        try:
            BenchManifest.model_validate(
                _beginning(raw, 4 * MAX_PROBLEMS), by_alias=True, by_name=False
            )
        except ValidationError as cut:
            if cut.error_count() >= MAX_PROBLEMS:
                errors = cut.errors(include_url=False)
    if errors is None:
        errors = exc.errors(include_url=False)
    errors = errors[: 4 * MAX_PROBLEMS]  # in document order: enough to pick the first
    misspelt = _misspelt_required_keys(errors)
    problems = [
        problem
        for error in errors
        if not (error["type"] == "missing" and tuple(error["loc"]) in misspelt)
        and (problem := _problem_from_pydantic(error, positions)) is not None
    ]
    duplicates, duplicate_count = _duplicate_problems(raw, positions, MAX_PROBLEMS + 1)
    problems += duplicates
    problems.sort(key=lambda p: (p.line, p.column, p.key))
    if total <= MAX_PROBLEMS:  # every error was converted: count exactly
        total = len(problems) - len(duplicates)
    total += duplicate_count
    if total <= MAX_PROBLEMS:
        return tuple(problems)
    shown = problems[:MAX_PROBLEMS]
    first_unlisted = problems[MAX_PROBLEMS] if len(problems) > MAX_PROBLEMS else shown[-1]
    line, column = first_unlisted.line, first_unlisted.column
    more = total - MAX_PROBLEMS
    summary = f"and {more} more problem{'s' if more != 1 else ''}, not listed; fix these first"
    return (*shown, ManifestProblem(line, column, "", summary))


def _beginning(raw: dict[str, Any], budget: int) -> dict[str, Any]:
    """Return ``raw`` cut to about ``budget`` keys (known keys kept): its errors come first."""
    known = {"module", "root"}
    cut: dict[str, Any] = {}
    for key, value in raw.items():
        if key == "task-classes" and isinstance(value, dict):
            entries: dict[str, Any] = {}
            for slug, entry in value.items():
                if budget <= 0:
                    break
                budget -= 1
                if not isinstance(entry, dict):
                    entries[slug] = entry
                    continue
                entries[slug] = kept = {}
                for name, item in entry.items():
                    if name in known or budget > 0:
                        kept[name] = item
                        budget -= name not in known
            cut[key] = entries
        elif key == "schema-version" or budget > 0:
            budget -= key != "schema-version"
            cut[key] = value
    return cut


def read_manifest_bytes(path: Path | str) -> bytes:
    """Return the bytes of the manifest file at ``path``: the one way a manifest is read.

    Only a regular file (or a symbolic link to one) of at most 16 MiB is
    read. It is opened without blocking and checked on the open descriptor,
    so a FIFO never hangs the caller and a device is never read.

    Raises ``BenchManifestNotFound(path)`` when there is no such file, and
    ``BenchManifestInvalid(path, problems)`` with one problem at line 1 when
    the path is a directory, a FIFO, a device or a socket (the message says
    which), when the file is over 16 MiB (refused before reading), or when it
    cannot be read (permissions, I/O error).
    """
    return _read_manifest(Path(path))[0]


def _read_manifest(file: Path) -> tuple[bytes, os.stat_result]:
    try:
        return read_regular_file(str(file), MANIFEST_SIZE_LIMIT)
    except (FileNotFoundError, NotADirectoryError):
        raise BenchManifestNotFound(file, searched_parents=False) from None
    except FileRefused as exc:
        raise BenchManifestInvalid(file, (_file_problem(f"the file {exc.reason}"),)) from None
    except OSError as exc:
        reason = exc.strerror or type(exc).__name__
        raise BenchManifestInvalid(
            file, (_file_problem(f"cannot read the file: {reason}"),)
        ) from exc


def find_manifest(start: Path) -> Path:
    """Return the nearest ``bench.toml`` in ``start`` or its parents.

    Only a regular file (or a link to one) counts. When there is none, a
    ``bench.toml`` that is something else — a directory, a FIFO — is reported
    for what it is (the nearest such one, ``BenchManifestInvalid`` as
    :func:`read_manifest_bytes` words it); with no ``bench.toml`` of any kind,
    ``BenchManifestNotFound`` names ``start/bench.toml``, the first place looked.
    """
    first, found = find_manifest_path(str(start))
    if found is not None:
        return Path(found)
    directory = os.path.dirname(first)
    while True:
        candidate = os.path.join(directory, MANIFEST_NAME)
        if os.path.lexists(candidate):
            read_manifest_bytes(candidate)  # raises: it is no regular file
        parent = os.path.dirname(directory)
        if parent == directory:
            raise BenchManifestNotFound(Path(first))
        directory = parent


# -- the in-process cache, and the cache of validated manifests ---------------

_StatKey = tuple[int, int, int, int, int]


@final
class _Remembered:
    """A manifest read in this process: the file's stat when read, its digest, the manifest."""

    __slots__ = ("digest", "manifest", "settled", "stat")

    def __init__(self, stat: _StatKey, digest: str, settled: bool, manifest: BenchManifest) -> None:
        self.stat = stat
        self.digest = digest
        # Whether an unchanged stat proves unchanged bytes (see load_manifest_cached).
        self.settled = settled
        self.manifest = manifest


_cache: dict[str, _Remembered] = {}
#: Manifests remembered at once; a long-lived process loading from many roots
#: keeps the most recently read ones (design section 10).
_CACHE_SIZE: Final = 64
#: A file changed less than this long before it was read may be changed again
#: within the same tick of the file system's clock (a jiffy; 2 s on FAT)
#: without its stat changing: until then, its bytes are compared instead.
_RACY_SECONDS: Final = 3.0


def _stat_key(st: os.stat_result) -> _StatKey:
    return (st.st_ino, st.st_dev, st.st_size, st.st_mtime_ns, st.st_ctime_ns)


def load_manifest_cached(path: str) -> BenchManifest:
    """Like :meth:`BenchManifest.load` of the absolute ``path``, without validating it again.

    Two caches answer, and neither can change the answer:

    - in this process, the manifest last read from ``path`` is returned again
      (the same object) while the file's inode, size, modification and
      change times are those of the bytes last read (taken from the open
      file) — provided the file had not changed for 3 seconds when it was
      read; a file changed more recently could change again within the same
      tick of the file system's clock, so its bytes are read again and
      compared (by digest). At most 64 manifests are remembered.
    - otherwise the bytes are read (through :func:`read_manifest_bytes`'s
      checks) and looked up by their BLAKE2b digest in the user's cache of
      validated manifests, shared with ``codegenie-bench list``
      (:mod:`codegenie.eval._cache`, under ``$XDG_CACHE_HOME``). A hit
      answers without validating: the manifest reads its entries from the
      cache as they are asked for, one at a time, and equals — in every
      observable way — what validation would give. A miss validates, and a
      manifest that validates is written to that cache (an invalid one never
      is): the same ``BenchManifestNotFound`` or ``BenchManifestInvalid``,
      with the same problems and lines, as :meth:`BenchManifest.load`.
    """
    try:
        key = _stat_key(os.stat(path))
    except OSError:
        key = None
    hit = _cache.get(path)
    if hit is not None and hit.settled and hit.stat == key:
        return hit.manifest
    _cache.pop(path, None)
    file = Path(path).absolute()
    data, status = _read_manifest(file)
    digest = _disk_cache.digest(data)
    if hit is not None and hit.digest == digest:
        manifest = hit.manifest
    else:
        manifest = _from_cache_or_validated(data, digest, file)
    settled = time.time() - max(status.st_mtime, status.st_ctime) > _RACY_SECONDS
    while len(_cache) >= _CACHE_SIZE:
        del _cache[next(iter(_cache))]
    _cache[path] = _Remembered(_stat_key(status), digest, settled, manifest)
    return manifest


def _from_cache_or_validated(data: bytes, digest: str, path: Path) -> BenchManifest:
    """Return the manifest of ``data``: from the cache, else validated (then cached)."""
    entry = _disk_cache.open_entry(digest)
    if entry is not None:
        return BenchManifest._from_cache(entry, data, path)
    manifest = _parse(data, path)
    from codegenie.eval import _listing  # noqa: PLC0415 - only when writing the cache

    listing = (
        list(manifest.task_classes),
        [entry.module for entry in manifest.task_classes.values()],
        [entry.root for entry in manifest.task_classes.values()],
    )
    _listing.store(data, listing, version=manifest.schema_version)
    return manifest


def clear_manifest_cache() -> None:
    """Forget every manifest :func:`load_manifest_cached` remembers in this process."""
    _cache.clear()


def json_schema() -> dict[str, Any]:
    """Return the JSON Schema of ``bench.toml``, generated from the model."""
    schema = BenchManifest.model_json_schema(by_alias=True, mode="validation")
    # pydantic states the key pattern as patternProperties, which lets any key
    # that does not match through; editors should flag such keys as errors.
    task_classes = schema["properties"]["task-classes"]
    pattern, entry = task_classes.pop("patternProperties").popitem()
    task_classes["propertyNames"] = {"pattern": pattern, **task_classes["propertyNames"]}
    task_classes["additionalProperties"] = entry
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$id": "https://codegenie.dev/schemas/bench.schema.json",
        **schema,
    }
