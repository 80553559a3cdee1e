"""A task class's cases: ``cases/<case-id>/`` with ``case.toml``, ``input/`` and ``expected/``.

Each directory under the task class's ``cases`` path is
one case; its name is the case id (lowercase ASCII letters, digits, ``-``,
``_`` and ``.``, starting with a letter or a digit, at most 100 characters).
It holds ``case.toml`` (what the case is), ``input/`` (what the solver
starts from) and ``expected/`` (a known-good solution). ``case.toml`` has
common keys, all optional — ``description`` (string), ``tags`` (array of
strings), ``timeout`` (positive number of seconds for one rubric run,
default 60) and the run's limits: ``memory`` (MiB, default 2048),
``processes`` (default 512), ``file-size`` (MiB, default 1024),
``cpu-time`` (seconds, default none), ``disk`` (MiB the run may add to its
directory, default 1024) and ``disk-files`` (entries it may add, default
20,000), and ``over-limit`` (``"error"`` or ``"failed"``: what a candidate
over one of those limits is, overriding the task class's) — plus ``id``, which may be written but
must then equal the directory name. Every other key is validated by the task class's
``case_model`` (``register_task_class(..., case_model=Model)``), or kept as
it is when the task class declares none.

:func:`scan_cases` reads them all and returns the valid cases *and* every
problem found (``check`` reports the problems and grades the valid cases);
:func:`read_cases` returns the cases or raises one ``BenchCasesInvalid``
listing every problem of every case. ``codegenie.eval.loader.load_cases``
resolves a slug and then calls :func:`read_cases`.

Case files are read under the manifest's rules (``docs/security.md``): regular
files only (a FIFO is never waited on), at most 1 MiB, and bad bytes, TOML
syntax, nesting, long dotted keys and huge integers are problems with a line,
never a traceback. Nothing here imports, reads or runs a rubric (ADR-0001):
rubrics run only through :mod:`codegenie.eval.rubrics`, in a subprocess.
"""

from __future__ import annotations

import os
import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final, final

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    ValidationError,
    computed_field,
    field_serializer,
    model_validator,
)

from codegenie.eval._located import locate_errors
from codegenie.eval._logging import LazyLogger
from codegenie.eval._paths import FileRefused, read_regular_file
from codegenie.eval._sandbox.limits import DEFAULT_LIMITS, LIMIT_FIELDS, LIMIT_NAMES, Limits
from codegenie.eval._toml.positions import KeyPath, TomlPositions
from codegenie.eval._toml.read import TomlUnreadable, parse_toml
from codegenie.eval.errors import BenchCasesInvalid, CaseProblem
from codegenie.eval.models import OverLimit, TaskClass, class_path

__all__ = (
    "CASE_FILE",
    "CASE_FILE_SIZE_LIMIT",
    "CASE_ID_PATTERN",
    "COMMON_KEYS",
    "DEFAULT_TIMEOUT",
    "EXPECTED_DIR",
    "INPUT_DIR",
    "MAX_CASE_ID_LENGTH",
    "MAX_PROBLEMS_PER_FILE",
    "RESERVED_KEYS",
    "Case",
    "CaseScan",
    "case_id_problem",
    "check_case_model",
    "read_cases",
    "scan_cases",
)

