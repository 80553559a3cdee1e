"""Slug rules, and the one place a slug becomes a Python identifier.

A *slug* (``vuln-remediation``) names a task class everywhere a person types it:
``bench.toml`` keys, ``load_task_class``, the command line. Its package is the
slug with hyphens turned into underscores (``vuln_remediation``).
"""

from __future__ import annotations

import difflib
import heapq
import itertools
import keyword
import re
from collections.abc import Iterable
from typing import Final

from codegenie.eval.errors import InvalidTaskClassName

__all__ = (
    "MAX_SLUG_LENGTH",
    "RESERVED_SLUGS",
    "SHORTLIST_SIZE",
    "SLUG_PATTERN",
    "check_slug",
    "closest",
    "normalize_slug",
    "rank",
    "shortlist",
    "slug_problem",
    "slug_to_identifier",
    "suggestion_key",
)

#: The slug grammar, for JSON Schema and documentation (reserved names aside).
SLUG_PATTERN: Final = r"^[a-z][a-z0-9-]*[a-z0-9]$"
MAX_SLUG_LENGTH: Final = 64

#: Slugs that pass the grammar but cannot name a task class: ``registration``
#: would shadow the registration submodule, and a keyword (``class``) has a
#: module form that no import statement can name.
RESERVED_SLUGS: Final = frozenset({"registration", *keyword.kwlist})

_ASCII_UPPER: Final = re.compile(r"[A-Z]")
_NON_SLUG: Final = re.compile(r"[^a-z0-9-]")
_VALID: Final = re.compile(r"[a-z][a-z0-9-]*[a-z0-9]")
# Anything a person may type between the words of a slug (ASCII letters and digits aside).
_SEPARATORS: Final = re.compile(r"[^a-z0-9\u0080-\U0010ffff]+")


def slug_problem(name: str) -> str | None:
    """Return why ``name`` is not a valid slug, or ``None`` when it is.

    The reasons, checked in this order (the first broken rule wins): ``empty``,
    ``too short``, ``too long``, ``wrong case``, ``leading hyphen``, ``trailing
    hyphen``, ``non-slug character``, ``reserved name``. Pure: no I/O.
    """
    if _VALID.fullmatch(name) and len(name) <= MAX_SLUG_LENGTH:
        return "reserved name" if name in RESERVED_SLUGS else None
    if not name:
        return "empty"
    if len(name) < 2:
        return "too short"
    if len(name) > MAX_SLUG_LENGTH:
        return "too long"
    if _ASCII_UPPER.search(name):
        return "wrong case"
    if name.startswith("-"):
        return "leading hyphen"
    if name.endswith("-"):
        return "trailing hyphen"
    # Anything left is a character outside [a-z0-9-] (a newline, a dot, a
    # slash, non-ASCII) or a first character that is a digit.
    return "non-slug character"


def check_slug(name: object) -> str:
    """Return ``name`` if it is a valid slug.

    Raises ``TypeError`` when ``name`` is not a ``str`` and
    ``InvalidTaskClassName`` (with the reason) when it breaks a slug rule.
    """
    if not isinstance(name, str):
        msg = f"task-class name must be a str, not {type(name).__name__}"
        raise TypeError(msg)
    reason = slug_problem(name)
    if reason is not None:
        raise InvalidTaskClassName(name, reason)
    return name


def slug_to_identifier(slug: str) -> str:
    """Return the package name of a valid slug: hyphens become underscores."""
    return slug.replace("-", "_")


def normalize_slug(name: str) -> str:
    """Return ``name`` in the form a slug would take: lowercase, words joined by hyphens.

    Letters are lowercased and every run of other separators (``_``,
    spaces, dots, slashes, repeated hyphens) becomes one hyphen, with none
    left at either end: ``Alpha_One`` and ``alpha one`` become ``alpha-one``.
    The result is not checked against the slug rules. Pure: no I/O.
    """
    return _SEPARATORS.sub("-", name.lower()).strip("-")


def closest(name: str, candidates: Iterable[str], *, limit: int = 3) -> tuple[str, ...]:
    """Return up to ``limit`` of ``candidates`` close to ``name``, best first.

    ``name`` is compared in its slug form (:func:`normalize_slug`), so case and
    separators never stand in the way: ``Alpha-One``, ``alpha_one`` and
    ``alpha one`` all suggest ``alpha-one``, first. Linear in the number of
    candidates: a large pool is first narrowed to the names sharing the most
    character pairs with ``name`` (:func:`shortlist`), and only those are
    ranked by ``difflib`` (costly per name), so 13,000 candidates take a few
    milliseconds.
    """
    pool = list(candidates)
    normalized = suggestion_key(name)
    found = rank(normalized, shortlist(normalized, pool), limit=limit)
    if normalized in pool and normalized not in found:
        found = (normalized, *found)[:limit]
    return found


def suggestion_key(name: str) -> str:
    """Return ``name`` as suggestions compare it: its slug form, else lower case with hyphens."""
    return normalize_slug(name) or name.lower().replace("_", "-")


def shortlist(normalized: str, pool: list[str]) -> list[str]:
    """Return ``pool`` narrowed to the ``SHORTLIST_SIZE`` names worth ranking.

    A pool of at most ``SHORTLIST_SIZE`` names is returned as it is; a larger
    one is cut to the names sharing the most distinct character pairs with
    ``normalized``, most first, ties in pool order. The manifest cache
    computes the very same list from its bigram index
    (:meth:`codegenie.eval._cache.entry.Entry.shortlist`).
    """
    if len(pool) <= SHORTLIST_SIZE:
        return pool
    pairs = set(itertools.pairwise(normalized))
    shared = pairs.intersection
    return heapq.nlargest(SHORTLIST_SIZE, pool, key=lambda c: len(shared(itertools.pairwise(c))))


def rank(normalized: str, pool: Iterable[str], *, limit: int = 3) -> tuple[str, ...]:
    """Return up to ``limit`` names of ``pool`` close to ``normalized``, best first (difflib)."""
    return tuple(difflib.get_close_matches(normalized, list(pool), n=limit, cutoff=0.6))


#: How many names :func:`shortlist` keeps for ``difflib`` to rank.
SHORTLIST_SIZE: Final = 64
