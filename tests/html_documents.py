"""Hand-written JSON documents of check, grade and compare reports, for the ``html`` format's tests.

They have the keys issue 25 adds (``run``, ``sampled``, ``pass_at_k``,
``fail_under``, each result's ``tags``, ``samples`` and the rest) whether
or not the code that writes reports has them yet: the page must read them
when they are there, and do without them when they are not.
"""

from __future__ import annotations

import random
from typing import Any

__all__ = (
    "HOSTILE",
    "check_document",
    "compare_document",
    "grade_document",
    "grade_result",
    "sample",
)

#: Strings an attacker would put in a reason, a case id, a tag or a run name.
HOSTILE = (
    "</script><script>window.__pwned=1</script>",
    '<img src=x onerror="window.__pwned=1">',
    "<!-- <script>window.__pwned=1</script>",
    "\"'><svg onload=window.__pwned=1>",
    "&lt;b&gt; &amp; \u2028\u2029 </style><style>body{display:none}</style>",
    "nul\x00 bell\x07 esc\x1b[31m \u202eevil",
    "javascript:window.__pwned=1",
)

_STATUSES = ("passed",) * 6 + ("failed",) * 3 + ("error",)
_TAGS = ("python", "go", "java", "flaky", "slow")


def sample(rng: random.Random, index: int, status: str | None = None) -> dict[str, Any]:
    """One sample of a sampled case, as grade's JSON gives it."""
    status = status or rng.choice(_STATUSES)
    error = status == "error"
    tail = 'Traceback (most recent call last):\n  File "rubric.py", line 3\nRuntimeError: boom\n'
    return {
        "sample": f"s{index:02d}",
        "status": status,
        "score": 1.0 if status == "passed" else round(rng.random() / 2, 4),
        "reason": "all expected files match"
        if status == "passed"
        else "test_cve failed: assert 403 == 200 (2 of 12 tests failed)",
        "duration_s": rng.uniform(0.2, 9),
        "wall_s": rng.uniform(0.2, 9),
        "cpu_s": rng.uniform(0.1, 5),
        "peak_memory_mib": rng.uniform(20, 400),
        "limit": None,
        "stderr_tail": tail if error else None,
        "traceback": tail if error else None,
        "verdict": {"passed": status == "passed", "score": 1.0, "reason": "r", "tests_run": 12},
        "candidate_digest": f"sha256:{rng.getrandbits(256):064x}",
        "reused": False,
    }


def grade_result(
    case: str,
    status: str,
    *,
    reason: str | None = None,
    tags: list[str] | None = None,
    samples: list[dict[str, Any]] | None = None,
    score: float | None = None,
    duration_s: float | None = 1.0,
) -> dict[str, Any]:
    """One entry of grade's ``results``; a sampled one's measures from its ``samples``."""
    result: dict[str, Any] = {
        "case": case,
        "status": status,
        "score": score,
        "reason": reason,
        "duration_s": duration_s,
        "wall_s": duration_s,
        "cpu_s": duration_s,
        "peak_memory_mib": 30.0,
        "limit": None,
        "stderr_tail": None,
        "traceback": None,
        "verdict": None,
        "tags": tags or [],
        "candidate_digest": None,
        "reused": False,
        "samples_total": 1,
        "samples_passed": int(status == "passed"),
        "samples": samples,
    }
    if samples is not None:
        passed = sum(s["status"] == "passed" for s in samples)
        result |= {
            "score": sum(s["score"] for s in samples) / len(samples),
            "reason": reason or f"{passed}/{len(samples)} samples passed",
            "duration_s": sum(s["duration_s"] for s in samples),
            "wall_s": sum(s["wall_s"] for s in samples),
            "cpu_s": sum(s["cpu_s"] for s in samples),
            "peak_memory_mib": max(s["peak_memory_mib"] for s in samples),
            "samples_total": len(samples),
            "samples_passed": passed,
        }
    return result


def grade_document(
    cases: int = 164, samples: int = 10, *, seed: int = 1, run_name: str = "nightly 42"
) -> dict[str, Any]:
    """A sampled grade report of ``cases`` cases of ``samples`` samples each (0: not sampled)."""
    rng = random.Random(seed)
    results = []
    for index in range(cases):
        case = f"cve-2024-{index:05d}"
        tags = rng.sample(_TAGS, 2)
        if samples:
            runs = [sample(rng, j) for j in range(samples)]
            passed = sum(s["status"] == "passed" for s in runs)
            status = (
                "error"
                if any(s["status"] == "error" for s in runs)
                else "passed"
                if passed == samples
                else "failed"
            )
            results.append(grade_result(case, status, tags=tags, samples=runs))
        else:
            status = rng.choice((*_STATUSES, "missing"))
            results.append(
                grade_result(
                    case,
                    status,
                    reason=f"reason of {case}",
                    tags=tags,
                    score=None if status in {"missing", "error"} else rng.random(),
                    duration_s=None if status == "missing" else rng.uniform(0.1, 3),
                )
            )
    counts = dict.fromkeys(("passed", "failed", "missing", "error"), 0)
    for result in results:
        counts[result["status"]] += 1
    return {
        "task_class": "vuln-remediation",
        "sandbox": "bwrap",
        "reused": 0,
        "results": results,
        "passed": counts["passed"],
        "total": len(results),
        "counts": counts,
        "ok": counts["passed"] == len(results) > 0,
        "mean_score": 0.6,
        "run": {
            "name": run_name,
            "candidates_digest": "sha256:" + "ab" * 32,
            "started_at": "2026-12-02T07:01:02Z",
            "finished_at": "2026-12-02T07:31:02Z",
            "tool_version": "0.4.0",
            "python": "3.11.2",
            "sandbox": "bwrap",
        },
        "sampled": bool(samples),
        "pass_at_k": {"1": 0.58, "10": 0.91} if samples else {"1": 0.5},
        "fail_under": 0.5 if samples else None,
    }


