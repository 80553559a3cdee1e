"""codegenie.eval.naming: the slug rules and the slug → identifier crossing."""

from __future__ import annotations

import keyword
import re

import pytest
from hypothesis import given
from hypothesis import strategies as st

from codegenie.eval.errors import InvalidTaskClassName
from codegenie.eval.naming import (
    RESERVED_SLUGS,
    SLUG_PATTERN,
    check_slug,
    closest,
    normalize_slug,
    slug_problem,
    slug_to_identifier,
)

VALID = st.from_regex(r"[a-z][a-z0-9-]{0,62}[a-z0-9]\Z", fullmatch=True).filter(
    lambda s: s not in RESERVED_SLUGS
)


@pytest.mark.parametrize(
    "name", ["ab", "foo", "vuln-remediation", "a-b-c-d-e", "x1", "a--b", "a" * 64, "match"]
)
def test_valid_slugs_pass(name: str) -> None:
    """Lowercase ASCII letters, digits and hyphens, 2 to 64 long, pass."""
    assert slug_problem(name) is None
    assert check_slug(name) == name


def test_first_broken_rule_wins() -> None:
    """The reasons follow the documented order (docs/errors.md): empty, too short, too long, wrong case, …"""
    assert slug_problem("A") == "too short"
    assert slug_problem("A" * 65) == "too long"
    assert slug_problem("-Foo") == "wrong case"
    assert slug_problem("-foo-") == "leading hyphen"
    assert slug_problem("foo_-") == "trailing hyphen"


def test_check_slug_raises_typed() -> None:
    """check_slug raises InvalidTaskClassName with the reason, TypeError for non-str."""
    with pytest.raises(InvalidTaskClassName) as exc:
        check_slug("Foo")
    assert exc.value.reason == "wrong case"
    with pytest.raises(TypeError):
        check_slug(b"foo")


def test_every_python_keyword_that_looks_like_a_slug_is_reserved() -> None:
    """A keyword's package could never be named by an import statement."""
    for word in keyword.kwlist:
        if re.fullmatch(SLUG_PATTERN, word):
            assert slug_problem(word) == "reserved name"


@given(VALID)
def test_slug_to_identifier_round_trips(slug: str) -> None:
    """Every valid slug maps to an identifier that maps back to it (property)."""
    ident = slug_to_identifier(slug)
    assert ident.isidentifier()
    assert ident.isascii()
    assert not keyword.iskeyword(ident)
    assert ident.replace("_", "-") == slug


@given(st.text(max_size=70))
def test_slug_problem_agrees_with_the_pattern(text: str) -> None:
    """A string passes exactly when it matches the grammar, is short enough and not reserved."""
    expected = (
        re.fullmatch(r"[a-z][a-z0-9-]*[a-z0-9]", text) is not None
        and len(text) <= 64
        and text not in RESERVED_SLUGS
    )
    assert (slug_problem(text) is None) == expected


def test_closest_suggests_typos_and_underscore_forms() -> None:
    """Close names and the underscore spelling of a slug are suggested."""
    names = ["vuln-remediation", "migration-chainguard-distroless"]
    assert closest("vuln-remediaton", names) == ("vuln-remediation",)
    assert closest("vuln_remediation", names) == ("vuln-remediation",)
    assert closest("zzz", names) == ()
    assert closest("anything", []) == ()


@pytest.mark.parametrize(
    "typed", ["Alpha-One", "alpha_one", "ALPHA_ONE", "alpha one", "alpha.one", "-alpha--one-"]
)
def test_closest_normalises_case_and_separators_first(typed: str) -> None:
    """Case and separators are normalised before matching: the slug form is suggested first."""
    names = ["alpha-two", "alpha-one", "beta-one"]
    assert closest(typed, names)[0] == "alpha-one"


@pytest.mark.parametrize(
    ("typed", "normal"),
    [("Alpha-One", "alpha-one"), ("alpha__one", "alpha-one"), (" x y ", "x-y"), ("", "")],
)
def test_normalize_slug(typed: str, normal: str) -> None:
    """normalize_slug lowercases and joins words with single hyphens."""
    assert normalize_slug(typed) == normal