#: The file that describes a case, in the case directory.
CASE_FILE: Final = "case.toml"
#: What the solver starts from, in the case directory.
INPUT_DIR: Final = "input"
#: A known-good solution, in the case directory.
EXPECTED_DIR: Final = "expected"
#: The largest ``case.toml`` that is read at all.
CASE_FILE_SIZE_LIMIT: Final = 1024 * 1024
#: The case-id rule as a regular expression, for schemas and editors (ASCII;
#: at most MAX_CASE_ID_LENGTH characters; :func:`case_id_problem` is authoritative).
CASE_ID_PATTERN: Final = r"^[a-z0-9][a-z0-9._-]*$"
MAX_CASE_ID_LENGTH: Final = 100
#: The limits of one rubric run that ``case.toml`` may set, beside ``timeout``.
LIMIT_KEYS: Final = LIMIT_NAMES
#: Keys every ``case.toml`` may have, whatever the task class.
COMMON_KEYS: Final = ("description", "tags", "timeout", *LIMIT_KEYS, "over-limit")
#: Keys a ``case_model`` may not declare: the common keys and ``id``.
RESERVED_KEYS: Final = ("description", "id", "tags", "timeout", *LIMIT_KEYS, "over-limit")
#: Seconds one rubric run may take when ``case.toml`` does not say.
DEFAULT_TIMEOUT: Final = 60.0


def _required(value: int | None) -> int:
    """Return a default limit ``case.toml`` always has (only ``cpu-time`` may be none)."""
    assert value is not None
    return value


# The limits' defaults are the sandbox's (codegenie.eval._sandbox.limits says why).
#: MiB of memory one rubric run (the rubric and all it starts) may hold.
DEFAULT_MEMORY: Final = _required(DEFAULT_LIMITS.memory)
#: Processes and threads one rubric run may have at once.
DEFAULT_PROCESSES: Final = _required(DEFAULT_LIMITS.processes)
#: MiB of the largest file one rubric run may write.
DEFAULT_FILE_SIZE: Final = _required(DEFAULT_LIMITS.file_size)
#: Seconds of CPU one rubric run may use: none by default (``timeout`` bounds it).
DEFAULT_CPU_TIME: Final = DEFAULT_LIMITS.cpu_time
#: MiB one rubric run may add to its directory.
DEFAULT_DISK: Final = _required(DEFAULT_LIMITS.disk)
#: Entries (files, directories, links) one rubric run may add to its directory.
DEFAULT_DISK_FILES: Final = _required(DEFAULT_LIMITS.disk_files)
#: Schema problems listed for one file; a file with more ends with a count.
MAX_PROBLEMS_PER_FILE: Final = 100

_CASE_ID: Final = re.compile(r"[a-z0-9][a-z0-9._-]*")
_CASE_ID_CHARS: Final = frozenset("abcdefghijklmnopqrstuvwxyz0123456789._-")
_RESERVED: Final = frozenset(RESERVED_KEYS)
_INPUT_SUFFIX: Final = os.sep + INPUT_DIR
_EXPECTED_SUFFIX: Final = os.sep + EXPECTED_DIR
_CASE_FILE_SUFFIX: Final = os.sep + CASE_FILE

_log = LazyLogger(__name__)


def case_id_problem(case_id: str) -> str | None:
    """Return why ``case_id`` is not a valid case id, or ``None`` when it is.

    The reason completes "invalid case id 'X': …". The rule: 1 to 100
    characters, lowercase ASCII letters, digits, ``-``, ``_`` and ``.``,
    starting with a letter or a digit. Validate case ids with this function
    wherever they come from (``new``, ``grade --case``), so that every
    command agrees with :func:`scan_cases`.
    """
    if len(case_id) <= MAX_CASE_ID_LENGTH and _CASE_ID.fullmatch(case_id):
        return None
    if not case_id:
        return "it is empty"
    if len(case_id) > MAX_CASE_ID_LENGTH:
        return f"it is {len(case_id)} characters long; at most {MAX_CASE_ID_LENGTH} are allowed"
    if any("A" <= char <= "Z" for char in case_id):
        return "it has uppercase letters; case ids are lowercase"
    bad = next((char for char in case_id if char not in _CASE_ID_CHARS), None)
    if bad is not None:
        return (
            f"it has the character {bad!r}; case ids use lowercase ASCII letters, "
            "digits, '-', '_' and '.'"
        )
    return "it must start with a lowercase letter or a digit"