def check_document(diagnostics: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    """A check report: by default three diagnostics, two task classes and the manifest's."""
    if diagnostics is None:
        diagnostics = [
            diagnostic("module-missing", "error", "no module bench.alpha", slug="alpha"),
            diagnostic("golden-fails", "error", "expected/ failed: boom", slug="beta"),
            diagnostic("timeout-tight", "warning", "took 9.1 s of 10 s", slug="beta"),
            diagnostic("manifest-unused-root", "warning", "root 'old' holds nothing", slug=None),
        ]
    errors = sum(d["severity"] == "error" for d in diagnostics)
    warnings = sum(d["severity"] == "warning" for d in diagnostics)
    return {
        "ok": errors == 0,
        "manifest": "/home/curator/bench/bench.toml",
        "checked": 2,
        "declared": 2,
        "errors": errors,
        "warnings": warnings,
        "diagnostics": diagnostics,
        "strict": False,
        "task_classes": ["alpha", "beta"],
        "rubrics": {
            "sandbox": "bwrap",
            "repeat": 1,
            "ran": 4,
            "reused": 0,
            "cases": [
                {
                    "slug": "beta",
                    "case": "one",
                    "side": side,
                    "runs": 1,
                    "statuses": ["passed"],
                    "reused": False,
                    "wall_s": {"min": 0.4, "median": 0.5, "max": 0.6},
                    "cpu_s": None,
                    "peak_memory_mib": None,
                    "errors": [],
                }
                for side in ("expected", "input")
            ],
        },
    }


def diagnostic(
    code: str, severity: str, message: str, *, slug: str | None, hint: str | None = "fix it"
) -> dict[str, Any]:
    """One diagnostic, as check's JSON gives it."""
    return {
        "code": code,
        "severity": severity,
        "message": message,
        "file": None if slug is None else f"bench/{slug}/registration.py",
        "line": None if slug is None else 3,
        "column": None if slug is None else 1,
        "slug": slug,
        "hint": hint,
        "traceback": None,
    }


def _side(status: str, reason: str, passed: int = 0, total: int = 1) -> dict[str, Any]:
    return {
        "status": status,
        "reason": reason,
        "samples_total": total,
        "samples_passed": passed,
        "pass_at_1": passed / total if total else None,
    }


def compare_document(cases: int = 30, *, seed: int = 2) -> dict[str, Any]:
    """A compare document of ``cases`` cases with every kind of change (compare's JSON shape)."""
    rng = random.Random(seed)
    changes = ("regressed", "improved", "error", "new", "gone", "unchanged")
    rows = []
    for index in range(cases):
        change = changes[index % len(changes)] if index < 12 else rng.choice(changes)
        base: dict[str, Any] | None
        new: dict[str, Any] | None
        if change == "regressed":
            base, new = _side("passed", "ok", 1), _side("failed", "README.txt differs")
        elif change == "improved":
            base, new = _side("failed", "README.txt differs"), _side("passed", "ok", 1)
        elif change == "error":
            base, new = _side("passed", "ok", 1), _side("error", "the rubric crashed")
        elif change == "new":
            base, new = None, _side("passed", "ok", 1)
        elif change == "gone":
            base, new = _side("failed", "no", 0), None
        else:
            base, new = _side("passed", "ok", 1), _side("passed", "ok", 1)
        rows.append({"case": f"case-{index:03d}", "change": change, "base": base, "new": new})
    counted = {change: sum(row["change"] == change for row in rows) for change in changes}

    def side(file: str) -> dict[str, Any]:
        return {
            "file": file,
            "run": {"name": file.removesuffix(".json"), "tool_version": "0.4.0"},
            "task_class": "vuln-remediation",
            "sampled": False,
            "total": cases,
            "passed": 10,
            "pass_at_k": {"1": 0.5},
        }

    return {
        "base": side("base.json"),
        "new": side("new.json"),
        "task_class": "vuln-remediation",
        "bench_digest": "sha256:" + "cd" * 32,
        "pass_at_k": {"1": {"base": 0.5, "new": 0.6, "difference": 0.1}},
        "cases": rows,
        "changes": counted,
        "test": {"name": "mcnemar-exact", "improved": 2, "regressed": 3, "p_value": 1.0},
        "regressions": counted["regressed"],
        "ok": counted["regressed"] == 0,
    }
