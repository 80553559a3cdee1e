"""What ``check`` and its worker say to each other: a request per slug, an answer per request.

Both are one JSON object on one line. The checking process
(:mod:`codegenie.eval.check.workers`) sends a :class:`Request`; the worker
(:mod:`codegenie.eval.check._worker`) answers with an :class:`Answer` that
carries the request's ``id``: :class:`Done` when the slug's process ran to
its end and said what it found (a :class:`Probed`, made by
:func:`codegenie.eval.check._probe.probe`), :class:`Failed` when it did not.

An answer's size follows the bench: it lists every valid case of the task
class (``check --rubrics`` runs them all), and at most
:data:`MAX_LISTED_PROBLEMS` of its case problems, with a count of the rest.

A ``Done`` answer carries what a registration's process wrote, and that
process runs the registration's code, which can monkeypatch the code that
writes it: :func:`parse_answer` checks the whole shape on receipt, and an
answer that breaks it is that slug's problem, never the check's.
"""

from __future__ import annotations

import functools
import json
from typing import Annotated, Final, Literal, NotRequired

from pydantic import ConfigDict, Field, PositiveInt, TypeAdapter, ValidationError, with_config

# pydantic validates typing.TypedDict only from Python 3.12 on.
from typing_extensions import TypedDict

__all__ = (
    "MAX_LISTED_PROBLEMS",
    "Answer",
    "CaseFound",
    "CaseProblemFound",
    "Done",
    "Failed",
    "Failure",
    "Malformed",
    "Mismatch",
    "Parts",
    "Probed",
    "Raised",
    "Request",
    "parse_answer",
)

_CLOSED: Final = ConfigDict(extra="forbid", strict=True)

#: The most case problems one answer lists (in the order of the scan: by file
#: and place); ``Parts.case_problems_unlisted`` counts the rest. As many as
#: ``check`` lists of a manifest's problems.
MAX_LISTED_PROBLEMS: Final = 1000


class Request(TypedDict):
    """One slug to check: its manifest entry, and how long its import may take.

    ``id`` is unguessable (a registration cannot forge an answer blindly);
    ``manifest`` is the manifest's absolute path; ``timeout`` in seconds,
    infinity for none.
    """

    id: str
    slug: str
    module: str
    root: str
    manifest: str
    timeout: float


@with_config(_CLOSED)
class Raised(TypedDict):
    """The load raised: what (``type``, ``message``), where under the bench root, and the traceback.

    ``file`` (absolute) and ``line`` are the deepest place under the bench
    root, or ``None``; ``traceback`` is the registration's frames only.
    """

    kind: Literal["raised"]
    type: str
    message: str
    file: str | None
    line: int | None
    traceback: str | None


@with_config(_CLOSED)
class Mismatch(TypedDict):
    """Another file answered for the module: the one expected, and the one imported (if any)."""

    kind: Literal["mismatch"]
    expected: str
    actual: str | None


#: Why a load failed.
Failure = Annotated[Raised | Mismatch, Field(discriminator="kind")]


@with_config(_CLOSED)
class CaseFound(TypedDict):
    """A valid case of the task class: what ``check --rubrics`` needs to run its rubric.

    Its limits by attribute name, as ``Limits.as_dict`` gives them (``None``:
    no limit); the parent makes them one ``Limits`` again.
    """

    id: str
    directory: str
    timeout: float
    memory: PositiveInt | None
    processes: PositiveInt | None
    file_size: PositiveInt | None
    cpu_time: float | None
    disk: PositiveInt | None
    disk_files: PositiveInt | None


@with_config(_CLOSED)
class CaseProblemFound(TypedDict):
    """A problem of one of its cases, with its place and its check code."""

    file: str
    line: int | None
    column: int | None
    key: str
    message: str
    code: str
    case: str | None


