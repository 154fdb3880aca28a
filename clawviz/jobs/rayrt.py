"""Ray for the jobs (`ingest --engine ray`, `analyse --engine ray`): imported only when asked
for, with a one-line message naming the extra when it is not installed."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

RAY_INSTALL = "pip install -r requirements-ray.txt"


class RayMissing(RuntimeError):
    """`--engine ray` without Ray installed."""


def import_ray() -> Any:
    """The `ray` module, or RayMissing naming the extra to install."""
    try:
        import ray
    except ImportError as exc:
        raise RayMissing(f"--engine ray needs Ray: {RAY_INSTALL}") from exc
    return ray


@contextmanager
def ray_session(address: str | None, cpus: int) -> Iterator[Any]:
    """Ray joined at `address`, or a local Ray with `cpus` CPUs and no dashboard (shut down
    after, if this started it)."""
    ray = import_ray()
    started = False
    if not ray.is_initialized():
        if address:
            ray.init(address=address, log_to_driver=False)
        else:
            # address="local": a new Ray of our own, even when `ray start` left a cluster
            # on this machine (ray.init() would join that one, and refuse num_cpus).
            ray.init(
                address="local",
                num_cpus=max(2, cpus),
                include_dashboard=False,
                log_to_driver=False,
            )
        started = True
    try:
        yield ray
    finally:
        if started:
            ray.shutdown()
