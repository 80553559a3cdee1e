"""The settings of check and grade: ``[tool.codegenie-bench]``, then the command line.

A bench repository writes the options it always wants once, where ruff and
pytest users look for them: the ``[tool.codegenie-bench]`` table of the
nearest ``pyproject.toml`` that has one, at or above the manifest's
directory (a ``pyproject.toml`` without the table is passed over, as ruff and
pytest do). The file is read under the manifest's reading rules
(:func:`codegenie.eval._toml.read.parse_toml`: bounded, every failure
located) and validated by a frozen, closed model; every problem is reported
with its line, column and (for a misspelt key) the key it probably meant.
What the command line gives wins over the file; :func:`resolve` says where
each value in force came from, and builds, once, the frozen :class:`Options`
the command reads them from (mypy's ``Options``). A command reads the whole
table (a broken table is the same mistake in every command that reads it)
but puts in force only the settings it uses: ``grade`` uses ``jobs``,
``sandbox``, ``executor`` and ``format``, and passes over a ``format`` it
does not write.

Each setting and its default are declared once, in the settings table
(:data:`codegenie.eval._setting_table.SETTINGS`); :class:`Options` types
them (its fields and defaults are the table's, which importing this module
checks), and the file's model (:class:`SettingsFile`) has the same keys,
each optional, with what a value must be.
"""

from __future__ import annotations

import difflib
from collections.abc import Collection, Iterable, Mapping
from dataclasses import dataclass, fields
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, Final, Literal, final

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, ValidationError

from codegenie.eval._exec import executor_kinds
from codegenie.eval._located import locate_errors
from codegenie.eval._paths import MANIFEST_SIZE_LIMIT, FileRefused, read_regular_file
from codegenie.eval._reports.formats import NAMES
from codegenie.eval._sandbox.choices import SandboxChoice
from codegenie.eval._setting_table import SETTINGS, defaults
from codegenie.eval._toml.positions import TomlPositions
from codegenie.eval._toml.read import TomlUnreadable, parse_toml
from codegenie.eval.codes import CODES
from codegenie.eval.errors import ManifestProblem, SettingsInvalid

__all__ = (
    "DEFAULTS",
    "TABLE",
    "FileSettings",
    "Options",
    "Setting",
    "Settings",
    "SettingsFile",
    "find_settings",
    "load_settings",
    "parse_codes",
    "resolve",
    "unknown_code",
)

#: The table's key path in ``pyproject.toml``.
TABLE: Final = ("tool", "codegenie-bench")
_FILE_NAME: Final = "pyproject.toml"


def unknown_code(code: str) -> str:
    """Return the message for a code that is not in the code table, with the closest code."""
    close = difflib.get_close_matches(code, CODES, n=1, cutoff=0.6)
    message = f"unknown check code {code!r}"
    return f"{message}; did you mean {close[0]!r}?" if close else message


def _known_codes(codes: list[str]) -> list[str]:
    for code in codes:
        if code not in CODES:
            raise ValueError(unknown_code(code))
    return codes


Codes = Annotated[list[str], AfterValidator(_known_codes)]


def _known_selectors(selectors: list[str]) -> list[str]:
    from codegenie.eval.check.exploit_choice import selector_problem  # noqa: PLC0415 - start-up: only a table that selects exploits pays for the catalogue

    for selector in selectors:
        problem = selector_problem(selector)
        if problem is not None:
            raise ValueError(problem)
    return selectors


Selectors = Annotated[list[str], AfterValidator(_known_selectors)]

if TYPE_CHECKING:
    FormatName = str
    ExecutorName = str
else:  # the names of the table of report formats, validated (and refused) as a Literal
    FormatName = Literal[NAMES]
    # and the registered executors' names, the same way
    ExecutorName = Literal[tuple(kind.name for kind in executor_kinds())]


@final
class SettingsFile(BaseModel):
    """The ``[tool.codegenie-bench]`` table: every key optional, none other allowed."""

    model_config = ConfigDict(frozen=True, extra="forbid", strict=True)

    select: Codes | None = None
    ignore: Codes | None = None
    strict: bool | None = None
    jobs: Annotated[int, Field(ge=1)] | None = None
    timeout: Annotated[float, Field(gt=0)] | None = None
    repeat: Annotated[int, Field(ge=1)] | None = None
    exploits: Selectors | None = None
    ignore_exploits: Selectors | None = Field(None, alias="ignore-exploits")
    sandbox: SandboxChoice | None = None
    executor: ExecutorName | None = None
    format: FormatName | None = None


