"""Ray for the tests that need it: imported, or the module skipped (failed under CI), saying why.

``from .ray_import import Cluster, join, ray`` at the top of a test module. Ray
is the optional extra ``[ray]``: CI installs it and these tests must run
there, so a missing Ray fails the module when ``CI`` is set; elsewhere the
module is skipped with the reason and the command that installs it. Ray's
own annotations are partial: the tests use it untyped.
"""

from __future__ import annotations

import os
from typing import Any

import pytest

__all__ = ("Cluster", "join", "ray")

try:
    import ray as _ray
    from ray.cluster_utils import Cluster as _Cluster
except ImportError as missing:  # pragma: no cover - CI installs the extra
    if os.environ.get("CI"):
        pytest.fail(
            f"Ray is not installed ({missing}): CI runs these tests with the extra installed "
            "(pip install '.[ray]')",
            pytrace=False,
        )
    pytest.skip(
        f"Ray is not installed ({missing}): pip install '.[ray]' to run these tests",
        allow_module_level=True,
    )

ray: Any = _ray
Cluster: Any = _Cluster


def join(address: str) -> None:
    """Join the cluster at ``address`` from this process, as quietly as the executor does."""
    ray.init(address=address, include_dashboard=False, log_to_driver=False, configure_logging=False)
