"""The wasm backend as a device (wasmtime on the desktop, the JavaScript engine under
Pyodide): views share memory and copies happen only where a kernel needs a contiguous
operand, elements cross into and out of the memory as one bulk copy, memory grows for big
tensors and comes back for reuse. What each primitive computes is the conformance suite's
(``PYBURN_EXTRA_DEVICES=wasm``)."""

from __future__ import annotations

import struct

import pytest

import pyburn


@pytest.fixture
def dev() -> pyburn.Device:
    return pyburn.device("wasm")


def _value(t: pyburn.Tensor):
    """The computed `WasmTensor` behind `t` (fusion's handles are lazy)."""
    return t.device.backend.ready(t._h)


def test_movement_makes_views_and_kernels_read_them(dev):
    x = pyburn.tensor([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]], device=dev)
    for view in (x.T, x[:, ::2], x.flip(1), x[:1].expand(3, 3)):
        assert _value(view).storage is _value(x).storage  # no copy
    assert (x.T + 0.0).tolist() == [[1.0, 4.0], [2.0, 5.0], [3.0, 6.0]]
    assert x.flip(1)[:, ::2].sum().item() == 14.0
    plain = dev.backend.inner if "fusion" in dev.caps else dev.backend
    assert plain.contiguous(_value(x)) is _value(x)


def test_bytes_cross_once_each_way(dev, monkeypatch):
    engine = dev.backend.engine
    reads, writes = [], []
    read, write = engine.read, engine.write
    monkeypatch.setattr(engine, "read", lambda a, n: reads.append(n) or read(a, n))
    monkeypatch.setattr(engine, "write", lambda a, d: writes.append(len(d)) or write(a, d))
    values = [float(v) for v in range(1000)]
    x = pyburn.tensor(values, device=dev)
    assert x.tolist() == values
    assert len(writes) == 1 and writes[0] >= 4000 and reads == [4000]  # one copy each way


def test_memory_grows_for_big_tensors_and_buffers_come_back(dev):
    engine = dev.backend.engine
    before = engine.size()
    big = pyburn.ones(before // 2, device=dev)  # twice the memory's size, in float32
    assert _value(big).storage is not None and engine.size() > before
    assert engine.size() >= _value(big).address + 2 * before
    assert big.sum().item() == before // 2
    address = _value(big).storage.buffer
    del big
    again = pyburn.zeros(before // 2, device=dev)
    assert _value(again).storage.buffer == address  # the pool handed the same buffer back
    assert struct.unpack("<f", engine.read(address, 4))[0] == 0.0


def test_threads_share_the_device(dev):
    """A data loader's workers make tensors while the main thread computes: every result
    stays right (a wasmtime store and the reserved memory are one thread's at a time)."""
    import threading

    from pyburn.data.prefetch import threads_available

    if not threads_available():
        return  # (Pyodide: one thread, nothing to share)
    failures: list[str] = []

    def work(seed: int) -> None:
        for step in range(30):
            n = 1 + (seed * 3001 + step * 7919) % 4000
            x = pyburn.arange(n, device=dev).float()
            got = (x.reshape(1, n).T * 2.0 + 1.0).sum().item()
            if got != n * n:  # sum of 2i + 1 for i < n
                failures.append(f"thread {seed} step {step}: {got} != {n * n}")
    threads = [threading.Thread(target=work, args=(seed,)) for seed in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    assert not failures, failures[:3]
