"""A contained run's bubblewrap command line, rendered from its confinement.

:func:`render` turns a :class:`~codegenie.eval._sandbox.plan.Confinement`
into bubblewrap's arguments; :func:`bwrap_args` does so for a run's policy,
with the seccomp filter, the status channel and the confining head of a
plain run.
"""

from __future__ import annotations

from codegenie.eval._sandbox import confining
from codegenie.eval._sandbox.bwrap import (
    Bubblewrap,
    isolation_args,
    render_mounts,
    render_proc,
)
from codegenie.eval._sandbox.confinement import confinement
from codegenie.eval._sandbox.plan import Confinement, Mount
from codegenie.eval._sandbox.policy import SandboxPolicy

__all__ = ("bwrap_args", "render")


def render(plan: Confinement, bwrap: Bubblewrap) -> list[str]:
    """Return bubblewrap's mounts for ``plan``, in its order, ending with ``--chdir CWD --``.

    The namespace and privilege arguments are not among them
    (:func:`~codegenie.eval._sandbox.bwrap.isolation_args`); nor is the
    environment, which bubblewrap's caller starts it with.
    """
    args = [*render_mounts(plan.system), *render_proc(plan.proc), "--dev", plan.dev]
    args += render_mounts(plan.scratch, bwrap)
    args += render_mounts(plan.files)
    args += render_mounts(plan.binds)
    for hidden in plan.hidden:  # an empty, read-only directory in its place
        args += render_mounts((Mount("tmpfs", hidden), Mount("remount-ro", hidden)))
    if plan.root_read_only:
        args += ["--remount-ro", "/"]
    return [*args, "--chdir", plan.cwd, "--"]


def bwrap_args(
    policy: SandboxPolicy,
    bwrap: Bubblewrap,
    *,
    seccomp_fd: int | None = None,
    status_fd: int | None = None,
    plan: Confinement | None = None,
) -> list[str]:
    """Return bubblewrap's arguments for ``policy``, to go before the command.

    The mounts, in order, of its confinement (``plan``, by default
    :func:`~codegenie.eval._sandbox.confinement.confinement` of ``policy``):
    a later mount inside an earlier one shows through it, and last, the
    sandbox's own root made read-only, so that a write anywhere but the
    run's directory, ``/tmp`` and ``/dev/shm`` fails (``EROFS``) rather
    than landing in a scratch file system. The working directory is
    :attr:`SandboxPolicy.workdir`.

    ``seccomp_fd``: a descriptor the seccomp filter
    (:func:`~codegenie.eval._sandbox.seccomp.program`) is read from, for the
    run's every process; with it, the arguments end with the head of a
    confined run (:func:`~codegenie.eval._sandbox.confining.head`, the
    run's interpreter): bubblewrap leaves it
    :data:`~codegenie.eval._sandbox.confining.CAPABILITIES`, and it makes
    the device nodes read-only (devices still allowed), drops every
    capability and loads the filter before it execs the command. Without
    it, or where ``bwrap`` cannot seal (:attr:`Bubblewrap.seals_devices
    <codegenie.eval._sandbox.bwrap.Bubblewrap.seals_devices>`: bubblewrap
    loads the filter), they end in ``--``. ``status_fd``: a descriptor
    bubblewrap writes its JSON status to — the rubric's pid, then its exit
    code once it ended — from outside the sandbox, where nothing of the run
    can write.
    """
    run = confinement(policy) if plan is None else plan
    confined = seccomp_fd is not None and bwrap.seals_devices
    args = [
        str(bwrap.path),
        *isolation_args(bwrap, run.namespaces, nested_userns=run.nested_userns),
    ]
    if confined:
        for name in confining.CAPABILITIES:
            args += ["--cap-add", name]
    elif seccomp_fd is not None:  # a bubblewrap that cannot seal: it loads the filter itself
        args += ["--seccomp", str(seccomp_fd)]
    if status_fd is not None:
        args += ["--json-status-fd", str(status_fd)]
    args += render(run, bwrap)
    if seccomp_fd is not None and confined:
        args += confining.head(str(policy.interpreter.executable), seccomp_fd)
    return args