def check_case_model(case_model: object) -> type[BaseModel]:
    """Return ``case_model`` if it can validate the task-specific keys of ``case.toml``.

    Raises ``TypeError`` unless it is a pydantic ``BaseModel`` subclass, and
    ``ValueError`` when one of its fields is named or aliased like a key the
    loader keeps for itself (:data:`RESERVED_KEYS`): such a field would never
    receive its value. ``register_task_class`` calls this.
    """
    if not (isinstance(case_model, type) and issubclass(case_model, BaseModel)):
        msg = f"case_model must be a pydantic BaseModel subclass, got {case_model!r}"
        raise TypeError(msg)
    for name, field in case_model.model_fields.items():
        names = {name, field.alias, field.validation_alias}
        clash = sorted(n for n in names if isinstance(n, str) and n in _RESERVED)
        if clash:
            msg = (
                f"case_model {case_model.__qualname__} declares {clash[0]!r}, a key every "
                f"case.toml shares ({', '.join(RESERVED_KEYS)}); rename the field"
            )
            raise ValueError(msg)
    return case_model


@final
class Case(BaseModel):
    """One validated case of a task class.

    ``id`` is the case directory's name; ``directory`` the case directory
    (absolute, under the task class's resolved ``cases`` path), and
    ``input`` and ``expected`` its two subdirectories: computed from
    ``directory``, serialised with the fields, and accepted back by
    validation when they agree with it. ``description``, ``tags`` and
    ``timeout`` (seconds, for one rubric run) come from the common keys of
    ``case.toml``, and so do the run's :attr:`limits`, one
    :class:`~codegenie.eval._sandbox.limits.Limits`: ``memory`` (MiB),
    ``processes``, ``file_size`` (MiB, ``file-size`` in the file),
    ``cpu_time`` (seconds, ``cpu-time``; ``None``: no limit), ``disk``
    (MiB) and ``disk_files`` (``disk-files``). Each limit can also be read
    as an attribute of the case (``case.memory``), and given as a keyword
    (``Case(..., memory=256)``). ``over_limit`` is the case's
    ``over-limit`` (``None``: the task class's). ``data``
    holds the other keys: an instance of the task class's ``case_model``, or
    a plain ``dict`` when it declares none.

    Frozen; hashed by ``(task_class, id, directory)``. ``model_dump(mode="json")``
    and :meth:`to_json` write ``data`` with the keys as ``case.toml`` spells
    them (the model's aliases).
    """

    model_config = ConfigDict(frozen=True, extra="forbid", strict=True)

    task_class: str
    id: str
    directory: Path
    description: str | None = None
    tags: tuple[str, ...] = ()
    timeout: float = DEFAULT_TIMEOUT
    limits: Limits = DEFAULT_LIMITS
    over_limit: OverLimit | None = None
    data: BaseModel | dict[str, Any] = Field(default_factory=dict)

    def __hash__(self) -> int:
        return hash((self.task_class, self.id, self.directory))

    @property
    def memory(self) -> int | None:
        """``limits.memory``: MiB of memory one run may hold."""
        return self.limits.memory

    @property
    def processes(self) -> int | None:
        """``limits.processes``: processes and threads one run may have at once."""
        return self.limits.processes

    @property
    def file_size(self) -> int | None:
        """``limits.file_size``: MiB of the largest file one run may write."""
        return self.limits.file_size

    @property
    def cpu_time(self) -> float | None:
        """``limits.cpu_time``: seconds of CPU one run may use (``None``: no limit)."""
        return self.limits.cpu_time

    @property
    def disk(self) -> int | None:
        """``limits.disk``: MiB one run may add to its directory."""
        return self.limits.disk

    @property
    def disk_files(self) -> int | None:
        """``limits.disk_files``: entries one run may add to its directory."""
        return self.limits.disk_files

    @model_validator(mode="before")
    @classmethod
    def _one_limits(cls, values: Any) -> Any:
        """Gather limits given one by one (``memory=256``), or as JSON, into one ``Limits``."""
        if not isinstance(values, dict):
            return values
        given = values.get("limits")
        flat = {name: values[name] for name in LIMIT_FIELDS if name in values}
        if not flat and not isinstance(given, dict):
            return values
        values = {key: value for key, value in values.items() if key not in flat}
        base = given.as_dict() if isinstance(given, Limits) else dict(given or {})
        values["limits"] = Limits.of({**base, **flat})
        return values

    # input and expected are derived from directory, not stored: a case cannot
    # disagree with the layout, and loading many cases does not build two more
    # paths for each. They are still serialised, and read back when they agree.
    @computed_field  # type: ignore[prop-decorator]
    @property
    def input(self) -> Path:
        """``directory / "input"``: what the solver starts from."""
        return self.directory / INPUT_DIR

    @computed_field  # type: ignore[prop-decorator]
    @property
    def expected(self) -> Path:
        """``directory / "expected"``: a known-good solution."""
        return self.directory / EXPECTED_DIR

    @model_validator(mode="before")
    @classmethod
    def _derived_paths(cls, values: Any) -> Any:
        if not isinstance(values, dict) or not {"input", "expected"} & values.keys():
            return values
        values = dict(values)
        directory = values.get("directory")
        for name in ("input", "expected"):
            if name not in values:
                continue
            given = values.pop(name)
            if isinstance(directory, str | Path) and str(given) != str(Path(directory) / name):
                msg = f"{name} must be the case directory's {name}/, got {given}"
                raise ValueError(msg)
        return values

    def __repr__(self) -> str:
        return f"Case(task_class={self.task_class!r}, id={self.id!r})"

    @field_serializer("data", when_used="json")
    def _data_as_json(self, data: BaseModel | dict[str, Any]) -> Any:
        if isinstance(data, BaseModel):
            return data.model_dump(mode="json", by_alias=True)
        return data

    def to_json(self) -> dict[str, Any]:
        """Return the case as JSON-ready data: every field, paths as strings."""
        return self.model_dump(mode="json")


