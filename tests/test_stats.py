"""pass@k, McNemar's exact test and the paired bootstrap, against their definitions."""

from __future__ import annotations

import math
from fractions import Fraction
from itertools import combinations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from codegenie.eval._stats.compare import Interval, mcnemar_exact, paired_bootstrap
from codegenie.eval._stats.passk import default_ks, pass_at_k, pass_at_k_of_case


def exact_pass_at_k(n: int, c: int, k: int) -> Fraction:
    """The definition: 1 - C(n - c, k) / C(n, k), in exact arithmetic."""
    return 1 - Fraction(math.comb(n - c, k), math.comb(n, k))


@st.composite
def cases(draw: st.DrawFn) -> tuple[int, int, int]:
    n = draw(st.integers(1, 200))
    return n, draw(st.integers(0, n)), draw(st.integers(1, n))


@given(cases())
def test_the_product_form_is_the_combinatorial_definition(case: tuple[int, int, int]) -> None:
    n, c, k = case
    assert pass_at_k_of_case(n, c, k) == pytest.approx(float(exact_pass_at_k(n, c, k)), abs=1e-12)


def test_pass_at_k_by_enumerating_every_draw() -> None:
    """For a small case, the share of k-subsets holding a pass, counted one by one."""
    samples = [True, False, False, True, False, False, False]
    for k in range(1, len(samples) + 1):
        draws = list(combinations(samples, k))
        share = Fraction(sum(any(draw) for draw in draws), len(draws))
        assert pass_at_k_of_case(len(samples), sum(samples), k) == pytest.approx(float(share))


def test_the_edges() -> None:
    assert pass_at_k_of_case(5, 0, 1) == 0.0
    assert pass_at_k_of_case(5, 5, 5) == 1.0
    assert pass_at_k_of_case(10, 1, 10) == 1.0
    assert pass_at_k_of_case(1, 1, 1) == 1.0
    assert pass_at_k_of_case(4, 1, 1) == 0.25


@pytest.mark.parametrize(("n", "c", "k"), [(3, 4, 1), (3, -1, 1), (3, 1, 0), (3, 1, 4)])
def test_undefined_estimates_are_refused(n: int, c: int, k: int) -> None:
    with pytest.raises(ValueError, match="must be between"):
        pass_at_k_of_case(n, c, k)


def test_a_benchmarks_pass_at_k_is_the_mean_over_cases() -> None:
    assert pass_at_k([(1, 1), (1, 0)], 1) == 0.5
    assert pass_at_k([(10, 5), (10, 0)], 10) == 0.5
    assert pass_at_k([], 1) is None


def test_the_default_ks_are_those_every_case_has_samples_for() -> None:
    assert default_ks([1, 1]) == (1,)
    assert default_ks([10, 12]) == (1, 10)
    assert default_ks([100, 200]) == (1, 10, 100)
    assert default_ks([100, 9]) == (1,)
    assert default_ks([]) == (1,)


def exact_mcnemar(improved: int, regressed: int) -> Fraction:
    changed = improved + regressed
    tail = sum(
        (Fraction(math.comb(changed, i), 2**changed) for i in range(min(improved, regressed) + 1)),
        Fraction(0),
    )
    return min(Fraction(1), 2 * tail)


@given(st.integers(0, 300), st.integers(0, 300))
def test_mcnemar_is_the_two_sided_binomial_test(improved: int, regressed: int) -> None:
    expected = 1.0 if improved + regressed == 0 else float(exact_mcnemar(improved, regressed))
    assert mcnemar_exact(improved, regressed) == pytest.approx(expected, rel=1e-12)
    assert mcnemar_exact(improved, regressed) == mcnemar_exact(regressed, improved)


def test_mcnemar_known_values() -> None:
    assert mcnemar_exact(0, 0) == 1.0
    assert mcnemar_exact(5, 5) == 1.0
    assert mcnemar_exact(0, 6) == pytest.approx(2 / 64)
    assert mcnemar_exact(1, 9) == pytest.approx(22 / 1024)


@given(st.lists(st.tuples(st.floats(0, 1), st.floats(0, 1)), min_size=1, max_size=40))
def test_the_bootstrap_is_seeded_and_holds_the_observed_difference(
    pairs: list[tuple[float, float]],
) -> None:
    base, new = [a for a, _ in pairs], [b for _, b in pairs]
    first = paired_bootstrap(base, new, resamples=500)
    assert first == paired_bootstrap(base, new, resamples=500)
    assert first.low <= first.high
    assert min(b - a for a, b in pairs) - 1e-9 <= first.low
    assert first.high <= max(b - a for a, b in pairs) + 1e-9
    assert first.difference == pytest.approx(sum(b - a for a, b in pairs) / len(pairs))


def test_identical_runs_differ_by_nothing() -> None:
    assert paired_bootstrap([0.5, 1.0, 0.0], [0.5, 1.0, 0.0]) == Interval(0.0, 0.0, 0.0)


def test_runs_of_different_cases_are_refused() -> None:
    with pytest.raises(ValueError, match="same cases"):
        paired_bootstrap([1.0], [1.0, 0.0])
    with pytest.raises(ValueError, match="no case"):
        paired_bootstrap([], [])
