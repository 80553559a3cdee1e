"""Rubric for ``vuln-remediation``: a standalone script, run as a subprocess.

Usage: python rubric.py CASE_DIR CANDIDATE_DIR

Reads ``CASE_DIR/case.toml`` and ``CASE_DIR/input/requirements.txt``, and the
candidate's ``CANDIDATE_DIR/requirements.txt``. The candidate passes when the
advised package is pinned (``==``) at or above the first fixed version and every
other line of the input is unchanged. Prints one JSON object on stdout and exits
0 (pass), 1 (fail) or 2 (usage or unreadable case); see docs/rubrics.md.

Of ``case.toml`` it reads only keys that ``VulnRemediationCase``
(registration.py) declares, so what it reads has been validated by
``load_cases`` before any run; the case id is ``CASE_DIR``'s name.
"""

from __future__ import annotations

import json
import re
import sys
import tomllib
from pathlib import Path

_PIN = re.compile(r"^\s*([A-Za-z0-9][A-Za-z0-9._-]*)\s*==\s*([0-9][0-9A-Za-z.]*)\s*$")


def _version(text: str) -> tuple[int, ...]:
    return tuple(int(part) for part in re.findall(r"\d+", text))


def _normalize(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def _pins(lines: list[str]) -> dict[str, str]:
    pins = {}
    for line in lines:
        match = _PIN.match(line)
        if match:
            pins[_normalize(match.group(1))] = match.group(2)
    return pins


def grade(case_dir: Path, candidate_dir: Path) -> dict[str, object]:
    """Return the verdict for one candidate."""
    case = tomllib.loads((case_dir / "case.toml").read_text(encoding="utf-8"))
    case_id = case_dir.name
    package = _normalize(case["package"])
    fixed = case["fixed-version"]
    advisory = case["advisory"]
    original = (case_dir / "input" / "requirements.txt").read_text(encoding="utf-8").splitlines()
    candidate_file = candidate_dir / "requirements.txt"
    if not candidate_file.is_file():
        return {"case": case_id, "passed": False, "reason": "no requirements.txt"}
    candidate = candidate_file.read_text(encoding="utf-8").splitlines()
    pinned = _pins(candidate).get(package)
    if pinned is None:
        return {"case": case_id, "passed": False, "reason": f"{package} is not pinned"}
    if _version(pinned) < _version(fixed):
        reason = f"{package}=={pinned} is still vulnerable to {advisory} (fixed in {fixed})"
        return {"case": case_id, "passed": False, "reason": reason}
    untouched = [line for line in original if _pins([line]).keys() != {package}]
    kept = [line for line in candidate if _pins([line]).keys() != {package}]
    if untouched != kept:
        return {"case": case_id, "passed": False, "reason": "other lines were changed"}
    return {"case": case_id, "passed": True, "reason": f"{package}=={pinned}"}


def main(argv: list[str]) -> int:
    """Grade ``argv[1]`` (the case) against ``argv[2]`` (the candidate)."""
    if len(argv) != 3:
        print(__doc__, file=sys.stderr)
        return 2
    try:
        verdict = grade(Path(argv[1]), Path(argv[2]))
    except (OSError, KeyError, tomllib.TOMLDecodeError) as exc:
        print(f"rubric: cannot read the case: {exc}", file=sys.stderr)
        return 2
    print(json.dumps(verdict, sort_keys=True))
    return 0 if verdict["passed"] else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv))
