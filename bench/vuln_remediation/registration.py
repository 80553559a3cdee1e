"""Registers the ``vuln-remediation`` task class.

Imported in-process by the loader; it must stay cheap and must never import
``rubric.py`` (ADR-0001: rubrics run only in a subprocess).
"""

from codegenie.eval import register_task_class


@register_task_class(
    "vuln-remediation",
    description="Upgrade a vulnerable pinned dependency to a fixed release.",
)
class VulnRemediation:
    """Upgrade a vulnerable pinned dependency to a fixed release.

    Each case is a ``requirements.txt`` pinning a release with a known
    advisory; a solution pins a release at or above the first fixed version and
    leaves every other line as it was.
    """
