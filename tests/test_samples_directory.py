"""Samples as directories: each case's samples sorted, what is not a sample named, typos caught."""

from __future__ import annotations

import os
from pathlib import Path

from codegenie.eval._samples.directory import SAMPLES_LIMIT, Unmatched, find_samples, unmatched


def make(root: Path, *names: str) -> None:
    for name in names:
        (root / name).mkdir(parents=True)


def test_each_case_has_its_sample_directories_sorted(tmp_path: Path) -> None:
    make(tmp_path, "add/s2", "add/s10", "add/s1", "sub/only")
    found = find_samples(str(tmp_path), ["add", "sub", "mul"])
    assert {case: [sid for sid, _ in samples] for case, samples in found.samples.items()} == {
        "add": ["s1", "s10", "s2"],
        "sub": ["only"],
    }
    assert found.samples["add"][0][1] == str(tmp_path / "add" / "s1")
    assert found.problems == ()


def test_what_is_not_a_sample_is_named_with_its_path(tmp_path: Path) -> None:
    make(tmp_path, "add/good", "add/Bad", "empty")
    (tmp_path / "add" / "notes.txt").write_text("x")
    os.symlink(tmp_path / "add" / "good", tmp_path / "add" / "link")
    (tmp_path / "flat").write_text("x")
    found = find_samples(str(tmp_path), ["add", "empty", "flat"])
    assert [sid for sid, _ in found.samples["add"]] == ["good"]
    reasons = {os.path.relpath(path, tmp_path): reason for path, reason in found.problems}
    assert reasons == {
        "add/Bad": "is not a sample: invalid sample id: it has uppercase letters; case ids are lowercase",
        "add/link": "is not a sample: not a directory",
        "add/notes.txt": "is not a sample: not a directory",
        "empty": "holds no sample (a directory per sample)",
        "flat": "is not a directory of samples",
    }


def test_entries_that_are_no_case_are_named_with_the_closest_ids(tmp_path: Path) -> None:
    make(tmp_path, "add", "ad", "fizzbuz", ".git", "zzz")
    assert unmatched(str(tmp_path), ["add", "fizzbuzz"]) == (
        Unmatched("ad", ("add",)),
        Unmatched("fizzbuz", ("fizzbuzz",)),
        Unmatched("zzz", ()),
    )
    assert unmatched(str(tmp_path / "missing"), ["add"]) == ()


def test_a_case_directory_past_the_limit_is_one_problem_and_is_not_listed_whole(
    tmp_path: Path,
) -> None:
    """One entry more than the limit: one problem for the case, not one per entry; at it, read."""
    over = tmp_path / "over"
    over.mkdir()
    for number in range(SAMPLES_LIMIT + 1):
        (over / f"junk-{number}.txt").touch()
    at = tmp_path / "at"
    at.mkdir()
    for number in range(SAMPLES_LIMIT):
        (at / f"s{number}").mkdir()
    found = find_samples(str(tmp_path), ["over", "at"])
    assert found.problems == ((str(over), f"holds more than {SAMPLES_LIMIT:,} samples (entries)"),)
    assert len(found.samples["at"]) == SAMPLES_LIMIT
