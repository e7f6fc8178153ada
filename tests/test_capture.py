"""`pyburn.capture`: a function's backend calls recorded on its second call for a signature
and replayed from the third, on every device, against float64 numpy; runs a replay cannot
repeat (a value read back, random numbers, a kernel launch, gradients) are run as they are."""

from __future__ import annotations

import copy
import pickle
import threading

import numpy as np
import pytest

import pyburn
import pyburn.kernel as pk
from pyburn.capture import ENV, Captured
from pyburn.nn import functional as F


class Net:
    """A small network of pyburn ops whose weights are its state; counts its runs."""

    def __init__(self, device: pyburn.Device, seed: int = 0) -> None:
        rng = np.random.default_rng(seed)
        self.device = device
        self.w = pyburn.from_numpy(rng.standard_normal((3, 4)).astype(np.float32),
                                   device=device)
        self.b = pyburn.from_numpy(rng.standard_normal(4).astype(np.float32), device=device)
        self.runs = 0

    def __call__(self, x: pyburn.Tensor) -> tuple[pyburn.Tensor, pyburn.Tensor]:
        self.runs += 1
        h = (x @ self.w + self.b).relu()
        return F.softmax(h, -1), (h * 2.0).sum(0)

    def state(self) -> tuple[pyburn.Tensor, ...]:
        return self.w, self.b

    def reference(self, x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        w, b = (t.numpy().astype(np.float64) for t in (self.w, self.b))
        h = np.maximum(x.astype(np.float64) @ w + b, 0)
        e = np.exp(h - h.max(-1, keepdims=True))
        return e / e.sum(-1, keepdims=True), (h * 2).sum(0)


def _input(device: pyburn.Device, seed: int, rows: int = 5) -> tuple[np.ndarray, pyburn.Tensor]:
    x = np.random.default_rng(100 + seed).standard_normal((rows, 3)).astype(np.float32)
    return x, pyburn.from_numpy(x, device=device)


def _check(out: tuple, expected: tuple, device: pyburn.Device) -> None:
    assert isinstance(out, tuple) and len(out) == len(expected)
    for got, want in zip(out, expected):
        assert got.device is device and got.dtype is pyburn.float32
        assert got.shape == want.shape
        np.testing.assert_allclose(got.numpy(), want, rtol=1e-5, atol=1e-6)


def test_the_third_call_replays_the_second(device):
    net = Net(device)
    captured = Captured(net, net.state)
    for seed in range(4):
        x, xt = _input(device, seed)
        _check(captured(xt), net.reference(x), device)
    assert net.runs == 2  # a plain run, then the captured one; the rest replayed
    (entry,) = captured.entries.values()
    assert entry.capture is not None and entry.capture.calls > 0
    assert entry.capture.source.startswith("def replay(r0):")
    assert captured.reasons() == {}


def test_each_signature_is_captured_apart(device):
    net = Net(device)
    captured = Captured(net, net.state)
    for seed in range(8):
        x, xt = _input(device, seed, rows=2 if seed % 2 else 6)
        _check(captured(xt), net.reference(x), device)
    assert net.runs == 4 and len(captured.entries) == 2


def test_the_signatures_used_last_are_kept():
    net = Net(pyburn.device("flex"))
    captured = Captured(net, net.state, limit=3)
    for rows in (1, 2, 3, 4, 1, 1, 4, 4, 5):
        x, xt = _input(net.device, rows, rows=rows)
        _check(captured(xt), net.reference(x), net.device)
    assert [sig[0][0][0][0] for sig in captured.entries] == [1, 4, 5]
    assert [e.capture is not None for e in captured.entries.values()] == [True, True, False]


def test_new_weights_are_used_and_captured_again(device):
    net = Net(device)
    captured = Captured(net, net.state)
    for seed in range(3):
        captured(_input(device, seed)[1])
    net.w = net.w * -1.5  # a new handle: the capture no longer stands for the function
    for seed in range(3, 7):
        x, xt = _input(device, seed)
        _check(captured(xt), net.reference(x), device)
    assert net.runs == 4  # the old capture dropped: a plain run and a capture again


def _reads_a_value(x):
    return x * 2.0 if x.sum().item() > 0 else x - 1.0


def _draws(x):
    return x + pyburn.rand(*x.shape, device=x.device)


@pk.kernel
def _doubled(out: pk.Tensor[pk.f32], x: pk.Tensor[pk.f32], n: pk.i32):
    i = pk.global_id(0)
    if i < n:
        out[i] = x[i] * 2.0


def _launches(x):
    return _doubled[(x.numel() + 63) // 64, 64](x.numel(), x.reshape(-1), x.numel()) + 0.0


def _returns_a_number(x):
    return (x * 2.0, 3)


@pytest.mark.parametrize("fn, why", [(_reads_a_value, "to_bytes"), (_draws, "random_bits"),
                                     (_launches, "pyburn.kernel"),
                                     (_returns_a_number, "other than tensors")])
def test_runs_a_replay_cannot_repeat_are_not_captured(device, fn, why):
    captured = Captured(fn)
    seen = []
    for seed in range(4):
        x, xt = _input(device, seed)
        # a value read back decides the branch: inputs of either sign take either one
        xt = xt if seed % 2 else -xt.abs()
        out = captured(xt)
        seen.append(out[0].numpy() if isinstance(out, tuple) else out.numpy())
        if fn is _reads_a_value:
            ref = xt.numpy().astype(np.float64)
            want = ref * 2 if ref.sum() > 0 else ref - 1
            np.testing.assert_allclose(seen[-1], want, rtol=1e-6)
    (reason,) = captured.reasons().values()
    assert why in reason
    if fn is _draws:  # fresh numbers on every call
        assert not np.allclose(seen[2] - _input(device, 2)[0], seen[3] - _input(device, 3)[0])


def test_index_checks_guard_the_replay(device):
    """An index check's decisions (in range; negative entries wrapped or none) hold in a
    replay only while its guard sees the same, and a GPU's check is queued again by each
    replay: an index out of range still raises, one with negative entries still wraps, on a
    replay's inputs."""
    table = np.arange(12, dtype=np.float32).reshape(6, 2)
    x = pyburn.from_numpy(table, device=device)
    captured = Captured(lambda index: pyburn.index_select(x, 0, index) * 2.0, lambda: (x,))

    def call(rows: list[int]) -> np.ndarray:
        return captured(pyburn.tensor(rows, dtype=pyburn.int32, device=device)).numpy()

    for rows in ([0, 5, 2], [1, 1, 3], [4, 0, 0], [-1, 2, 3], [5, 4, 3]):
        np.testing.assert_array_equal(call(rows), table[rows] * 2)
    with pytest.raises(pyburn.IndexOutOfRange):
        call([0, 6, 1])
    np.testing.assert_array_equal(call([2, 2, 2]), table[[2, 2, 2]] * 2)
    (entry,) = captured.entries.values()
    assert entry.capture is not None, entry.refused
    if device.backend.read_hooks() is None:  # the tensor layer checks: a guard
        assert "raise Diverged" in entry.capture.source
    else:  # the GPU checks: each replay's verdict joins the pending ones, read with the result
        assert "effect" in entry.capture.source


def test_other_threads_run_beside_a_capture():
    """While one thread records, another thread's ops on the same backend (a read back
    included) run as they are and stay out of the record."""
    dev = pyburn.device("cpu")
    y = pyburn.ones(4, device=dev)
    seen = []

    def beside() -> None:
        seen.append((y * 3.0).numpy())

    def fn(x: pyburn.Tensor) -> pyburn.Tensor:
        doubled = x * 2.0
        thread = threading.Thread(target=beside)
        thread.start()
        thread.join()
        return doubled + 1.0

    captured = Captured(fn)
    for seed in range(3):
        x, xt = _input(dev, seed)
        np.testing.assert_array_equal(captured(xt).numpy(), x * 2 + 1)
    (entry,) = captured.entries.values()
    assert entry.capture is not None and entry.capture.calls == 2, entry.refused
    assert len(seen) == 2 and all((s == 3).all() for s in seen)


def test_gradients_are_recorded_not_captured(device):
    net = Net(device.autodiff())
    net.w.requires_grad_(True)
    captured = Captured(lambda x: net(x)[1].sum(), net.state)
    for seed in range(3):
        net.w.grad = None
        x, xt = _input(net.device, seed)
        captured(xt).backward()
        assert net.w.grad is not None
    assert net.runs == 3 and captured.entries == {}
    with pyburn.no_grad():  # without gradients it is captured
        for seed in range(3):
            captured(_input(net.device, seed)[1])
    assert net.runs == 5


def test_switched_off_by_the_environment(device, monkeypatch):
    monkeypatch.setenv(ENV, "0")
    net = Net(device)
    captured = Captured(net, net.state)
    for seed in range(3):
        x, xt = _input(device, seed)
        _check(captured(xt), net.reference(x), device)
    assert net.runs == 3


def test_copies_and_pickles_leave_the_captures_behind():
    net = Net(pyburn.device("flex"))
    captured = Captured(net, net.state)
    for seed in range(3):
        captured(_input(net.device, seed)[1])
    for twin in (copy.deepcopy(captured), pickle.loads(pickle.dumps(captured))):
        assert not twin.entries
        x, xt = _input(net.device, 5)
        _check(twin(xt), twin.fn.reference(x), net.device)
