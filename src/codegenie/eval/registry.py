"""The task-class registry and the ``@register_task_class`` decorator.

A registry is a plain object; ``default_registry`` exists for convenience and
tests inject their own. While the loader imports a registration module it
directs undirected registrations (``@register_task_class`` without
``registry=``) to its own registry through a context variable
(:func:`registering_into`), so unmodified registration files work with any
registry and no global is ever swapped.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar, Token
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING, Final, TypeVar, final

from codegenie.eval.errors import (
    TaskClassAlreadyRegistered,
    TaskClassNotFound,
)
from codegenie.eval.models import OverLimit, TaskClass
from codegenie.eval.naming import check_slug, closest

if TYPE_CHECKING:
    from pydantic import BaseModel

__all__ = (
    "RegistrationSession",
    "TaskClassRegistry",
    "default_registry",
    "register_task_class",
    "registering_into",
)

_T = TypeVar("_T", bound=type[object])


@final
class TaskClassRegistry:
    """Task classes by slug, in registration order.

    Holds at most one ``TaskClass`` per name: registering a *different* object
    under a taken name raises ``TaskClassAlreadyRegistered``; registering the
    very same object again is a no-op.
    """

    def __init__(self) -> None:
        self._by_name: Final[dict[str, TaskClass]] = {}

    def register(self, task_class: TaskClass) -> None:
        """Add ``task_class``; raise ``TaskClassAlreadyRegistered`` on a clash."""
        existing = self._by_name.get(task_class.name)
        if existing is task_class:
            return
        if existing is not None:
            raise TaskClassAlreadyRegistered(task_class.name, existing.module, task_class.module)
        self._by_name[task_class.name] = task_class

    def holds(self, task_class: TaskClass) -> bool:
        """Return whether this very ``task_class`` object is registered here."""
        return self._by_name.get(task_class.name) is task_class

    def unregister(self, name: str) -> TaskClass | None:
        """Remove and return the task class called ``name``, if there is one."""
        return self._by_name.pop(name, None)

    def get(self, name: str) -> TaskClass:
        """Return the task class called ``name``.

        Raises ``TaskClassNotFound`` (with suggestions) when there is none.
        """
        try:
            return self._by_name[name]
        except KeyError:
            names = tuple(self._by_name)
            raise TaskClassNotFound(
                name,
                looked_up_in=repr(self),
                available_names=names,
                suggestions=closest(name, names),
            ) from None

    def names(self) -> tuple[str, ...]:
        """Return the registered names, in registration order."""
        return tuple(self._by_name)

    def all_task_classes(self) -> tuple[TaskClass, ...]:
        """Return the registered task classes, in registration order."""
        return tuple(self._by_name.values())

    def __contains__(self, name: object) -> bool:
        return name in self._by_name

    def __iter__(self) -> Iterator[TaskClass]:
        return iter(tuple(self._by_name.values()))

    def __len__(self) -> int:
        return len(self._by_name)

    def __repr__(self) -> str:
        return f"<TaskClassRegistry({len(self._by_name)} task classes)>"


default_registry: Final = TaskClassRegistry()


@final
class RegistrationSession:
    """What was registered while the session was open (see :func:`registering_into`).

    ``added`` lists ``(registry, task_class)`` pairs in registration order,
    whichever registry each went to, so a failed load can take them back. A
    pair is recorded *before* the registration is made, so that an interrupt
    (``KeyboardInterrupt``) between the two can never leave an unrecorded
    registration; a pair whose registration did not happen is simply not held
    by its registry, and every reader below checks that.

    :meth:`open`, :meth:`close` and :meth:`rollback` are idempotent, so an
    undo that was itself interrupted can be run again from the start.
    """

    def __init__(self, registry: TaskClassRegistry) -> None:
        self.registry: Final = registry
        self.added: Final[list[tuple[TaskClassRegistry, TaskClass]]] = []
        self._previous: RegistrationSession | None = None
        self._token: Token[RegistrationSession | None] | None = None

    def open(self) -> None:
        """Make this the session of the current context (thread or task)."""
        if _session.get() is self:
            return
        self._previous = _session.get()
        self._token = _session.set(self)

    def close(self) -> None:
        """Give the context back its previous session; a no-op unless this one is current."""
        if _session.get() is not self:
            return
        token, self._token = self._token, None
        if token is not None:
            try:
                _session.reset(token)
            except (RuntimeError, ValueError):  # used already, or made in another context
                pass
            else:
                return
        _session.set(self._previous)

    def registered(self) -> tuple[tuple[TaskClassRegistry, TaskClass], ...]:
        """Return the recorded pairs whose registration is in place, in order."""
        return tuple((reg, tc) for reg, tc in self.added if reg.holds(tc))

    def find(self, name: str) -> TaskClass | None:
        """Return the first task class registered as ``name`` in this session, if any."""
        return next((tc for reg, tc in self.added if tc.name == name and reg.holds(tc)), None)

    def names(self) -> tuple[str, ...]:
        """Return the names registered in this session, in order."""
        return tuple(task_class.name for _, task_class in self.registered())

    def rollback(self) -> None:
        """Unregister everything this session registered."""
        for registry, task_class in reversed(self.added):
            if registry.holds(task_class):
                registry.unregister(task_class.name)
        self.added.clear()


_session: ContextVar[RegistrationSession | None] = ContextVar(
    "codegenie_eval_registration_session", default=None
)


@contextmanager
def registering_into(registry: TaskClassRegistry) -> Iterator[RegistrationSession]:
    """Direct undirected registrations in this context to ``registry``.

    ``@register_task_class(...)`` calls without ``registry=`` made while the
    block runs (in this thread or task) land in ``registry``. The yielded
    session records every registration made in the block.
    """
    session = RegistrationSession(registry)
    try:
        session.open()
        yield session
    finally:
        session.close()


def _register(task_class: TaskClass, explicit: TaskClassRegistry | None) -> None:
    session = _session.get()
    if explicit is not None:
        registry = explicit
    elif session is not None:
        registry = session.registry
    else:
        # Looked up at call time so that a test may replace the module attribute.
        registry = sys.modules[__name__].default_registry
    if session is not None:
        # Recorded first: see RegistrationSession.
        session.added.append((registry, task_class))
    registry.register(task_class)


def _relative_part(value: str, what: str) -> PurePosixPath:
    path = PurePosixPath(value)
    if not value or path.is_absolute() or ".." in path.parts or "\\" in value:
        msg = f"{what} must be a relative path inside the task-class directory, got {value!r}"
        raise ValueError(msg)
    return path


def _first_doc_line(cls: type[object]) -> str | None:
    doc = cls.__doc__
    if not doc:
        return None
    for line in doc.strip().splitlines():
        if line.strip():
            return line.strip()
    return None


def register_task_class(
    name: str,
    *,
    description: str | None = None,
    rubric: str = "rubric.py",
    cases: str = "cases",
    case_model: type[BaseModel] | None = None,
    over_limit: OverLimit = "error",
    registry: TaskClassRegistry | None = None,
    warm: bool = True,
    reads_expected: bool = False,
) -> Callable[[_T], _T]:
    """Register the decorated class as the task class ``name``; return it unchanged.

    ``rubric`` and ``cases`` are paths relative to the directory of the module
    that defines the class. ``description`` defaults to the first line of the
    class docstring. ``case_model`` is a pydantic model that validates the
    task-specific keys of each case's ``case.toml`` (every key but the common
    ``description``, ``tags``, ``timeout`` and ``id``; see
    :mod:`codegenie.eval.cases`); without one, those keys are kept as a dict.
    The class goes to ``registry`` when given, else to the registry of the
    load in progress (see :func:`registering_into`), else to
    ``default_registry``. ``over_limit`` is what grading makes of a candidate
    whose run went over its timeout or another limit: ``"error"`` (the
    default: the run says nothing of the candidate) or ``"failed"`` (the
    candidate's fault, as an endless loop is); a case's ``over-limit`` key
    overrides it. ``warm=False`` makes every run of the task class start an
    interpreter of its own, as ``python rubric.py`` does, where a batch of
    runs would fork each from a warm worker (whose ending leaves out a few
    steps of the interpreter's shutdown: ``docs/rubrics.md``).
    ``reads_expected=True`` declares that the rubric compares a candidate
    with the case's reference: its runs' ``CASE_DIR`` holds the case's
    ``expected/``, which every other run's leaves out (``show``, the reports
    and ``check`` say so, and ``check --rubrics`` warns when candidate code
    can read it: ``answer-key-readable``).

    Raises ``InvalidTaskClassName`` for a name that breaks the slug rules,
    ``ValueError`` for an ``over_limit`` other than those two, a rubric or
    cases path that leaves the task-class directory or a ``case_model``
    field named like a common key,
    ``TypeError`` for a ``case_model`` that is not a ``BaseModel`` subclass,
    and ``TaskClassAlreadyRegistered`` when the registry already holds
    another task class of that name.
    """
    check_slug(name)
    if over_limit not in ("error", "failed"):
        msg = f'over_limit must be "error" or "failed", got {over_limit!r}'
        raise ValueError(msg)
    rubric_part = _relative_part(rubric, "rubric")
    cases_part = _relative_part(cases, "cases")
    if case_model is not None:
        # Imported here: registrations without a case model do not pay for the
        # case reader (tomllib and its helpers).
        from codegenie.eval.cases import check_case_model  # noqa: PLC0415 - see above

        check_case_model(case_model)

    def decorate(cls: _T) -> _T:
        module = sys.modules.get(cls.__module__)
        file = getattr(module, "__file__", None)
        source = Path(file).resolve() if file else None
        base = source.parent if source is not None else None
        task_class = TaskClass(
            name=name,
            module=cls.__module__,
            source=source,
            description=description if description is not None else _first_doc_line(cls),
            rubric=base / rubric_part if base is not None else None,
            cases=base / cases_part if base is not None else None,
            cls=cls,
            case_model=case_model,
            over_limit=over_limit,
            warm=warm,
            reads_expected=reads_expected,
        )
        _register(task_class, registry)
        return cls

    return decorate
