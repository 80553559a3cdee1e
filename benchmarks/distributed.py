"""The Ray executor against the local one, on this machine (issue 28, point 6).

``python benchmarks/distributed.py [RUNS [PASSES]]`` (default 200 and 3)
prints run.py's table. Needs the extra: ``pip install -e '.[ray]'``.

- **Per-run overhead.** ``RUNS`` runs of a trivial rubric (it reads the
  candidate's one file), made by ``RayExecutor().run`` on a local Ray
  instance of 2 CPUs, started beforehand, against ``LocalExecutor().run``
  with ``jobs=2``, alternating, medians: the extra per run (target: within
  10 ms).
- **Runs of a second.** 8 runs of a rubric that sleeps one second, the same
  way (target: at most 1.1x).
- **Start-up.** ``ray.init`` of a local instance and ``ray.shutdown``, what a
  command that starts its own instance pays once (reported).
- **A three-node cluster.** A head without CPUs and two worker nodes of one
  CPU each (``ray.cluster_utils.Cluster``), ``RUNS`` runs: runs per second
  against the local executor's with ``jobs=2`` (reported).

Both executors run in the default sandbox (bubblewrap, warm workers).
Nothing is a test: no test asserts a time.
"""

from __future__ import annotations

import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from codegenie.eval._exec.local import LocalExecutor
from codegenie.eval._run.spec import RunSpec
from codegenie.eval.cases import Case
from codegenie.eval.rubrics import choose_sandbox

HERE = Path(__file__).resolve().parent
if str(HERE) not in sys.path:  # the scripts are not a package
    sys.path.insert(0, str(HERE))

if TYPE_CHECKING:  # mypy reads benchmarks/ as a package; run.py runs it as a directory of scripts
    from benchmarks._common import Row, load_average, render
else:
    from _common import Row, load_average, render

TRIVIAL = """\
import json, sys
from pathlib import Path
answer = (Path(sys.argv[2]) / "answer.txt").read_text()
print(json.dumps({"passed": True, "reason": answer.strip()}))
"""
SECOND = """\
import json, time
time.sleep(1)
print(json.dumps({"passed": True}))
"""


def _specs(base: Path, rubric: str, runs: int, policy: str) -> list[RunSpec]:
    """Write a task class whose rubric is ``rubric`` with ``runs`` cases; return their runs."""
    task_class = base / "distributed"
    (task_class / "cases").mkdir(parents=True)
    (task_class / "rubric.py").write_text(rubric, encoding="utf-8")
    specs = []
    for index in range(runs):
        directory = task_class / "cases" / f"case-{index:05d}"
        (directory / "input").mkdir(parents=True)
        (directory / "input" / "answer.txt").write_text(f"{index}\n", encoding="utf-8")
        (directory / "expected").mkdir()
        case = Case(task_class="distributed", id=directory.name, directory=directory, timeout=60)
        specs.append(RunSpec.of(task_class / "rubric.py", case, case.input, sandbox=policy))
    return specs


def _timed(executor: Any, specs: list[RunSpec], box: Any) -> float:
    started = time.perf_counter()
    results = executor.run(specs, jobs=2, sandbox=box)
    elapsed = time.perf_counter() - started
    bad = [r for r in results if r.status != "passed"]
    if bad:
        raise SystemExit(f"a run did not pass: {bad[0].reason}")
    return elapsed


def distributed_rows(runs: int, passes: int) -> list[Row]:
    """The Ray executor's rows of ``benchmarks/run.py`` (see the module's docstring)."""
    import ray as typed_ray
    from ray.cluster_utils import Cluster as TypedCluster

    from codegenie.eval._exec.on_ray import RayExecutor

    ray: Any = typed_ray  # Ray's own annotations are partial: used untyped
    cluster_type: Any = TypedCluster

    box = choose_sandbox("bwrap")
    work = Path(tempfile.mkdtemp(prefix="codegenie-distributed-"))
    options = {"include_dashboard": False, "log_to_driver": False, "configure_logging": False}
    try:
        trivial = _specs(work / "trivial", TRIVIAL, runs, box.policy)
        second = _specs(work / "second", SECOND, 8, box.policy)
        starts = []
        for _ in range(passes):
            started = time.perf_counter()
            ray.init(address="local", num_cpus=2, **options)
            starts.append(time.perf_counter() - started)
            started = time.perf_counter()
            ray.shutdown()
            starts[-1] += time.perf_counter() - started
        local, remote, local_s, remote_s = [], [], [], []
        ray.init(address="local", num_cpus=2, **options)
        try:
            _timed(RayExecutor(), trivial[:20], box)  # the workers started, as a command's are
            for _ in range(passes):
                local.append(_timed(LocalExecutor(), trivial, box))
                remote.append(_timed(RayExecutor(), trivial, box))
                local_s.append(_timed(LocalExecutor(), second, box))
                remote_s.append(_timed(RayExecutor(), second, box))
        finally:
            ray.shutdown()
        cluster = cluster_type(initialize_head=True, head_node_args={"num_cpus": 0})
        try:
            cluster.add_node(num_cpus=1)
            cluster.add_node(num_cpus=1)
            ray.init(address=cluster.address, **options)
            cluster.wait_for_nodes()
            _timed(RayExecutor(), trivial[:20], box)
            three = [_timed(RayExecutor(), trivial, box) for _ in range(passes)]
        finally:
            ray.shutdown()
            cluster.shutdown()
        three_local = [_timed(LocalExecutor(), trivial, box) for _ in range(passes)]
    finally:
        shutil.rmtree(work, ignore_errors=True)
    per_local = statistics.median(local) / runs * 1e3
    per_remote = statistics.median(remote) / runs * 1e3
    return [
        Row(
            "Ray executor, per run, against the local executor (local instance of 2 CPUs, "
            "started beforehand; `jobs=2`)",
            runs,
            per_remote,
            per_local,
            "the local executor's run, `jobs=2`",
            f"<= +10 ms ({per_remote - per_local:+.2f} ms)",
            (per_local + 10) / per_local,
            note=f"medians of {passes} passes, alternating",
        ),
        Row(
            "Ray executor, 8 runs of a rubric that sleeps a second, against the local executor",
            8,
            statistics.median(remote_s) * 1e3,
            statistics.median(local_s) * 1e3,
            "the local executor, `jobs=2`",
            "<= 1.1x",
            1.1,
        ),
        Row(
            "starting and stopping a local Ray instance (`ray.init` + `ray.shutdown`), once a "
            "command",
            1,
            statistics.median(starts) * 1e3,
            None,
            "-",
            "(reported)",
            None,
        ),
        Row(
            "three-node cluster on this machine (a head, two workers of one CPU): runs a second",
            runs,
            runs / statistics.median(three),
            runs / statistics.median(three_local),
            "the local executor, `jobs=2`, runs a second",
            "(reported)",
            None,
            unit="runs/s",
        ),
    ]


def main(argv: list[str]) -> int:
    runs = int(argv[0]) if argv else 200
    passes = int(argv[1]) if len(argv) > 1 else 3
    started = load_average()
    rows = distributed_rows(runs, passes)
    sys.stdout.write(render(rows, passes, (started, load_average())))
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