@dataclass(frozen=True, slots=True)
class CaseScan:
    """What :func:`scan_cases` found for one task class.

    ``cases`` holds the valid cases, sorted by id; ``problems`` every problem
    (a case with a problem is not in ``cases``), sorted by file and position.
    ``directory`` is the task class's ``cases`` path (``None`` for a task
    class defined where no file exists); ``found`` says whether it exists.
    A task class without cases has ``found`` false, or no cases and no
    problems (``check``'s ``cases-missing``).

    Across a process boundary (``check``'s workers), send ``problems`` (plain
    picklable data) and ``case_ids``, or ``Case.to_json()``: a ``Case``'s
    ``data`` is an instance of the registration's case model, and unpickling
    it would import the registration module in the receiving process.
    """

    task_class: str
    directory: Path | None
    found: bool
    cases: tuple[Case, ...]
    problems: tuple[CaseProblem, ...]

    @property
    def ok(self) -> bool:
        """Whether no problem was found."""
        return not self.problems

    @property
    def case_ids(self) -> tuple[str, ...]:
        """The ids of the valid cases, sorted."""
        return tuple(case.id for case in self.cases)

    def raise_for_problems(self) -> tuple[Case, ...]:
        """Return the cases, or raise ``BenchCasesInvalid`` listing every problem."""
        if self.problems:
            raise BenchCasesInvalid(self.task_class, self.problems)
        return self.cases


