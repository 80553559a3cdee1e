"""Registers the ``vuln-remediation`` task class and the schema of its cases.

Imported in-process by the loader; it must stay cheap and must never import
``rubric.py`` (ADR-0001: rubrics run only in a subprocess).
"""

from __future__ import annotations

import re
from typing import Annotated, Self

from pydantic import BaseModel, ConfigDict, Field, model_validator

from codegenie.eval import register_task_class

# PEP 508 names; versions as the rubric compares them (numbers, then letters).
_PACKAGE = r"^[A-Za-z0-9]([A-Za-z0-9._-]*[A-Za-z0-9])?$"
_VERSION = r"^[0-9]+(\.[0-9]+)*([a-z]+[0-9]*)?$"
_ADVISORY = r"^(CVE-[0-9]{4}-[0-9]{4,}|GHSA(-[23456789cfghjmpqrvwx]{4}){3}|PYSEC-[0-9]{4}-[0-9]+)$"


def _release(version: str) -> tuple[int, ...]:
    return tuple(int(part) for part in re.findall(r"[0-9]+", version))


class VulnRemediationCase(BaseModel):
    """A pinned dependency with a known advisory, and the first release that fixes it."""

    model_config = ConfigDict(frozen=True, extra="forbid", strict=True)

    package: Annotated[str, Field(pattern=_PACKAGE, description="The vulnerable distribution.")]
    vulnerable_version: Annotated[
        str,
        Field(
            alias="vulnerable-version",
            pattern=_VERSION,
            description="The release the input pins.",
        ),
    ]
    fixed_version: Annotated[
        str,
        Field(
            alias="fixed-version",
            pattern=_VERSION,
            description="The first release that fixes the advisory.",
        ),
    ]
    advisory: Annotated[
        str,
        Field(pattern=_ADVISORY, description="The advisory: a CVE, GHSA or PYSEC id."),
    ]

    @model_validator(mode="after")
    def _fixed_after_vulnerable(self) -> Self:
        if _release(self.fixed_version) <= _release(self.vulnerable_version):
            msg = (
                f"fixed-version {self.fixed_version} must come after "
                f"vulnerable-version {self.vulnerable_version}"
            )
            raise ValueError(msg)
        return self


@register_task_class(
    "vuln-remediation",
    description="Upgrade a vulnerable pinned dependency to a fixed release.",
    case_model=VulnRemediationCase,
)
class VulnRemediation:
    """Upgrade a vulnerable pinned dependency to a fixed release.

    Each case is a ``requirements.txt`` pinning a release with a known
    advisory; a solution pins a release at or above the first fixed version and
    leaves every other line as it was.
    """
