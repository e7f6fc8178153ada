"""Capture on the wasm device (``pyburn/backends/wasm/capture.py``): a replay gives the bits
the function gives, on new inputs, fused or not; its results are new tensors; no buffer a
replay writes is handed to anyone else; what cannot be replayed is refused with
`CaptureError` and leaves the device as it was. No numpy: this file also runs inside
Pyodide, where the replay is one JavaScript function."""

from __future__ import annotations

import random
import struct

import pytest

import pyburn
from pyburn.backends.wasm.capture import CaptureError, capture
from pyburn.models.mnist import MnistCNN
from pyburn.nn import functional as F


@pytest.fixture
def dev() -> pyburn.Device:
    return pyburn.device("wasm")


def _images(dev: pyburn.Device, seed: int, n: int = 1) -> pyburn.Tensor:
    rng = random.Random(seed)
    values = [rng.random() for _ in range(n * 28 * 28)]
    return pyburn.tensor(values, device=dev).reshape(n, 1, 28, 28)


@pytest.mark.parametrize("fused", [True, False], ids=["fused", "unfused"])
def test_a_replay_gives_the_models_bits_on_new_inputs(dev, monkeypatch, fused):
    if not fused and "fusion" in dev.caps:
        monkeypatch.setattr(dev.backend, "eager_below", 1 << 62)  # every op at once
    if fused and "fusion" in dev.caps:
        monkeypatch.setattr(dev.backend, "eager_below", 0)  # every chain fused
    model = MnistCNN(device=dev)
    model.eval()

    def forward(x: pyburn.Tensor) -> pyburn.Tensor:
        return F.softmax(model(x), dim=1)

    run = capture(forward, _images(dev, 0, 2))
    for seed in (1, 2, 3):
        x = _images(dev, seed, 2)
        with pyburn.no_grad():
            want = forward(x).tolist()
        assert run(x).tolist() == want


def test_results_are_new_tensors_and_several_outputs_come_back_as_a_tuple(dev):
    x = pyburn.tensor([[1.0, -2.0, 3.0]], device=dev)
    run = capture(lambda t: ((t * 2).relu(), t.sum(1)), x)
    first, total = run(x)
    again, _ = run(pyburn.tensor([[-1.0, 4.0, 0.5]], device=dev))
    assert first.tolist() == [[2.0, 0.0, 6.0]] and total.tolist() == [2.0]
    assert again.tolist() == [[0.0, 8.0, 1.0]]
    assert first.tolist() == [[2.0, 0.0, 6.0]]  # the later replay left it alone


def test_raw_takes_and_gives_the_elements_bytes(dev):
    x = pyburn.tensor([[1.0, -2.0, 3.0]], device=dev)
    run = capture(lambda t: ((t * 2).relu(), t.sum(1).int()), x)
    doubled, total = run.raw(struct.pack("<3f", -1.0, 4.0, 0.5))
    assert struct.unpack("<3f", doubled) == (0.0, 8.0, 1.0)
    assert struct.unpack("<i", total) == (3,)
    assert run(x)[0].tolist() == [[2.0, 0.0, 6.0]]  # and the tensors' way still works
    with pytest.raises(CaptureError, match="bytes"):
        run.raw(struct.pack("<2f", 1.0, 2.0))


def test_no_buffer_a_replay_writes_is_handed_out_again(dev):
    x = pyburn.tensor([float(v) for v in range(64)], device=dev)
    run = capture(lambda t: ((t + 1) * 3).exp().log(), x)
    made = [pyburn.full((64,), 7.0, device=dev) + k for k in range(20)]  # the pool's buffers
    run(x)
    assert [t.tolist()[0] for t in made] == [7.0 + k for k in range(20)]


def test_buffers_given_back_while_capturing_stay_out_of_the_pool(dev, monkeypatch):
    if "fusion" in dev.caps:
        monkeypatch.setattr(dev.backend, "eager_below", 0)  # w stays pending until captured
    x = pyburn.tensor([float(v) for v in range(64)], device=dev)
    w = pyburn.rand(64, device=dev) * 2  # (computed from a buffer only w's graph holds)
    run = capture(lambda t: t + w, x)
    want = (x + w).tolist()
    made = [(pyburn.full((64,), 9.0, device=dev) + k).tolist() for k in range(20)]
    assert run(x).tolist() == want and made[3][0] == 12.0


def test_a_function_that_reads_a_value_cannot_be_captured(dev):
    x = pyburn.tensor([1.0, 2.0], device=dev)
    with pytest.raises(CaptureError, match="read a value back"):
        capture(lambda t: t * t.sum().item(), x)
    assert dev.backend.engine.recording is None and dev.backend.inner.pool.held is None
    assert (x * 2).tolist() == [2.0, 4.0]  # the device works as before


@pytest.mark.parametrize("given", ["shape", "dtype", "count", "device"])
def test_inputs_unlike_the_examples_are_refused(dev, given):
    run = capture(lambda t: t * 2, pyburn.tensor([1.0, 2.0], device=dev))
    wrong = {"shape": (pyburn.tensor([1.0, 2.0, 3.0], device=dev),),
             "dtype": (pyburn.tensor([1, 2], device=dev),),
             "count": (pyburn.tensor([1.0, 2.0], device=dev),) * 2,
             "device": (pyburn.tensor([1.0, 2.0], device="flex"),)}[given]
    with pytest.raises(CaptureError):
        run(*wrong)


def test_only_the_wasm_device_is_captured():
    with pytest.raises(CaptureError, match="wasm"):
        capture(lambda t: t * 2, pyburn.tensor([1.0], device="flex"))


def test_what_the_inputs_do_not_reach_is_computed_once_at_capture(dev):
    x = pyburn.tensor([[1.0, -2.0, 3.0]], device=dev)
    w = pyburn.tensor([[0.5, 1.0, -1.0], [2.0, 0.0, 1.0]], device=dev)
    folded = (w.T * 2).exp()  # what the replay may assume
    inline = capture(lambda t: t @ (w.T * 2).exp(), x)
    given = capture(lambda t: t @ folded, x)
    assert inline.steps == given.steps
    y = pyburn.tensor([[0.25, 4.0, -1.5]], device=dev)
    assert inline(y).tolist() == (y @ folded).tolist()


def test_values_the_inputs_do_not_reach_may_be_read_and_returned(dev):
    x = pyburn.tensor([1.0, 2.0], device=dev)
    w = pyburn.tensor([3.0, 4.0], device=dev)
    run = capture(lambda t: (t * w.sum().item(), w.exp()), x)
    scaled, constant = run(pyburn.tensor([-1.0, 0.5], device=dev))
    assert scaled.tolist() == [-7.0, 3.5]
    assert constant.tolist() == w.exp().tolist()