def scan_cases(task_class: TaskClass) -> CaseScan:
    """Read every case of ``task_class``; return the valid ones and every problem.

    Never raises for what the bench holds: a missing ``cases`` directory is
    an empty scan (``found`` false); a case directory without ``case.toml``,
    ``input/`` or ``expected/``, a non-directory entry, or an invalid id is a
    ``"layout"`` problem; a ``case.toml`` that cannot be read as TOML is a
    ``"syntax"`` problem; one that breaks the schema (the common keys, ``id``,
    and the task class's ``case_model``) has a ``"schema"`` problem for each
    broken key, at its line and column. Entries whose name starts with ``.``
    are ignored (``.gitkeep``, ``.DS_Store``); symbolic links to directories
    count as directories.

    Each case file is parsed once with ``tomllib`` and validated with one
    model call; positions are computed only for files with problems. Nothing
    is imported or run (the rubric least of all).
    """
    directory = task_class.cases
    if directory is None:
        return CaseScan(task_class.name, None, False, (), ())
    reader = _CaseReader(task_class.name, str(directory), task_class.case_model)
    scan = reader.scan()
    if scan.problems:
        _log.error(
            "cases.invalid",
            task_class=task_class.name,
            cases=str(directory),
            problems=len(scan.problems),
        )
    else:
        _log.debug(
            "cases.loaded", task_class=task_class.name, cases=str(directory), count=len(scan.cases)
        )
    return scan


def read_cases(task_class: TaskClass) -> tuple[Case, ...]:
    """Return every case of ``task_class``, sorted by id.

    Raises ``BenchCasesInvalid(task_class.name, problems)`` listing every
    problem of every case (see :func:`scan_cases`) when there is any. A task
    class without a ``cases`` directory has no cases: ``()``.
    """
    return scan_cases(task_class).raise_for_problems()


# -- reading ------------------------------------------------------------------


class _CommonKeys(BaseModel):
    """The keys every case.toml may have; the rest is the task class's ``case_model``'s."""

    model_config = ConfigDict(
        strict=True, extra="forbid", allow_inf_nan=False, validate_by_alias=True
    )

    id: str | None = None
    description: str | None = None
    tags: list[str] = Field(default_factory=list)
    timeout: float = Field(DEFAULT_TIMEOUT, gt=0)
    memory: int = Field(DEFAULT_MEMORY, gt=0)
    processes: int = Field(DEFAULT_PROCESSES, gt=0)
    file_size: int = Field(DEFAULT_FILE_SIZE, gt=0, alias="file-size")
    cpu_time: float | None = Field(DEFAULT_CPU_TIME, gt=0, alias="cpu-time")
    disk: int = Field(DEFAULT_DISK, gt=0)
    disk_files: int = Field(DEFAULT_DISK_FILES, gt=0, alias="disk-files")
    over_limit: OverLimit | None = Field(None, alias="over-limit")

    def limits(self) -> Limits:
        """Return the run's limits as the file gives them."""
        return Limits.of({name: getattr(self, name) for name in LIMIT_FIELDS})


def _known_keys(case_model: type[BaseModel] | None) -> tuple[str, ...]:
    keys = list(RESERVED_KEYS)
    if case_model is not None:
        for name, field in case_model.model_fields.items():
            alias = field.validation_alias if isinstance(field.validation_alias, str) else None
            keys.append(alias or field.alias or name)
    return tuple(keys)