@final
@dataclass(frozen=True, slots=True)
class Options:
    """The settings in force for one command: the command line's, else the file's, else the default.

    Built once, by :func:`resolve`; the command reads its settings from it
    and from nowhere else. ``select``: the check codes reported (``None``:
    every code); ``ignore``: the codes never reported; ``strict``: warnings
    fail ``check`` too; ``jobs``: processes or rubrics at once (``None``: the
    number of CPUs); ``timeout``: seconds one registration's import may take
    (``check``'s import timeout); ``repeat``: runs of each side of a case
    under ``check --rubrics``; ``exploits``: the exploits its cheat run
    runs (``None``: every one), ``ignore_exploits`` those it never runs
    (selectors: :mod:`codegenie.eval.check.exploit_choice`); ``sandbox``:
    where rubrics run; ``executor``:
    what makes the runs (``local``: this machine's threads; ``ray``: a Ray
    cluster); ``format``:
    the output format.
    """

    select: tuple[str, ...] | None = None
    ignore: tuple[str, ...] = ()
    strict: bool = False
    jobs: int | None = None
    timeout: float = 60.0  # check.DEFAULT_TIMEOUT, which a test holds it equal to
    repeat: int = 1
    exploits: tuple[str, ...] | None = None
    ignore_exploits: tuple[str, ...] = ()
    sandbox: str = "auto"
    executor: str = "local"
    format: str = "text"

    @classmethod
    def of(cls, values: Mapping[str, object]) -> Options:
        """Return the options that ``values`` (setting name to value) set; the others' defaults."""
        given: dict[str, Any] = {
            name.replace("-", "_"): tuple(value) if isinstance(value, list) else value
            for name, value in values.items()
        }
        return cls(**given)


#: Each setting's value when neither the file nor the command line gives one.
DEFAULTS: Final[Mapping[str, object]] = defaults()
if {f.name: f.default for f in fields(Options)} != {
    name.replace("-", "_"): default for name, default in DEFAULTS.items()
}:  # pragma: no cover - a typo here
    msg = "Options must have the fields and defaults of the settings table, in its order"
    raise AssertionError(msg)


@final
@dataclass(frozen=True, slots=True)
class Setting:
    """One setting in force: its value, and where it came from.

    ``source`` is ``"default"``, ``"pyproject.toml"`` (then ``line`` is where
    the key is written) or ``"command line"``. ``note`` says why a value the
    file gives is not in force (a ``format`` the command does not write).
    """

    name: str
    value: object
    source: str
    line: int | None = None
    note: str = ""

    @property
    def origin(self) -> str:
        """Return where the value came from, as text: ``pyproject.toml:12``."""
        return f"{self.source}:{self.line}" if self.line is not None else self.source


@final
@dataclass(frozen=True, slots=True)
class Settings:
    """The settings in force for one run: the file read (or ``None``), each setting and its origin.

    ``options`` holds the same values, typed, for the command to read.
    """

    file: Path | None
    values: Mapping[str, Setting]
    options: Options = Options()

    def __getitem__(self, name: str) -> object:
        return self.values[name].value

    def to_json(self) -> dict[str, Any]:
        """Return the documented JSON shape of ``--show-settings``."""
        return {
            "file": None if self.file is None else str(self.file),
            "settings": {
                name: {"value": s.value, "source": s.source, "line": s.line}
                for name, s in self.values.items()
            },
        }

    def render(self) -> str:
        """Return one line per setting: its name, value and origin, aligned."""
        shown = {name: _shown(s.value, _UNSET.get(name, "")) for name, s in self.values.items()}
        width = max(len(f"{n} = {v}") for n, v in shown.items())
        head = (
            f"# settings from {self.file}"
            if self.file
            else "# no [tool.codegenie-bench] found: defaults and the command line"
        )
        lines = [head]
        for name, setting in self.values.items():
            left = f"{name} = {shown[name]}"
            note = f" ({setting.note})" if setting.note else ""
            lines.append(f"{left.ljust(width)}  # {setting.origin}{note}")
        return "\n".join(lines) + "\n"


#: What an unset setting means, as ``--show-settings`` says it.
_UNSET: Final = {spec.name: spec.unset for spec in SETTINGS if spec.unset}


def _shown(value: object, unset: str = "") -> str:
    """Return ``value`` as TOML would write it (``None``: ``unset``, what the default means)."""
    if value is None:
        return unset
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return f'"{value}"'
    if isinstance(value, list | tuple):
        return "[" + ", ".join(_shown(v) for v in value) + "]"
    return str(value)


@final
@dataclass(frozen=True, slots=True)
class FileSettings:
    """What the table sets, and on which lines (``file`` is ``None``: no table found)."""

    file: Path | None
    table: SettingsFile
    lines: Mapping[str, int]


