"""Which cases ``grade`` grades: ``--case``, ``-k``, ``--tag``, ``--lf`` and ``--shard``.

A :class:`Selection` answers for a valid case (:meth:`Selection.selects`) and
for an invalid one, known only by its id (:meth:`Selection.selects_id`):
``grade`` grades the selected valid cases and refuses only when a selected
case is invalid, so one broken case does not stop the grading of the others.
"""

from __future__ import annotations

import fnmatch
from collections.abc import Collection, Container
from dataclasses import dataclass

from codegenie.eval.cases import Case

__all__ = ("Selection", "keyword_matches")

_GLOB = frozenset("*?[")


def keyword_matches(expression: str, case_id: str) -> bool:
    """Whether ``-k expression`` selects ``case_id``.

    A glob (``fnmatch``, case-sensitive) when ``expression`` holds ``*``,
    ``?`` or ``[``, matched against the whole id; otherwise a substring of the id.
    """
    if _GLOB & set(expression):
        return fnmatch.fnmatchcase(case_id, expression)
    return expression in case_id


@dataclass(frozen=True, slots=True)
class Selection:
    """What the command line asked for; every criterion given must hold.

    ``ids``: ``--case`` (``None``: any); ``keyword``: ``-k``; ``tags``:
    ``--tag`` (a case with any of them); ``last_failed``: the ids that did
    not pass last time (``None``: no ``--lf``, or nothing known); ``shard``:
    ``--shard`` (anything that says whether it holds an id).
    """

    ids: Collection[str] | None = None
    keyword: str | None = None
    tags: Collection[str] = ()
    last_failed: Collection[str] | None = None
    shard: Container[str] | None = None

    @property
    def narrowed(self) -> bool:
        """Whether anything narrows the selection (else every case is selected)."""
        return any(
            (
                self.ids is not None,
                self.keyword,
                self.tags,
                self.last_failed is not None,
                self.shard is not None,
            )
        )

    def selects_id(self, case_id: str) -> bool:
        """Whether the case ``case_id`` is selected by what its id alone can say."""
        return (
            (self.ids is None or case_id in self.ids)
            and (self.keyword is None or keyword_matches(self.keyword, case_id))
            and (self.last_failed is None or case_id in self.last_failed)
            and (self.shard is None or case_id in self.shard)
        )

    def selects(self, case: Case) -> bool:
        """Whether the valid ``case`` is selected."""
        tagged = not self.tags or any(tag in case.tags for tag in self.tags)
        return tagged and self.selects_id(case.id)

    def may_select_invalid(self, case_id: str) -> bool:
        """Whether an invalid case (its tags unknown) counts as selected: only without ``--tag``."""
        return not self.tags and self.selects_id(case_id)
