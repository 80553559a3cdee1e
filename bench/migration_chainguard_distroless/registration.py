"""Registers the ``migration-chainguard-distroless`` task class.

Imported in-process by the loader; it must stay cheap and must never import
``rubric.py`` (ADR-0001: rubrics run only in a subprocess).
"""

from codegenie.eval import register_task_class


@register_task_class(
    "migration-chainguard-distroless",
    description="Move a Dockerfile's runtime stage to a Chainguard distroless image.",
)
class MigrationChainguardDistroless:
    """Move a Dockerfile's runtime stage to a Chainguard distroless image.

    Each case is a Dockerfile built on a full distribution image; a solution
    builds in a ``-dev`` Chainguard stage and runs from a distroless Chainguard
    image whose final stage has no ``RUN`` instruction (there is no shell).
    """