@final
class _CaseReader:
    """Reads the cases of one task class, gathering every problem."""

    def __init__(self, slug: str, directory: str, case_model: type[BaseModel] | None) -> None:
        self.slug = slug
        self.directory = directory
        self.prefix = os.path.join(directory, "")
        self.root = Path(directory)
        self.case_model = case_model
        self.cases: list[Case] = []
        self.problems: list[CaseProblem] = []

    def scan(self) -> CaseScan:
        directory = Path(self.directory)
        try:
            with os.scandir(self.directory) as entries:
                listed = [(entry.name, _is_dir(entry)) for entry in entries]
        except FileNotFoundError:
            return CaseScan(self.slug, directory, False, (), ())
        except NotADirectoryError:
            self._layout(directory, None, "is not a directory; a task class's cases/ is one")
            return self._result(directory, found=True)
        except OSError as exc:
            reason = exc.strerror or type(exc).__name__
            self._layout(directory, None, f"cannot list the cases: {reason}")
            return self._result(directory, found=True)
        for name, is_dir in sorted(listed):
            if name.startswith("."):
                continue
            # Plain concatenation: the names are directory entries (no separator in
            # them), and os.path.join costs as much as a stat on this path.
            path = self.prefix + name
            if not is_dir:
                self._layout(
                    Path(path),
                    None,
                    "is not a directory; every entry of cases/ is a case directory "
                    "(names starting with '.' are ignored)",
                )
                continue
            self._read_case(name, path)
        return self._result(directory, found=True)

    def _result(self, directory: Path, *, found: bool) -> CaseScan:
        self.problems.sort(key=_problem_order)
        return CaseScan(self.slug, directory, found, tuple(self.cases), tuple(self.problems))

    def _layout(self, file: Path, case: str | None, message: str) -> None:
        self.problems.append(CaseProblem(file, None, None, "", message, "layout", case))

    def _read_case(self, case_id: str, path: str) -> None:
        before = len(self.problems)
        reason = case_id_problem(case_id)
        if reason is not None:
            self._layout(Path(path), case_id, f"invalid case id {case_id!r}: {reason}")
        input_dir = path + _INPUT_SUFFIX
        expected_dir = path + _EXPECTED_SUFFIX
        if not os.path.isdir(input_dir):
            self._layout(
                Path(path), case_id, "has no input/ directory (what the solver starts from)"
            )
        if not os.path.isdir(expected_dir):
            self._layout(Path(path), case_id, "has no expected/ directory (a known-good solution)")
        parsed = self._read_file(case_id, path)
        if parsed is None or len(self.problems) != before:
            return
        common, data = parsed
        self.cases.append(
            Case.model_construct(
                task_class=self.slug,
                id=case_id,
                directory=self.root / case_id,  # cheaper than parsing the whole path
                description=common.description,
                tags=tuple(common.tags),
                timeout=common.timeout,
                limits=common.limits(),
                over_limit=common.over_limit,
                data=data,
            )
        )

    def _read_file(
        self, case_id: str, path: str
    ) -> tuple[_CommonKeys, BaseModel | dict[str, Any]] | None:
        """Read and validate ``path/case.toml``; record its problems; return it when valid."""
        file = path + _CASE_FILE_SUFFIX
        try:
            data, _ = read_regular_file(file, CASE_FILE_SIZE_LIMIT)
        except FileNotFoundError:
            self._layout(Path(path), case_id, f"has no {CASE_FILE}")
            return None
        except FileRefused as exc:
            self._problem(file, (1, 1), f"the file {exc.reason}", kind="syntax", case=case_id)
            return None
        except OSError as exc:
            reason = exc.strerror or type(exc).__name__
            message = f"cannot read the file: {reason}"
            self._problem(file, (1, 1), message, kind="syntax", case=case_id)
            return None
        try:
            text, raw = parse_toml(data)
        except TomlUnreadable as exc:
            where = (exc.line, exc.column)
            self._problem(file, where, exc.message, kind="syntax", case=case_id)
            return None
        # ``raw`` is this function's own: the common keys move out of it, and
        # what is left is the task class's.
        document: dict[str, Any] = {key: raw.pop(key) for key in RESERVED_KEYS if key in raw}
        written_id = document.get("id")
        positions: TomlPositions | None = None
        if isinstance(written_id, str) and written_id != case_id:
            positions = TomlPositions(text)
            self._problem(
                file,
                positions.find_value(("id",)),
                f"the case id is the directory name {case_id!r}, but this file says "
                f"{written_id!r}; remove the key, or make it match",
                key="id",
                case=case_id,
            )
        # Two validations, the common keys' then the case model's, report what one
        # model holding both would (its errors in field order, the task class's
        # keys last, under "data"), without building such a model per case model.
        errors: list[Any] = []
        common: _CommonKeys | None = None
        fields: BaseModel | dict[str, Any] = raw
        try:
            common = _CommonKeys.model_validate(document)
        except ValidationError as exc:
            errors = exc.errors(include_url=False)
        try:
            if self.case_model is not None:
                fields = self.case_model.model_validate(raw)
        except ValidationError as exc:
            errors += [
                {**error, "loc": ("data", *error["loc"])} for error in exc.errors(include_url=False)
            ]
        except KeyboardInterrupt:
            raise
        except BaseException as exc:
            # Pydantic wraps ValueError and AssertionError; anything else a
            # validator raises — SystemExit(0) and GeneratorExit included —
            # would escape as a traceback or end the command with a false
            # success. It is the case model's fault, reported where the
            # curator will look.
            model = class_path(self.case_model) if self.case_model else "the case schema"
            message = f"{model} raised {type(exc).__name__} while validating: {_safe_str(exc)}"
            self._problem(file, (1, 1), message, case=case_id)
            return None
        if errors or common is None:
            self._schema_problems(file, case_id, errors, positions or TomlPositions(text))
            return None
        return common, fields

    def _schema_problems(
        self, file: str, case_id: str, errors: list[Any], positions: TomlPositions
    ) -> None:
        known = _known_keys(self.case_model)

        def known_keys(loc: KeyPath) -> tuple[str, ...]:
            return known if len(loc) == 1 else ()

        # The task-specific keys sit at the top of the file, beside the common ones.
        located = [{**error, "loc": _file_key(error["loc"])} for error in errors]
        shown = located[:MAX_PROBLEMS_PER_FILE]
        # A case model may declare many keys: "did you mean" names one, never the list.
        for problem in locate_errors(
            shown, positions.find, known_keys, list_known=False, find_value=positions.find_value
        ):
            self._problem(
                file, (problem.line, problem.column), problem.message, key=problem.key, case=case_id
            )
        if len(errors) > MAX_PROBLEMS_PER_FILE:
            more = len(errors) - MAX_PROBLEMS_PER_FILE
            message = f"and {more} more problem{'s' if more != 1 else ''}, not listed"
            first_unlisted = located[MAX_PROBLEMS_PER_FILE]["loc"]
            self._problem(file, positions.find(first_unlisted), message, case=case_id)

    def _problem(
        self,
        file: str,
        where: tuple[int, int],
        message: str,
        *,
        case: str,
        key: str = "",
        kind: str = "schema",
    ) -> None:
        line, column = where
        self.problems.append(CaseProblem(Path(file), line, column, key, message, kind, case))


def _file_key(loc: Sequence[str | int]) -> KeyPath:
    """Return pydantic's ``loc`` as the key path in ``case.toml``: the model's keys at the top."""
    path = tuple(loc)
    return path[1:] if path[:1] == ("data",) else path


def _safe_str(exc: BaseException) -> str:
    try:
        text = str(exc)
    except KeyboardInterrupt:
        raise
    except BaseException:  # as the traceback module does, whatever __str__ raises
        return f"<unprintable {type(exc).__name__} object>"
    return text if len(text) <= 200 else text[:199] + "…"


def _is_dir(entry: os.DirEntry[str]) -> bool:
    try:
        return entry.is_dir()  # follows a symbolic link: a linked case directory counts
    except OSError:
        return False


def _problem_order(problem: CaseProblem) -> tuple[str, int, int, int, str, str]:
    # By case id (an entry of cases/ that is not a case: by its name; cases/
    # itself first), then a case's layout before its case.toml, then position.
    name = problem.case
    if name is None:
        name = problem.file.name if problem.kind == "layout" and problem.key == "" else ""
    return (
        name,
        0 if problem.kind == "layout" else 1,
        problem.line or 0,
        problem.column or 0,
        problem.key,
        problem.message,
    )
