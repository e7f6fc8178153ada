"""`Backend.memory_in_use` on every device: where tensors live in a memory of the device's
own (a GPU's buffers, the wasm memory), a computed tensor adds at least its bytes while it
is alive and gives them back when dropped; elsewhere (cpu, flex: the process's memory) it
is None. The training dashboard shows it."""

from __future__ import annotations

import gc

import pyburn

ELEMENTS = 1 << 16


def test_a_tensor_holds_its_bytes_while_it_lives(device):
    backend = device.backend
    gc.collect()  # no earlier test's garbage freed while this one measures
    before = backend.memory_in_use()
    x = pyburn.rand(ELEMENTS, device=device)
    x.tolist()  # computed, not pending
    during = backend.memory_in_use()
    if before is None:
        assert during is None
        return
    assert during - before >= 4 * ELEMENTS
    del x
    gc.collect()
    assert backend.memory_in_use() <= during - 4 * ELEMENTS
