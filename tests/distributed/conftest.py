"""The local Ray cluster of pyburn.distributed's tests: two CPUs on 127.0.0.1, started once
for the folder and shut down at its end. The helpers module travels to the workers by value
(they cannot import the tests)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

ray = pytest.importorskip("ray")


@pytest.fixture(scope="package")
def cluster() -> Iterator[Any]:
    """Ray, started here for the tests of this folder."""
    from . import helpers

    ray.cloudpickle.register_pickle_by_value(helpers)
    # Ray would replace builtins.print for the rest of the process once a worker's output
    # reaches it (its tqdm support): later tests that pickle print would see another object
    monkeypatch = pytest.MonkeyPatch()
    monkeypatch.setenv("RAY_TQDM_PATCH_PRINT", "0")
    ray.init(address="local", num_cpus=2, include_dashboard=False,
             _node_ip_address="127.0.0.1", configure_logging=False, log_to_driver=False)
    try:
        yield ray
    finally:
        ray.shutdown()
        monkeypatch.undo()


@pytest.fixture(scope="package")
def ranks(cluster: Any) -> list[Any]:
    """Two `helpers.Rank` actors (started once: a worker process takes a second or two)."""
    from .helpers import Rank

    actors = [cluster.remote(num_cpus=0)(Rank).remote() for _ in range(2)]
    cluster.get([a.ready.remote() for a in actors], timeout=60)
    return actors
