"""``bench.toml``'s model: the schema, and validating bytes into it with every problem located.

The manifest is the one declarative list of task classes::

    #:schema ./docs/bench.schema.json
    schema-version = 1

    [task-classes.vuln-remediation]
    module = "bench.vuln_remediation.registration"
    root = "bench"

Validation turns every bad input (bad bytes, TOML syntax, schema violations)
into ``BenchManifestInvalid``, which lists *every* problem of the file with
its line and column. A document nested too deep, with a dotted key too long
or an integer beyond 64 bits is refused at its line before ``tomllib`` sees
it (:mod:`codegenie.eval._toml.limits`). Reading the file is
:mod:`codegenie.eval._manifest.read`'s; serving a manifest from the cache of
validated manifests is :mod:`codegenie.eval._cache`'s, which subclasses the
model rather than reaching into it.
"""

from __future__ import annotations

import difflib
import functools
import keyword
import re
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Annotated, Any, Final, Protocol, Self

from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Field,
    PrivateAttr,
    StrictStr,
    ValidationError,
    model_validator,
)
from pydantic_core import PydanticCustomError

from codegenie.eval._command import MAX_WORD_LENGTH, MAX_WORDS, RubricCommand, command_problem
from codegenie.eval._located import locate_errors, render_key
from codegenie.eval._manifest.read import file_problem, find_manifest, read_manifest_bytes
from codegenie.eval._paths import MANIFEST_NAME, MANIFEST_SIZE_LIMIT, fs_path
from codegenie.eval._toml.positions import (
    KeyPath,
    Position,
    TomlPositions,
    line_text,
    value_position,
)
from codegenie.eval._toml.read import TomlUnreadable, parse_toml
from codegenie.eval.codes import CODES
from codegenie.eval.errors import BenchManifestInvalid, ManifestProblem, TaskClassNotFound
from codegenie.eval.naming import (
    MAX_SLUG_LENGTH,
    RESERVED_SLUGS,
    SLUG_PATTERN,
    closest,
    slug_problem,
)

