"""Data-parallel training on Ray (``pip install 'pyburn[distributed]'``).

Two levels:

- the Learner strategy: ``Learner(..., strategy=pyburn.distributed.Ray(num_workers=2))``
  trains replicas of the model on Ray actors, each on its share of the data, with the
  gradients averaged over them while the backward pass runs (`Ray`);
- the process group, for code of one's own in Ray actors: `init` (rank, world size, group
  name, timeout), `rank`, `world_size`, and the collectives `all_reduce`, `broadcast`,
  `all_gather`, `broadcast_object` and `barrier` on pyburn tensors of any device.

Importing this package needs no Ray: Ray is imported when a group is joined or a strategy
runs, with a clear error where it is not installed.

>>> from pyburn.distributed import Ray, is_initialized
>>> is_initialized()
False
"""

from __future__ import annotations

from ..errors import CollectiveTimeout, WorkerFailed
from .group import (
    OPS,
    ProcessGroup,
    Work,
    all_gather,
    all_reduce,
    barrier,
    broadcast,
    broadcast_object,
    destroy,
    init,
    is_initialized,
    rank,
    world_size,
)
from .strategy import Ray

__all__ = ["OPS", "CollectiveTimeout", "ProcessGroup", "Ray", "Work", "WorkerFailed",
           "all_gather", "all_reduce", "barrier", "broadcast", "broadcast_object", "destroy",
           "init", "is_initialized", "rank", "world_size"]
