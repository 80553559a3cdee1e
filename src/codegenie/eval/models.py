"""The value objects the loader hands out."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict

__all__ = ("TaskClass",)


class TaskClass(BaseModel):
    """A registered task class: what ``@register_task_class`` recorded.

    Frozen and hashable. ``source`` is the resolved file of the module that
    registered it (``None`` only for a class defined where no file exists, such
    as an interactive session); ``rubric`` and ``cases`` are resolved against
    that file's directory. ``cls`` is the decorated class itself.
    """

    model_config = ConfigDict(frozen=True, extra="forbid", strict=True)

    name: str
    module: str
    source: Path | None
    description: str | None
    rubric: Path | None
    cases: Path | None
    cls: type[object]

    def __repr__(self) -> str:
        return f"TaskClass(name={self.name!r}, module={self.module!r})"

    def to_json(self) -> dict[str, Any]:
        """Return the documented JSON shape (``show``, and each entry of a run plan)."""
        return {
            "slug": self.name,
            "module": self.module,
            "source": str(self.source) if self.source else None,
            "description": self.description,
            "rubric": str(self.rubric) if self.rubric else None,
            "cases": str(self.cases) if self.cases else None,
        }