@with_config(_CLOSED)
class Parts(TypedDict):
    """The rubric and the cases of a task class that loaded.

    ``rubric_file`` is ``None`` for a task class defined where no file
    exists. ``cases_found``: whether its cases directory exists. ``cases``:
    every valid case. ``case_problems``: the first
    :data:`MAX_LISTED_PROBLEMS` problems of its cases;
    ``case_problems_unlisted``: how many more there are. ``warm``: the
    task class's (``False``: its runs never fork from a warm worker; absent:
    ``True``). ``reads_expected``: the task class's (``True``: its runs'
    ``CASE_DIR`` holds ``expected/``; absent: ``False``).
    """

    rubric_file: str | None
    rubric_exists: bool
    cases_found: bool
    case_problems: list[CaseProblemFound]
    case_problems_unlisted: Annotated[int, Field(ge=0)]
    warm: NotRequired[bool]
    reads_expected: NotRequired[bool]
    cases: list[CaseFound]


@with_config(_CLOSED)
class Probed(TypedDict):
    """What importing one registration did.

    ``registered``: the slugs the import registered. ``error``: why the load
    failed, or ``None``. ``not_registered``: the import succeeded but did
    not register the slug. ``rubric``: the rubric modules or files it
    loaded. ``left_running``: the threads and child processes still running
    when it returned, in words, or ``""``. ``parts``: the task class's
    rubric and cases when it loaded, else ``None``.
    """

    registered: list[str]
    error: Failure | None
    not_registered: bool
    rubric: list[str]
    left_running: str
    parts: Parts | None


@with_config(_CLOSED)
class Done(Probed):
    """The slug's process answered, and was seen stopped where it answers: what it found.

    What the worker saw itself, whatever the process said: ``orphans``, how
    many processes it left behind, which the worker adopted and killed
    (processes that left its session, which ``left_running`` could not
    see); ``threads``, how many threads besides its main one it still had
    when it stopped.
    """

    id: str
    kind: Literal["done"]
    orphans: Annotated[int, Field(ge=0)]
    threads: Annotated[int, Field(ge=0)]


@with_config(_CLOSED)
class Failed(TypedDict):
    """The slug's process gave no answer to believe.

    ``kind``: ``"crashed"`` (it died; ``detail`` says how, with the end of
    its output), ``"timeout"``, ``"tampered"`` (what came on the check's
    private result channel is not one answer from the process, stopped
    where it answers; ``detail`` says what), or ``"unavailable"`` (the
    worker could not start the process at all — out of file descriptors
    or processes: no fault of the slug's, and no verdict about it).
    """

    id: str
    kind: Literal["crashed", "timeout", "tampered", "unavailable"]
    detail: str


#: The worker's answer to one request.
Answer = Annotated[Done | Failed, Field(discriminator="kind")]


@functools.cache
def _answers() -> TypeAdapter[Done | Failed]:
    """Return the validator of answers, built on first use (the worker only writes answers)."""
    return TypeAdapter(Answer)


class Malformed(ValueError):
    """An answer line that is not an :data:`Answer`; ``problem`` says what is wrong, briefly."""

    def __init__(self, problem: str) -> None:
        super().__init__(problem)
        self.problem = problem

    def __reduce__(self) -> tuple[type[Malformed], tuple[str]]:
        return (type(self), (self.problem,))


def parse_answer(line: bytes) -> Done | Failed:
    """Parse and check one answer line; raise :class:`Malformed` for anything else.

    Every key of every level must be there, with its type (JSON's: a
    boolean is not a number), and no other key.
    """
    # Python's json, not pydantic's: paths that are not valid UTF-8 (a bench under
    # the C locale) reach the answer as lone surrogates, which only it takes back.
    try:
        value = json.loads(line)
    except (ValueError, RecursionError) as exc:
        raise Malformed(f"the answer is not JSON ({exc})") from None
    try:
        return _answers().validate_python(value, strict=True)
    except ValidationError as exc:
        first = exc.errors(include_url=False, include_input=False)[0]
        where = ".".join(str(part) for part in first["loc"])
        count = exc.error_count()
        more = f" (and {count - 1} more)" if count > 1 else ""
        raise Malformed(f"{where or 'the answer'}: {first['msg']}{more}") from None
