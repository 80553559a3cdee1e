"""pass@k: the chance that at least one of k samples of a problem passes, estimated without bias.

For a case graded with ``n`` samples of which ``c`` passed, the estimator of
Chen et al. (2021), *Evaluating Large Language Models Trained on Code*, is
``1 - C(n - c, k) / C(n, k)``: one minus the chance that k samples drawn
without replacement from the n are all failures. It is computed in its
product form, ``1 - prod(1 - k / i for i in n - c + 1 .. n)``, which never
forms a binomial coefficient (``C(200, 100)`` has 59 digits) and stays exact
to a float's precision. A benchmark's pass@k is the mean over its cases.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from typing import Final

__all__ = ("DEFAULT_KS", "default_ks", "pass_at_k", "pass_at_k_of_case")

#: The k reported by default: 1 always, 10 and 100 where every case has that many samples.
DEFAULT_KS: Final = (1, 10, 100)


def pass_at_k_of_case(n: int, c: int, k: int) -> float:
    """Return the unbiased estimate of pass@k for one case: ``n`` samples, ``c`` of them passed.

    Raises ``ValueError`` unless ``0 <= c <= n`` and ``1 <= k <= n``: pass@k
    of fewer than k samples is not defined (no k samples can be drawn).
    """
    if not 0 <= c <= n:
        msg = f"the samples that passed must be between 0 and {n}, got {c}"
        raise ValueError(msg)
    if not 1 <= k <= n:
        msg = f"k must be between 1 and the number of samples ({n}), got {k}"
        raise ValueError(msg)
    if n - c < k:  # every draw of k holds a sample that passed
        return 1.0
    return 1.0 - math.prod(1.0 - k / i for i in range(n - c + 1, n + 1))


def pass_at_k(counts: Iterable[tuple[int, int]], k: int) -> float | None:
    """Return the mean pass@k over cases, each given as ``(samples, passed)``; ``None`` for none.

    Raises ``ValueError`` for a case with fewer than ``k`` samples (see
    :func:`pass_at_k_of_case`).
    """
    estimates = [pass_at_k_of_case(n, c, k) for n, c in counts]
    return math.fsum(estimates) / len(estimates) if estimates else None


def default_ks(samples: Sequence[int]) -> tuple[int, ...]:
    """Return the k of :data:`DEFAULT_KS` that every case (``samples`` of each) has enough for.

    1 is always reported, even for no case at all.
    """
    fewest = min(samples, default=0)
    return tuple(k for k in DEFAULT_KS if k == 1 or k <= fewest)
