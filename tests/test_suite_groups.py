"""The suite's own machinery: ``xdist_group`` marks hold with the pytest the README installs.

Tests that share an expensive fixture (a built package, a Ray cluster) are
grouped so that one worker runs them one after another. With pytest 9.2 and
pytest-xdist 3.8 the group marks were silently ignored (each test went to
whichever worker was free): this runs a small suite of one group on two
workers, with the pytest and xdist installed here, and asserts that one
worker ran it all.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

PROBE = """
import os
import pytest


@pytest.mark.xdist_group("together")
@pytest.mark.parametrize("number", range(8))
def test_in_the_group(number):
    with open({log!r}, "a", encoding="utf-8") as log:
        log.write(os.environ["PYTEST_XDIST_WORKER"] + "\\n")
"""


LOADGROUP = ("-n", "2", "--dist", "loadgroup", "test_probe.py")


def test_a_group_runs_in_one_worker(tmp_path: Path) -> None:
    """Eight tests of one group, two workers, ``--dist loadgroup``: one worker runs all eight."""
    log = tmp_path / "workers.log"
    (tmp_path / "test_probe.py").write_text(
        textwrap.dedent(PROBE.format(log=str(log))), encoding="utf-8"
    )
    env = {key: value for key, value in os.environ.items() if not key.startswith("PYTEST_")}
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-q",
            "-p",
            "no:cacheprovider",
            "-o",
            "addopts=",
            *LOADGROUP,
        ],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    workers = log.read_text(encoding="utf-8").split()
    assert len(workers) == 8
    assert len(set(workers)) == 1, f"the group was split across workers: {sorted(workers)}"
