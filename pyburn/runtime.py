"""Running awaitables from synchronous code, on every platform pyburn supports."""

from __future__ import annotations

import sys
from collections.abc import Awaitable, Generator
from typing import Any

from .errors import ReadbackError

IN_BROWSER = sys.platform == "emscripten"


def run_sync(awaitable: Awaitable[Any]) -> Any:
    """Wait for `awaitable` and return its result.

    An awaitable that never suspends (every CPU backend read) finishes at once, with no
    event loop. One that does suspend is handed, where it stopped, to an event loop on the
    desktop, or in the browser to JSPI (``pyodide.ffi.run_sync``) where the engine allows
    blocking. Where blocking is impossible the error names the ``_async`` form to use.
    """
    steps = awaitable.__await__()
    try:
        pending = steps.send(None)
    except StopIteration as done:
        return done.value
    rest = _finish(_Resumed(steps, pending))
    if IN_BROWSER:
        # optional: pyodide, in the browser only
        from pyodide.ffi import can_run_sync  # type: ignore[import-not-found]
        from pyodide.ffi import run_sync as jspi_run_sync

        if can_run_sync():
            return jspi_run_sync(rest)
        rest.close()
        raise ReadbackError("this read has to wait for the GPU, and a synchronous wait needs "
                            "JSPI, entered through an async call; use the `_async` form "
                            "(for example `await t.tolist_async()`)")
    import asyncio  # import time: asyncio (25 ms) loads for the first read that waits

    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(rest)
    rest.close()
    raise ReadbackError("a synchronous read cannot wait inside a running event loop; "
                        "use the `_async` form (for example `await t.tolist_async()`)")


class _Resumed:
    """The rest of an awaitable that was started by hand and suspended at `pending`."""

    def __init__(self, steps: Generator[Any, Any, Any], pending: Any):
        self.steps, self.pending = steps, pending

    def __await__(self) -> Generator[Any, Any, Any]:
        pending = self.pending
        while True:
            failure: BaseException | None = None
            sent = None
            try:
                sent = yield pending
            except BaseException as exc:  # forwarded into the awaitable
                failure = exc
            try:
                pending = self.steps.throw(failure) if failure else self.steps.send(sent)
            except StopIteration as done:
                return done.value


async def _finish(rest: _Resumed) -> Any:
    return await rest