def find_settings(start: Path) -> tuple[Path, str, dict[str, Any]] | None:
    """Return the nearest ``pyproject.toml`` at or above ``start`` that has the table.

    Returns ``(file, text, table)``, or ``None`` when there is none. A file
    that does not mention ``codegenie-bench`` at all is passed over unread.
    Raises :class:`SettingsInvalid` for a file that mentions it and cannot be
    read (size, kind, bytes, TOML syntax) or whose table is not a table.
    """
    for directory in (start, *start.parents):
        file = directory / _FILE_NAME
        try:
            data, _ = read_regular_file(str(file), MANIFEST_SIZE_LIMIT)
        except (FileNotFoundError, NotADirectoryError):
            continue
        except FileRefused as exc:
            raise SettingsInvalid(file, (_problem(1, 1, f"the file {exc.reason}"),)) from None
        except OSError as exc:
            reason = exc.strerror or type(exc).__name__
            raise SettingsInvalid(file, (_problem(1, 1, f"cannot read: {reason}"),)) from None
        if b"codegenie-bench" not in data:
            continue
        try:
            text, document = parse_toml(data)
        except TomlUnreadable as exc:
            raise SettingsInvalid(file, (_problem(exc.line, exc.column, exc.message),)) from None
        table: object = document.get("tool", {})
        table = table.get("codegenie-bench") if isinstance(table, dict) else None
        if table is None:
            continue
        if not isinstance(table, dict):
            line, column = TomlPositions(text).find(TABLE)
            message = "expected a table"
            raise SettingsInvalid(file, (_problem(line, column, message, "tool.codegenie-bench"),))
        return file, text, table
    return None


def _problem(line: int, column: int, message: str, key: str = "") -> ManifestProblem:
    return ManifestProblem(line, column, key, message, "schema")


def load_settings(start: Path) -> FileSettings:
    """Read and validate the table of the nearest ``pyproject.toml`` at or above ``start``.

    Raises :class:`SettingsInvalid` with every problem of the table, located.
    """
    found = find_settings(start)
    if found is None:
        return FileSettings(None, SettingsFile(), {})
    file, text, table = found
    positions = TomlPositions(text)
    try:
        model = SettingsFile.model_validate(table)
    except ValidationError as exc:
        known = tuple(f.alias or n for n, f in SettingsFile.model_fields.items())
        errors = [{**e, "loc": (*TABLE, *e["loc"])} for e in exc.errors()]
        problems = locate_errors(
            errors,
            positions.find,
            lambda loc: known if len(loc) == len(TABLE) + 1 else (),
            find_value=positions.find_value,
        )
        raise SettingsInvalid(
            file,
            tuple(
                ManifestProblem(p.line, p.column, p.key, p.message)
                for p in sorted(problems, key=lambda p: (p.line, p.column))
            ),
        ) from None
    lines = {key: positions.find((*TABLE, key))[0] for key in table}
    return FileSettings(file, model, lines)


def resolve(
    read: FileSettings,
    given: Mapping[str, object],
    *,
    names: Iterable[str] | None = None,
    formats: Collection[str] | None = None,
) -> Settings:
    """Return the settings in force: ``given`` (command line), else the file's, else defaults.

    ``names`` are the settings the command uses (default: every one); the
    others are left out, whatever the file says of them. ``formats`` are the
    formats the command writes (default: every one): a ``format`` the file
    gives outside them is passed over, and the default is in force, with a
    note that says so (a table that ``check`` and ``grade`` share may well
    say ``"sarif"``, which only ``check`` writes).
    """
    used = set(DEFAULTS if names is None else names)
    values = {}
    for name, default in DEFAULTS.items():
        if name not in used:
            continue
        from_file = getattr(read.table, name.replace("-", "_"))
        line = read.lines.get(name)
        if given.get(name) is not None:
            values[name] = Setting(name, given[name], "command line")
        elif from_file is None:
            values[name] = Setting(name, default, "default")
        elif name == "format" and formats is not None and from_file not in formats:
            written = f"{_FILE_NAME}:{line} sets {_shown(from_file)}"
            note = f"{written}, which this command does not write"
            values[name] = Setting(name, default, "default", note=note)
        else:
            values[name] = Setting(name, from_file, _FILE_NAME, line)
    options = Options.of({name: setting.value for name, setting in values.items()})
    return Settings(read.file, values, options)


def parse_codes(text: str) -> list[str]:
    """Return the comma-separated codes of ``text``; ``ValueError`` names an unknown one."""
    codes = [code.strip() for code in text.split(",") if code.strip()]
    _known_codes(codes)
    return codes