__all__ = (
    "MAX_PROBLEMS",
    "SUPPORTED_SCHEMA_VERSIONS",
    "BenchManifest",
    "ManifestEntry",
    "PositionFinder",
    "suggest_environment",
    "suggest_module",
    "suggest_python",
    "suggest_root",
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
_ENVIRONMENT_PATTERN: Final = rf"^({_ROOT_COMPONENT}/)*{_ROOT_COMPONENT}$"
#: The longest ``environment`` path: far beyond any real one, well within ``PATH_MAX``.
MAX_ENVIRONMENT_LENGTH: Final = 1024
#: A Python version an entry may ask for: ``3.12`` or ``3.12.1``. The same as
#: :data:`codegenie.eval._env.python.VERSION_PATTERN` (a test holds them
#: equal), which this layer, beneath ``_env``, cannot import.
PYTHON_VERSION_PATTERN: Final = r"^3\.[0-9]{1,3}(\.[0-9]{1,3})?$"
_PYTHON_VERSION: Final = re.compile(PYTHON_VERSION_PATTERN)
# What a curator may write around a version: "python3.12", "cpython-3.12", "==3.12", "v3.12".
_PYTHON_SPELLED: Final = re.compile(
    r"\s*(?:c?python|py|v|==)?\s*-?\s*(3\.[0-9]{1,3}(?:\.[0-9]{1,3})?)\s*", re.IGNORECASE
)
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


def _relative_path_problem(value: str) -> str | None:
    """Why ``value`` is no relative, normalized POSIX path inside the manifest's directory."""
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
    return None


@functools.lru_cache(maxsize=1024)
def _root_problem(value: str) -> str | None:
    # Cached: a manifest repeats a handful of roots across all its entries.
    problem = _relative_path_problem(value)
    if problem is not None:
        return problem
    parts = value.split("/")
    problem = _identifier_problem(parts[-1])
    if problem is not None:
        return f"must end in a directory named like a Python package; {parts[-1]!r} {problem}"
    return None


def suggest_root(value: str) -> str | None:
    r"""Return the root a curator most likely meant by ``value``, when it differs and is valid.

    Normalised as a POSIX path: ``./bench``, ``bench/`` and ``bench//x`` mean
    ``bench`` and ``bench/x``; ``bench\x`` means ``bench/x``. An absolute
    path or one with ``..`` names another directory: nothing is suggested.
    """
    slashed = value.replace("\\", "/")
    if slashed.startswith("/") or ".." in slashed.split("/") or '"' in value:
        return None
    normal = "/".join(part for part in slashed.split("/") if part not in {"", "."})
    return normal if normal and normal != value and _root_problem(normal) is None else None


def _normal_path(value: str) -> str | None:
    r"""Return ``value`` as a normalized relative POSIX path, ``None`` if it names another place."""
    slashed = value.strip().replace("\\", "/")
    if slashed.startswith("/") or ".." in slashed.split("/") or '"' in value:
        return None
    return "/".join(part for part in slashed.split("/") if part not in {"", "."})


def _environment_problem(value: str) -> str | None:
    if len(value) > MAX_ENVIRONMENT_LENGTH:
        return f"is {len(value)} characters long; at most {MAX_ENVIRONMENT_LENGTH} are allowed"
    return _relative_path_problem(value)


def suggest_environment(value: str) -> str | None:
    r"""Return the environment file a curator most likely meant by ``value``, when it differs.

    Normalised as a POSIX path, as :func:`suggest_root` does: ``./envs/a.txt``
    and ``envs\a.txt`` mean ``envs/a.txt``. Nothing is suggested for an
    absolute path or one with ``..``: it names a file elsewhere.
    """
    normal = _normal_path(value)
    if not normal or normal == value or _environment_problem(normal) is not None:
        return None
    return normal


def suggest_python(value: str) -> str | None:
    """Return the version a curator most likely meant by ``value`` (``python3.12``: ``3.12``).

    ``None`` when ``value`` is already a version, or holds none.
    """
    found = _PYTHON_SPELLED.fullmatch(value)
    if found is None or found.group(1) == value:
        return None
    return found.group(1)


def suggest_module(value: str) -> str | None:
    """Return the module a curator most likely meant by ``value``, when it differs and is valid.

    Hyphens become underscores (``bench.alpha-one.registration`` means
    ``bench.alpha_one.registration``, the identifier of the slug), a file
    path becomes a dotted name, and a missing ``.registration`` is added.
    """
    normal = value.strip().removesuffix(".py").replace("/", ".").replace("-", "_")
    if normal.count(".") == 1:
        normal += ".registration"
    if normal == value or '"' in normal:
        return None
    try:
        _check_module(normal)
    except PydanticCustomError:
        return None
    return normal


def _check_root(value: str) -> str:
    problem = _root_problem(value)
    if problem is not None:
        raise _fail("root_syntax", f"root {value!r} {problem}")
    return value


def _check_environment(value: str | None) -> str | None:
    if value is None:
        return None
    problem = _environment_problem(value)
    if problem is not None:
        shown = value if len(value) <= 80 else value[:77] + "..."
        raise _fail("environment_syntax", f"environment {shown!r} {problem}")
    return value


def _check_python(value: str | None) -> str | None:
    if value is not None and _PYTHON_VERSION.fullmatch(value) is None:
        shown = value if len(value) <= 40 else value[:37] + "..."
        raise _fail(
            "python_syntax",
            f'python {shown!r} is not a version: write "3.12" (any 3.12) or "3.12.1" (exactly)',
        )
    return value


def _check_command(value: tuple[str, ...] | None) -> tuple[str, ...] | None:
    if value is None:
        return None
    problem = command_problem(value)
    if problem is not None:
        raise _fail("command_syntax", f"command {problem}")
    return value


def _optional_command(schema: dict[str, Any]) -> None:
    """State the schema of ``command``: an array of words, and no ``null`` default."""
    schema.pop("default", None)
    schema.pop("anyOf", None)
    schema.update(
        type="array",
        items={"type": "string", "minLength": 1, "maxLength": MAX_WORD_LENGTH},
        minItems=1,
        maxItems=MAX_WORDS,
    )


def _check_accept(value: tuple[str, ...]) -> tuple[str, ...]:
    for code in value:
        if code not in CODES:
            close = difflib.get_close_matches(code, CODES, n=1, cutoff=0.6)
            meant = f"; did you mean {close[0]!r}?" if close else ""
            raise _fail("accept_code", f"unknown check code {code!r}{meant}")
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


def _optional_string(**rules: object) -> Callable[[dict[str, Any]], None]:
    """Return what states an optional string key's schema: ``rules``, and no ``null`` default.

    TOML has no null: an optional key is one that may be left out.
    """

    def state(schema: dict[str, Any]) -> None:
        schema.pop("default", None)
        schema.pop("anyOf", None)
        schema.update(type="string", **rules)

    return state


class PositionFinder(Protocol):
    """Anything that says where a key of the manifest (or its nearest parent) is written."""

    def find(self, key: KeyPath) -> Position:
        """Return the (line, column) of ``key``, or of its nearest written parent."""
        ...


class ManifestEntry(BaseModel):
    """One task class of the manifest: the module that registers it and its root.

    ``module`` is ``<root package>.<package…>.registration`` and its first part
    is the last component of ``root``; ``root`` is a relative POSIX path from
    the manifest's directory that stays inside it. ``accept`` lists the check
    codes accepted for it. ``environment`` (``None``: the harness's own) is
    the requirements file of its own environment, a relative, normalized
    POSIX path from the manifest's directory that stays inside it (any file
    name); ``python`` (``None``: the harness's own) the version of that
    environment's Python, ``3.12`` or ``3.12.1``. Whether the file and the
    Python exist is ``check``'s to say, not the model's. ``command``
    (``None``: the rubric protocol's, ``{python} {rubric} {case}
    {candidate}``) is the rubric's command, its words with placeholders
    (:mod:`codegenie.eval._command`).
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
    accept: Annotated[
        tuple[str, ...],
        AfterValidator(_check_accept),
        Field(
            strict=False,  # a TOML array is a list; its items stay strictly strings
            description="Check codes accepted for this task class: `check` does not report "
            "them for it, and reports unused-ignore when one no longer occurs.",
            json_schema_extra={"items": {"enum": list(CODES)}, "uniqueItems": True},
        ),
    ] = ()
    environment: Annotated[
        str | None,
        AfterValidator(_check_environment),
        Field(
            description="Requirements file (pip's format) of the task class's own environment, "
            "relative to the manifest; built with `codegenie-bench env build`, used to run its "
            "rubric. Default: the harness's own environment.",
            json_schema_extra=_optional_string(
                pattern=_ENVIRONMENT_PATTERN, minLength=1, maxLength=MAX_ENVIRONMENT_LENGTH
            ),
        ),
    ] = None
    python: Annotated[
        str | None,
        AfterValidator(_check_python),
        Field(
            description='Python version of the task class\'s environment, as a string: "3.12" '
            '(any 3.12) or "3.12.1" (exactly); the machine must have it. Default: the '
            "harness's own.",
            json_schema_extra=_optional_string(pattern=PYTHON_VERSION_PATTERN),
        ),
    ] = None
    command: Annotated[
        # A TOML array is a list; its items stay strictly strings.
        Annotated[tuple[StrictStr, ...], Field(strict=False)] | None,
        AfterValidator(_check_command),
        Field(
            description="The rubric's command: its words, with the placeholders {python} (the "
            "task class's interpreter, started with -B; only as the first word), {rubric} (its "
            "rubric file), {case} and {candidate} (the run's copies, both required). Default: "
            '["{python}", "{rubric}", "{case}", "{candidate}"].',
            json_schema_extra=_optional_command,
        ),
    ] = None

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
    def rubric_command(self) -> RubricCommand:
        """The rubric's command: the declared ``command``, else the rubric protocol's."""
        return RubricCommand() if self.command is None else RubricCommand(self.command)

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
    _positions: PositionFinder | None = PrivateAttr(default=None)

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

    def __eq__(self, other: object) -> bool:
        """Equal: a manifest read from the same path, declaring the same task classes.

        A manifest served from the cache equals the one validation gives for
        the same bytes.
        """
        if not isinstance(other, BaseModel):
            return NotImplemented
        if not isinstance(other, BenchManifest):
            return False
        if other is self:
            return True
        return (
            self._path == other._path
            and self.schema_version == other.schema_version
            and self.task_classes == other.task_classes
        )

    # A mapping of task classes is no dictionary key (as when this was pydantic's).
    __hash__ = None  # type: ignore[assignment]

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
        return parse_manifest(data, path)

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
        return tuple(self.task_classes)

    def __iter__(self) -> Iterator[tuple[str, ManifestEntry]]:  # type: ignore[override]
        """Iterate over ``(slug, entry)`` pairs, in file order."""
        return iter(self.task_classes.items())

    def __contains__(self, slug: object) -> bool:
        return slug in self.task_classes

    def entry(self, slug: str) -> ManifestEntry:
        """Return the entry of ``slug``.

        Raises ``TaskClassNotFound`` with the closest declared slugs as
        suggestions when the manifest does not declare it.
        """
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
        return self.directory / fs_path(self.entry(slug).root)

    def position(self, *key: str | int) -> tuple[int, int]:
        """Return the (line, column) where ``key`` (or its nearest parent) is written.

        ``manifest.position("task-classes", "foo")`` is the line of
        ``[task-classes.foo]``. Returns ``(1, 1)`` for a manifest built in memory.
        """
        if self._positions is None:
            if self._text is None:
                return (1, 1)
            self._positions = TomlPositions(self._text)
        return self._positions.find(key)

    def value_position(self, *key: str | int) -> tuple[int, int]:
        """Return the (line, column) where the value of the key at ``key`` starts.

        Where a problem with that value is reported (``root = "bnch"``: at the
        ``"``); :meth:`position`'s answer when ``key`` has no value of its own
        (a table) or the manifest has no text.
        """
        at = self.position(*key)
        line = self._line_text(at[0])
        found = value_position(line, at) if line is not None else None
        return found if found is not None else at

    def _line_text(self, number: int) -> str | None:
        """Return the text of line ``number`` of the manifest, when it was read from text."""
        return line_text(self._text, number) if self._text is not None else None

    def to_toml(self) -> str:
        """Return the manifest as TOML text (without comments)."""
        import tomli_w  # noqa: PLC0415 - only writers need it

        # TOML has no null: a key left at None is left out.
        return tomli_w.dumps(self.model_dump(by_alias=True, exclude_none=True))


# -- validating, with every problem located ----------------------------------


def _known_keys(loc: KeyPath) -> tuple[str, ...]:
    """Return the keys the table holding ``loc[-1]`` may have."""
    if len(loc) == 1:
        return ("schema-version", "task-classes")
    if len(loc) == 3 and loc[0] == "task-classes":
        return ("module", "root", "accept", "environment", "python", "command")
    return ()


def _slug_of(loc: KeyPath) -> str | None:
    """Return the slug a problem at ``loc`` belongs to, if it belongs to one."""
    slug = loc[1] if len(loc) > 1 and loc[0] == "task-classes" else None
    return slug if isinstance(slug, str) else None


def _manifest_errors(
    errors: list[Any], literal: Callable[[KeyPath], str | None] | None = None
) -> Iterator[Any]:
    """Pydantic's errors as the manifest locates them: a module's root problem at ``module``.

    Duplicate modules are left out: :func:`_duplicate_problems` reports each
    with its own position. ``literal(loc)`` is the value at ``loc`` as the
    file writes it, when known: ``python = 3.10`` suggests ``"3.10"``, not
    the float's ``3.1``.
    """
    for error in errors:
        kind, value = error["type"], error.get("input")
        if kind == "duplicate_module":
            continue
        if kind == "module_outside_root":
            yield {**error, "loc": (*error["loc"], "module")}
        elif kind in _SUGGESTERS and isinstance(value, str):
            key, suggest = _SUGGESTERS[kind]
            meant = suggest(value)
            suffix = f'; did you mean {key} = "{meant}"?' if meant is not None else ""
            yield {**error, "msg": error["msg"] + suffix}
        elif kind == "string_type" and _is_python_key(error["loc"]) and _is_number(value):
            meant = _python_meant(value, literal(tuple(error["loc"])) if literal else None)
            yield {**error, "suffix": f'; did you mean python = "{meant}"?' if meant else ""}
        else:
            yield error


def _is_python_key(loc: KeyPath) -> bool:
    return len(loc) == 3 and loc[0] == "task-classes" and loc[2] == "python"


def _is_number(value: object) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _python_meant(value: float, written: str | None) -> str | None:
    """Return the version a number written for ``python`` means, as a string, if it is one."""
    for text in (written, repr(value)):
        if text is not None and _PYTHON_VERSION.fullmatch(text):
            return text
    return None


#: A number as TOML writes it, at the start of a value.
_NUMBER: Final = re.compile(r"[0-9][0-9._eE+-]*")


def _written_value(text: str, positions: TomlPositions) -> Callable[[KeyPath], str | None]:
    """Return what finds the number a key's value starts with, as ``text`` writes it."""

    def written(loc: KeyPath) -> str | None:
        line, column = positions.find_value(loc)
        found = line_text(text, line)
        number = _NUMBER.match(found, column - 1) if found is not None else None
        return number.group() if number is not None else None

    return written


#: The error types whose value has a likely meaning, with the key and the function that finds it.
_SUGGESTERS: Final[dict[str, tuple[str, Callable[[str], str | None]]]] = {
    "root_syntax": ("root", suggest_root),
    "module_syntax": ("module", suggest_module),
    "environment_syntax": ("environment", suggest_environment),
    "python_syntax": ("python", suggest_python),
}


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
                *positions.find_value(key),
                render_key(key),
                f"module {module!r} is already the module of {first!r}; "
                "each task class needs its own module",
                "duplicate-module",
                slug,
            )
        )
    return problems, len(duplicates)


def _unreadable(path: Path, exc: TomlUnreadable) -> BenchManifestInvalid:
    """Return the manifest error for bytes the TOML reader refused, at the place it names."""
    return BenchManifestInvalid(
        path, (ManifestProblem(exc.line, exc.column, "", exc.message, "syntax"),)
    )


def parse_manifest(data: bytes, path: Path) -> BenchManifest:
    """Validate manifest ``data`` read from ``path``: :meth:`BenchManifest.from_bytes`."""
    if len(data) > MANIFEST_SIZE_LIMIT:
        message = f"the manifest is {len(data)} bytes; manifests over 16 MiB are not read"
        raise BenchManifestInvalid(path, (file_problem(message),))
    try:
        text, raw = parse_toml(data)
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
    problems = [
        ManifestProblem(
            problem.line, problem.column, problem.key, problem.message, slug=_slug_of(problem.loc)
        )
        for problem in locate_errors(
            _manifest_errors(errors, _written_value(text, positions)),
            positions.find,
            _known_keys,
            find_value=positions.find_value,
        )
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
