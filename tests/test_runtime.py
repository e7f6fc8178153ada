"""run_sync: immediate awaitables, suspending ones, and the clear error inside a loop."""

from __future__ import annotations

import asyncio

import pytest

import pyburn
from pyburn.runtime import run_sync


async def _immediate() -> int:
    return 41 + 1


async def _suspending() -> str:
    await asyncio.sleep(0)
    await asyncio.sleep(0.001)
    return "done"


def test_run_sync_without_suspension_needs_no_loop():
    assert run_sync(_immediate()) == 42


def test_run_sync_resumes_a_suspended_awaitable():
    assert run_sync(_suspending()) == "done"


def test_run_sync_inside_a_running_loop_names_the_async_form():
    async def inside() -> None:
        with pytest.raises(pyburn.ReadbackError, match="_async"):
            run_sync(_suspending())

    asyncio.run(inside())


def test_async_readback_matches_sync():
    x = pyburn.tensor([[1.5, 2.0]], device="flex")

    async def read():
        return await x.tolist_async(), await x.item_async() if x.numel() == 1 else None

    assert asyncio.run(read())[0] == x.tolist()
