"""The words that name where rubric runs happen: the providers, and ``auto``.

Declared once here, without importing the sandbox itself, so that the
command line's ``--sandbox`` choices, the settings' validation and the
result models read the same words at no start-up cost.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Final, Literal

__all__ = ("CHOICES", "PROVIDERS", "ProviderName", "SandboxChoice", "least_contained")

#: A provider of runs: ``bwrap`` (bubblewrap) or ``none`` (a plain subprocess).
ProviderName = Literal["bwrap", "none"]
#: What ``--sandbox`` (and the ``sandbox`` setting) takes: a provider, or ``auto``.
SandboxChoice = Literal["auto", "bwrap", "none"]
#: The providers, most contained first (the order ``--help`` lists them in).
PROVIDERS: Final[tuple[ProviderName, ...]] = ("bwrap", "none")
#: Every word ``--sandbox`` takes; ``auto`` (the default) is bubblewrap.
CHOICES: Final[tuple[SandboxChoice, ...]] = ("auto", *PROVIDERS)


def least_contained(names: Iterable[str]) -> ProviderName:
    """Return the least contained of the providers ``names`` (reports' ``sandbox`` words).

    What runs made by several providers were made in, as a whole (the
    shards of a merged report): contained only if every one was. A word
    that names no provider counts as the least contained; none at all as
    the most.
    """
    rank: dict[str, int] = {name: index for index, name in enumerate(PROVIDERS)}
    worst = max((rank.get(name, len(PROVIDERS)) for name in names), default=0)
    return PROVIDERS[min(worst, len(PROVIDERS) - 1)]
