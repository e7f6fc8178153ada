"""`pyburn.amp.GradScaler` against torch.amp.GradScaler (the same scales, the same skipped
steps, the same unscaled gradients and state dicts), its one device read per step, its
errors; and mixed-precision training of a small CNN on MNIST on wgpu, which reaches the
float32 run's test accuracy."""

from __future__ import annotations

import math

import numpy as np
import pytest

import pyburn
import pyburn.nn.functional as F
from pyburn import nn
from pyburn.amp import GradScaler
from pyburn.backends import wgpu
from pyburn.optim import SGD, Adam

torch = pytest.importorskip("torch")

INF, NAN = math.inf, math.nan
# per step: the gradient the backward pass would give (before scaling; inf/nan: overflow),
# and whether the step unscales first (as it would to clip)
SCRIPT = [(1.0, False), (2.0, True), (INF, False), (-1.0, False), (0.5, True), (NAN, True),
          (3.0, False), (1.0, False), (2.0, False), (-INF, False), (1.5, True), (1.0, False)]
OPTIONS = {"init_scale": 8.0, "growth_factor": 4.0, "backoff_factor": 0.25,
           "growth_interval": 3}


def _run(lib, scaler) -> list[tuple]:
    """The script with `lib` (pyburn or torch): each step's loss ``sum(p * [g, 1]) + sum(q)``
    scaled and differentiated, so the gradients are ``[g, 1] * scale`` and ``[scale]``."""
    dev = {"device": pyburn.device("cpu").autodiff()} if lib is pyburn else {}
    p = lib.tensor([1.0, -1.0], requires_grad=True, **dev)
    q = lib.tensor([0.5], requires_grad=True, **dev)
    opt = (SGD if lib is pyburn else torch.optim.SGD)([p, q], lr=0.1)
    seen = []
    for g, unscale_first in SCRIPT:
        opt.zero_grad()
        loss = (p * lib.tensor([g, 1.0], **dev)).sum() + q.sum()
        scaler.scale(loss).backward()
        seen.append(("scaled", p.grad.tolist(), q.grad.tolist()))
        if unscale_first:
            scaler.unscale_(opt)
            seen.append(("unscaled", p.grad.tolist(), q.grad.tolist()))
        scaler.step(opt)
        scaler.update()
        seen.append((scaler.get_scale(), p.tolist(), q.tolist()))
    return seen


def test_scales_skips_and_unscaled_gradients_match_torch():
    ours, theirs = GradScaler(**OPTIONS), torch.amp.GradScaler("cpu", **OPTIONS)
    got, want = _run(pyburn, ours), _run(torch, theirs)
    assert len(got) == len(want)
    for (tag, *ours_values), (their_tag, *their_values) in zip(got, want):
        assert tag == their_tag  # the stage, or the scale after update()
        for mine, theirs_ in zip(ours_values, their_values):
            if isinstance(tag, str):  # gradients: powers of two times the script's, exact
                np.testing.assert_array_equal(mine, theirs_)
            else:  # parameters: SGD's update rounds in its own order in each library
                np.testing.assert_allclose(mine, theirs_, rtol=1e-6, atol=1e-7)
    # the scale went down (3 overflows) and up (growth after 3 clean steps) on the way
    scales = [s for s, *_ in got if not isinstance(s, str)]
    steps = list(zip(scales, scales[1:]))
    assert any(b < a for a, b in steps) and any(b > a for a, b in steps)
    assert ours.state_dict() == theirs.state_dict()


def test_state_dict_round_trips_and_reads_torchs():
    theirs = torch.amp.GradScaler("cpu", **OPTIONS)
    _run(torch, theirs)
    ours = GradScaler()
    ours.load_state_dict(theirs.state_dict())
    assert ours.state_dict() == theirs.state_dict()
    again = GradScaler()
    again.load_state_dict(ours.state_dict())
    assert again.get_scale() == theirs.get_scale()
    assert (again.get_growth_factor(), again.get_backoff_factor(),
            again.get_growth_interval()) == (4.0, 0.25, 3)
    assert GradScaler(enabled=False).state_dict() == {}
    with pytest.raises(pyburn.ArgumentError, match="the state dict is empty"):
        GradScaler().load_state_dict({})


def test_a_step_reads_the_device_once(monkeypatch):
    dev = pyburn.device("cpu").autodiff()
    params = [pyburn.ones(3, device=dev, requires_grad=True) for _ in range(5)]
    opt, scaler = SGD(params, lr=0.1), GradScaler()
    for p in params:
        p.grad = pyburn.ones(3, device=dev) * scaler.get_scale()
    reads = []
    backend = dev.backend
    original = backend.to_bytes
    monkeypatch.setattr(backend, "to_bytes", lambda *a: reads.append(1) or original(*a))
    scaler.unscale_(opt)
    assert not reads  # unscaling reads nothing
    scaler.step(opt)
    scaler.update()
    assert len(reads) == 1


def test_disabled_scaler_passes_through():
    dev = pyburn.device("cpu").autodiff()
    p = pyburn.ones(2, device=dev, requires_grad=True)
    opt, scaler = SGD([p], lr=0.5), GradScaler(enabled=False)
    loss = (p * 2).sum()
    assert scaler.scale(loss) is loss and scaler.get_scale() == 1.0 and not scaler.is_enabled()
    loss.backward()
    scaler.unscale_(opt)
    scaler.step(opt)
    scaler.update()
    assert p.tolist() == [0.0, 0.0]


