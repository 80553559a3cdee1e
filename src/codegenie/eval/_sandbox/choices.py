"""The words that name where rubric runs happen: the providers, and ``auto``.

Declared once here, without importing the sandbox itself, so that the
command line's ``--sandbox`` choices, the settings' validation and the
result models read the same words at no start-up cost.
"""

from __future__ import annotations

from typing import Final, Literal

__all__ = ("CHOICES", "PROVIDERS", "ProviderName", "SandboxChoice")

#: A provider of runs: ``bwrap`` (bubblewrap) or ``none`` (a plain subprocess).
ProviderName = Literal["bwrap", "none"]
#: What ``--sandbox`` (and the ``sandbox`` setting) takes: a provider, or ``auto``.
SandboxChoice = Literal["auto", "bwrap", "none"]
#: The providers, in the order ``--help`` lists them.
PROVIDERS: Final[tuple[ProviderName, ...]] = ("bwrap", "none")
#: Every word ``--sandbox`` takes; ``auto`` (the default) is bubblewrap.
CHOICES: Final[tuple[SandboxChoice, ...]] = ("auto", *PROVIDERS)
