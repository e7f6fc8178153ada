"""Computing batches ahead of the consumer in background threads, in the consumer's order.

Threads help when fetching a batch waits on something that releases the GIL (file reads,
decompression, numpy work). Where Python cannot start threads (Pyodide, WASI) the loader
does the work in the consuming thread instead, with the same results.
"""

from __future__ import annotations

import sys
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from itertools import islice
from typing import Any, TypeVar

J = TypeVar("J")

#: the prefix of the worker threads' names (tests look for them)
THREAD_PREFIX = "pyburn-data"


def threads_available() -> bool:
    """Whether this Python can run background threads: not in a browser (Pyodide,
    ``sys.platform == "emscripten"``) nor under WASI."""
    return sys.platform not in ("emscripten", "wasi")


def prefetch(fetch: Callable[[J], Any], jobs: Iterable[J], workers: int,
             depth: int) -> Iterator[Any]:
    """``fetch(job)`` for each job, in order, computed by `workers` threads at most `depth`
    jobs ahead of the consumer.

    The results come in job order whatever thread finished first; an exception raised by
    `fetch` comes out at its job's place. Closing the iterator (a ``break`` out of the loop
    that consumes it, or garbage collection) cancels the jobs not started and waits for the
    running ones, so no thread outlives it.
    """
    # import time: concurrent.futures and logging (5 ms, as much as the rest of pyburn.data)
    # load only where workers prefetch, never in Pyodide
    from concurrent.futures import ThreadPoolExecutor

    pool = ThreadPoolExecutor(max_workers=workers, thread_name_prefix=THREAD_PREFIX)
    jobs = iter(jobs)
    pending = deque(pool.submit(fetch, job) for job in islice(jobs, depth))
    try:
        while pending:
            result = pending.popleft().result()
            # Refill before handing the result over, so the threads work while the
            # consumer does.
            pending.extend(pool.submit(fetch, job) for job in islice(jobs, 1))
            yield result
    finally:
        pool.shutdown(wait=True, cancel_futures=True)
