"""``Runner.plan``: resolve a list of slugs into a run plan, in-process."""

from __future__ import annotations

import types
from collections.abc import Generator, Iterable
from pathlib import Path
from typing import Any, final

from pydantic import BaseModel, ConfigDict, Field, model_serializer

from codegenie.eval._manifest.model import BenchManifest
from codegenie.eval._resolve import resolve
from codegenie.eval.errors import EvalError, RunPlanError
from codegenie.eval.models import PlannedEnvironment, TaskClass
from codegenie.eval.registry import TaskClassRegistry

__all__ = ("RunPlan", "Runner")


class RunPlan(BaseModel):
    """The task classes a run will use, in the order requested, their cases and environments.

    Frozen. ``case_ids`` maps each slug to the ids of its cases, sorted;
    ``environments`` each slug whose entry declares its own environment
    (``environment``, ``python``) to it, as a :class:`PlannedEnvironment`
    (what is declared, and the digest when known without building); a slug
    absent from it runs in the harness's interpreter.

    Its JSON form (``model_dump_json()``, ``model_dump(mode="json")``,
    ``to_json()``) is the document ``codegenie-bench plan --format json``
    prints, which the command builds from it: ``{"manifest": PATH,
    "task_classes": [...]}``, each task class as ``show`` prints it (``slug``,
    ``module``, ``source``, ``description``, ``rubric``, ``cases``) with its
    ``case_ids`` and its ``environment`` (``{"requirements", "python",
    "digest"}``, ``null``: the harness's). Python mode (``model_dump()``)
    keeps the fields as they are.
    """

    model_config = ConfigDict(frozen=True, extra="forbid", strict=True)

    manifest: Path
    task_classes: tuple[TaskClass, ...]
    case_ids: dict[str, tuple[str, ...]] = Field(default_factory=dict)
    environments: dict[str, PlannedEnvironment] = Field(default_factory=dict)

    def slugs(self) -> tuple[str, ...]:
        """Return the slugs of the plan, in order."""
        return tuple(task_class.name for task_class in self.task_classes)

    @model_serializer(mode="plain", when_used="json")
    def _as_plan_document(self) -> dict[str, Any]:
        # One JSON shape for the plan, whoever asks: the command line prints this.
        return {
            "manifest": str(self.manifest),
            "task_classes": [
                {
                    **tc.to_json(),
                    "case_ids": list(self.case_ids.get(tc.name, ())),
                    "environment": (
                        environment.to_json()
                        if (environment := self.environments.get(tc.name)) is not None
                        else None
                    ),
                }
                for tc in self.task_classes
            ],
        }

    def to_json(self) -> dict[str, Any]:
        """Return the plan's JSON form as a dict: ``model_dump(mode="json")``."""
        return self.model_dump(mode="json")


@final
class Runner:
    """Resolves task classes of one manifest for a run.

    ``registry`` receives the registrations (default: ``default_registry``).
    """

    def __init__(
        self, manifest: BenchManifest, *, registry: TaskClassRegistry | None = None
    ) -> None:
        self.manifest = manifest
        self.registry = registry

    def __repr__(self) -> str:
        return f"Runner(manifest={str(self.manifest.path)!r})"

    async def plan(self, slugs: Iterable[str] | None = None) -> RunPlan:
        """Resolve ``slugs`` (default: every manifest entry, in manifest order).

        Each slug goes through ``load_task_class``, one after another (the
        loader is caller-serialized), yielding to the event loop between
        slugs; then its cases are read and validated (``BenchCasesInvalid``
        for that slug when any is wrong; the rubric is never run), and the
        environment its entry declares is looked at, never built (its digest
        when the requirements file can be read and this machine has the
        Python asked for; a plan never fails for an environment). A slug
        named twice is resolved once. Every slug is tried: a failing one —
        whatever its registration raised — is recorded and the next one
        resolved. Returns the ``RunPlan``, or raises one
        ``RunPlanError`` whose ``errors`` hold each failing slug's own typed
        error and whose ``resolved`` holds the task classes that did resolve.

        ``KeyboardInterrupt`` stops the plan (after the interrupted load is
        undone). ``slugs`` that is a ``str`` or holds anything but ``str`` is a
        ``TypeError``, raised before any slug is resolved.
        """
        requested = self.manifest.slugs() if slugs is None else _checked_slugs(slugs)
        resolved: list[TaskClass] = []
        case_ids: dict[str, tuple[str, ...]] = {}
        environments: dict[str, PlannedEnvironment] = {}
        errors: dict[str, EvalError] = {}
        for slug in requested:
            try:
                found = resolve(slug, self.manifest, registry=self.registry)
                task_class = found.task_class
                cases = found.cases.raise_for_problems()
            except EvalError as error:
                errors[slug] = error
            else:
                resolved.append(task_class)
                case_ids[slug] = tuple(case.id for case in cases)
                environment = self._environment(slug)
                if environment is not None:
                    environments[slug] = environment
            await _yield_to_loop()
        if errors:
            raise RunPlanError(errors, tuple(resolved))
        return RunPlan(
            manifest=self.manifest.path,
            task_classes=tuple(resolved),
            case_ids=case_ids,
            environments=environments,
        )

    def _environment(self, slug: str) -> PlannedEnvironment | None:
        """Return the environment ``slug``'s entry declares (``None``: the harness's)."""
        entry = self.manifest.entry(slug)
        if entry.environment is None and entry.python is None:
            return None  # nothing of the environments' code is imported for such a bench
        from codegenie.eval._env.declared import planned_environment  # noqa: PLC0415 - only benches with environments pay for it

        return planned_environment(
            self.manifest.directory, entry.environment, entry.python, task_class=slug
        )


@types.coroutine
def _yield_to_loop() -> Generator[None, None, None]:
    """Let the event loop run other tasks once: ``asyncio.sleep(0)`` without ``asyncio``.

    A bare ``yield`` (of ``None``) is exactly what ``asyncio.sleep(0)`` does
    (its ``__sleep0``): asyncio's ``Task`` — the Python one and the C one —
    takes a ``None`` it is handed as "run me again on the next turn of the
    loop". Importing ``asyncio`` for this would cost ``codegenie-bench plan``
    about 35 ms (``ssl``, ``socket``, ``concurrent.futures``), a quarter of
    its floor. Any driver that sends ``None`` back — ``asyncio``, or the
    command line's ``send(None)`` loop — resumes the plan where it was.
    """
    yield


def _checked_slugs(slugs: Iterable[object]) -> tuple[str, ...]:
    """Return ``slugs`` without repeats, in order; ``TypeError`` unless it is an iterable of str."""
    if isinstance(slugs, str):
        msg = "slugs must be an iterable of slug strings, not a single str"
        raise TypeError(msg)
    listed: list[str] = []
    for slug in slugs:
        if not isinstance(slug, str):
            msg = f"slugs must be str, got {type(slug).__name__}"
            raise TypeError(msg)
        listed.append(slug)
    return tuple(dict.fromkeys(listed))