def test_misuse_is_reported():
    dev = pyburn.device("cpu").autodiff()
    p = pyburn.ones(2, device=dev, requires_grad=True)
    opt, scaler = SGD([p], lr=0.5), GradScaler()
    with pytest.raises(pyburn.ArgumentError, match="nothing to adjust"):
        scaler.update()
    p.grad = pyburn.ones(2, device=dev)
    scaler.unscale_(opt)
    with pytest.raises(pyburn.ArgumentError, match="already called on this optimizer"):
        scaler.unscale_(opt)
    scaler.step(opt)
    with pytest.raises(pyburn.ArgumentError, match="step: already called"):
        scaler.step(opt)
    with pytest.raises(pyburn.ArgumentError, match="called after step"):
        scaler.unscale_(opt)
    scaler.update()
    scaled = scaler.scale([pyburn.ones(1, device=dev), pyburn.ones(1, device=dev)])
    assert [t.item() for t in scaled] == [scaler.get_scale()] * 2
    # a float16 loss is scaled in float32, as torch's is: 2 * 2**16 would overflow float16
    half_loss = scaler.scale(pyburn.full((), 2.0, device=dev, dtype=pyburn.float16))
    assert half_loss.dtype is pyburn.float32 and half_loss.item() == 2.0 * scaler.get_scale()
    with pytest.raises(pyburn.ArgumentError, match="does not support a closure"):
        scaler.step(opt, closure=lambda: None)
    for bad in ({"growth_factor": 1.0}, {"backoff_factor": 1.0}, {"growth_interval": 0},
                {"init_scale": 0.0}):
        with pytest.raises(pyburn.ArgumentError):
            GradScaler(**bad)
    half = pyburn.ones(2, device=dev, dtype=pyburn.float16, requires_grad=True)
    half.grad = pyburn.ones(2, device=dev, dtype=pyburn.float16)
    with pytest.raises(pyburn.DTypeError, match="float16 gradients"):
        GradScaler().unscale_(SGD([half], lr=0.1))


# ---- training: float32 and autocast + GradScaler reach the same test accuracy -----------

class SmallMnistCNN(nn.Module):
    """The MNIST CNN's shape (two blocks of conv, max pool, batch norm, ReLU, then two linear
    layers), made cheap enough to train on llvmpipe: the 28x28 images are average-pooled to
    14x14 first, and each block pools before its batch norm."""

    def __init__(self, device: pyburn.Device):
        super().__init__()
        self.conv1 = nn.Conv2d(1, 8, 3, padding=1, bias=False, device=device)
        self.bn1 = nn.BatchNorm2d(8, device=device)
        self.conv2 = nn.Conv2d(8, 16, 3, padding=1, bias=False, device=device)
        self.bn2 = nn.BatchNorm2d(16, device=device)
        self.fc1 = nn.Linear(16 * 3 * 3, 32, device=device)
        self.fc2 = nn.Linear(32, 10, device=device)

    def forward(self, x: pyburn.Tensor) -> pyburn.Tensor:
        x = F.avg_pool2d(x, 2)
        x = F.relu(self.bn1(F.max_pool2d(self.conv1(x), 2)))
        x = F.relu(self.bn2(F.max_pool2d(self.conv2(x), 2)))
        return self.fc2(F.relu(self.fc1(x.reshape(x.shape[0], -1))))


def _train_and_test(dev: pyburn.Device, mixed: bool, data: tuple) -> tuple[float, pyburn.DType]:
    """Test accuracy (in points) after two epochs of Adam (60 steps) with a cosine schedule,
    and the dtype of the logits."""
    x_train, y_train, x_test, y_test = data
    pyburn.manual_seed(0)
    model = SmallMnistCNN(dev)
    opt, scaler = Adam(model.parameters(), lr=1e-2), GradScaler(enabled=mixed)
    batch, epochs = 50, 2
    steps = epochs * (x_train.shape[0] // batch)
    for step in range(steps):
        opt.param_groups[0]["lr"] = 5e-3 * (1 + math.cos(math.pi * step / steps))
        i = (step * batch) % x_train.shape[0]
        with pyburn.autocast(dev, enabled=mixed):
            logits = model(x_train[i:i + batch])
            loss = F.cross_entropy(logits, y_train[i:i + batch])
        opt.zero_grad()
        scaler.scale(loss).backward()
        scaler.step(opt)
        scaler.update()
    model.eval()
    with pyburn.no_grad(), pyburn.autocast(dev, enabled=mixed):
        predicted = model(x_test).argmax(1).numpy()
    return float((predicted == y_test).mean() * 100), logits.dtype


def test_mixed_precision_training_on_wgpu_reaches_float32_accuracy(mnist):
    """MNIST: the first 1500 training images, and the whole test split, so that the 0.5
    points allowed are 50 test images. Over seeds 0-9 on cpu the float32 run scored
    89.3-92.0% and the two runs differed by at most 0.42 points (seed 0: 90.95 and 91.01;
    on wgpu 90.95 and 90.99)."""
    if wgpu.unavailable_reason() is not None:
        pytest.skip("needs a wgpu adapter")
    dev = pyburn.device("wgpu").autodiff()
    if pyburn.float16 not in dev.backend.dtypes:
        pytest.skip("the wgpu adapter has no shader-f16")
    x_train, y_train = mnist(True, 1500)
    x_test, y_test = mnist(False, 10000)
    data = (pyburn.tensor(x_train[:, None], device=dev), pyburn.tensor(y_train, device=dev),
            pyburn.tensor(x_test[:, None], device=dev), y_test)
    full, full_dtype = _train_and_test(dev, False, data)
    mixed, mixed_dtype = _train_and_test(dev, True, data)
    assert (full_dtype, mixed_dtype) == (pyburn.float32, pyburn.float16)
    assert full > 87.0
    assert abs(mixed - full) <= 0.5, (full, mixed)
