"""Rubric for ``migration-chainguard-distroless``: a standalone script, run as a subprocess.

Usage: python rubric.py CASE_DIR CANDIDATE_DIR

Reads ``CASE_DIR/case.toml`` and the candidate's ``CANDIDATE_DIR/Dockerfile``.
The candidate passes when every ``FROM`` names an image under
``cgr.dev/chainguard/``, the final stage's image is the case's runtime image
without a ``-dev`` tag, and the final stage has no ``RUN`` instruction. Prints
one JSON object on stdout and exits 0 (pass), 1 (fail) or 2 (usage or
unreadable case); see docs/rubrics.md.

Of ``case.toml`` it reads only keys that ``MigrationChainguardDistrolessCase``
(registration.py) declares, so what it reads has been validated by
``load_cases`` before any run; the case id is ``CASE_DIR``'s name.
"""

from __future__ import annotations

import json
import re
import sys
import tomllib
from pathlib import Path

_FROM = re.compile(r"^\s*FROM\s+(?:--platform=\S+\s+)?(\S+)", re.IGNORECASE)
_RUN = re.compile(r"^\s*RUN\s", re.IGNORECASE)
_REGISTRY = "cgr.dev/chainguard/"


def _stages(lines: list[str]) -> list[tuple[str, list[str]]]:
    stages: list[tuple[str, list[str]]] = []
    for line in lines:
        match = _FROM.match(line)
        if match:
            stages.append((match.group(1), []))
        elif stages:
            stages[-1][1].append(line)
    return stages


def grade(case_dir: Path, candidate_dir: Path) -> dict[str, object]:
    """Return the verdict for one candidate."""
    case = tomllib.loads((case_dir / "case.toml").read_text(encoding="utf-8"))
    case_id = case_dir.name
    runtime = case["runtime-image"]
    dockerfile = candidate_dir / "Dockerfile"
    if not dockerfile.is_file():
        return {"case": case_id, "passed": False, "reason": "no Dockerfile"}
    stages = _stages(dockerfile.read_text(encoding="utf-8").splitlines())
    if not stages:
        return {"case": case_id, "passed": False, "reason": "no FROM instruction"}
    foreign = [image for image, _ in stages if not image.startswith(_REGISTRY)]
    if foreign:
        return {"case": case_id, "passed": False, "reason": f"non-Chainguard base {foreign[0]}"}
    final_image, final_lines = stages[-1]
    name = final_image.split("@", 1)[0]
    if name.split(":", 1)[0] != runtime or name.endswith("-dev"):
        reason = f"final stage runs {final_image}, expected {runtime} (not -dev)"
        return {"case": case_id, "passed": False, "reason": reason}
    if any(_RUN.match(line) for line in final_lines):
        reason = "the final stage has a RUN instruction (distroless has no shell)"
        return {"case": case_id, "passed": False, "reason": reason}
    return {"case": case_id, "passed": True, "reason": f"runs from {final_image}"}


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
