"""Registers the ``migration-chainguard-distroless`` task class and the schema of its cases.

Imported in-process by the loader; it must stay cheap and must never import
``rubric.py`` (ADR-0001: rubrics run only in a subprocess).
"""

from __future__ import annotations

from typing import Annotated

from pydantic import BaseModel, ConfigDict, Field, field_validator

from codegenie.eval import register_task_class

# An image under cgr.dev/chainguard/, named without a tag or digest, and not
# a -dev variant: the final stage must run on a distroless image.
_RUNTIME_IMAGE = r"^cgr\.dev/chainguard/[a-z0-9]+([._-][a-z0-9]+)*$"


class MigrationChainguardDistrolessCase(BaseModel):
    """The distroless Chainguard image a migrated Dockerfile must run from."""

    model_config = ConfigDict(frozen=True, extra="forbid", strict=True)

    runtime_image: Annotated[
        str,
        Field(
            alias="runtime-image",
            pattern=_RUNTIME_IMAGE,
            description="The final stage's image, without tag or digest "
            "(e.g. cgr.dev/chainguard/static).",
        ),
    ]

    @field_validator("runtime_image")
    @classmethod
    def _distroless(cls, value: str) -> str:
        if value.endswith("-dev"):
            msg = f"{value} is a -dev image (it has a shell); name the distroless one"
            raise ValueError(msg)
        return value


@register_task_class(
    "migration-chainguard-distroless",
    description="Move a Dockerfile's runtime stage to a Chainguard distroless image.",
    case_model=MigrationChainguardDistrolessCase,
)
class MigrationChainguardDistroless:
    """Move a Dockerfile's runtime stage to a Chainguard distroless image.

    Each case is a Dockerfile built on a full distribution image; a solution
    builds in a ``-dev`` Chainguard stage and runs from a distroless Chainguard
    image whose final stage has no ``RUN`` instruction (there is no shell).
    """
