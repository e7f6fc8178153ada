"""burn-bench's suite: families that run on any device (``--devices``), against PyTorch CPU.

Each family is a list of cases, and a case is one function written once against an `Api`:
pyburn and PyTorch share their tensor methods and the names of ``nn.functional`` and ``nn``,
so ``lambda api, x, w: api.F.conv2d(x, w, padding=1)`` is the same work in both. Inputs are
uniform random (seeded; the values do not change the work, so each framework draws its own),
modules are built with each framework's initialisation. A pyburn call ends by reading one
element of its result, so that a lazy or asynchronous device (wgpu with fusion) has done the
work (PyTorch does the same, for the same read).

Sizes are burn-bench's at ``--size full`` (elementwise ops and reductions on [32, 512, 1024],
square matmuls from 256 to 8192, ...) and a few elements at ``--size small``, a smoke test.
At full size flex (pure Python) takes hours and a software wgpu adapter minutes: name the
devices (``--devices cpu,wgpu``) and families you mean to wait for.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import pyburn
import pyburn.nn as pyburn_nn
import pyburn.nn.functional as pyburn_F

from . import peers
from .report import Row
from .suite import Family
from .timing import Settings, measure
from .train import blas_threads

Shape = tuple[int, ...]
#: the devices these families run on when named in a run without --devices
DEFAULT_DEVICES = ("cpu", "wgpu")
#: burn-bench's shape of elementwise ops and reductions, and this suite's small one
LARGE, SMALL = (32, 512, 1024), (4, 16, 32)
ENCODER_LAYERS, ENCODER_HEADS = 4, 8


@dataclass(frozen=True)
class Api:
    """pyburn or PyTorch as a case uses it: the package, its ``nn.functional`` (F) and
    ``nn``, the device of inference and that of training (pyburn's autodiff form), and what
    the two spell differently: a tensor of the device made from a numpy array (`upload`), a
    module's weights saved to a file in the framework's own format (`save`) and loaded back
    into it (`load`)."""

    lib: Any
    F: Any
    nn: Any
    device: Any
    train_device: Any
    upload: Callable[[Any], Any]
    save: Callable[[Any, str], None]
    load: Callable[[Any, str], None]

    def rand(self, *shape: int, grad: bool = False) -> Any:
        """A uniform random float32 tensor of `shape`, on the training device when `grad`
        (and then requiring grad)."""
        if grad:
            return self.lib.rand(*shape, device=self.train_device).requires_grad_()
        return self.lib.rand(*shape, device=self.device)


def _read_one(result: Any) -> object:
    """The first element of `result` (of its first tensor, for a tuple), read back."""
    while isinstance(result, tuple):
        result = result[0]
    return result[(0,) * result.ndim].item()


def pyburn_api(device: str) -> Api:
    """pyburn on `device`: safetensors files through `pyburn.store`."""
    from .. import store  # import time: the store loads for the families that save

    def load(module: Any, path: str) -> None:
        module.load_state_dict(store.load(path, device=device))

    return Api(pyburn, pyburn_F, pyburn_nn, device, pyburn.device(device).autodiff(),
               lambda array: pyburn.from_numpy(array, device=device),
               lambda module, path: store.save(module, path), load)


def torch_api(torch: Any) -> Api:
    """PyTorch on its CPU: its own ``torch.save`` files."""
    def load(module: Any, path: str) -> None:
        module.load_state_dict(torch.load(path, map_location="cpu"))

    return Api(torch, torch.nn.functional, torch.nn, "cpu", "cpu",
               lambda array: torch.from_numpy(array).clone(),
               lambda module, path: torch.save(module.state_dict(), path), load)


def _tensors(api: Api, shapes: Sequence[Shape]) -> list[Any]:
    return [api.rand(*shape) for shape in shapes]


@dataclass(frozen=True)
class Case:
    """One measured call: its label, the shapes it is given at full and small size, what it
    computes (`run(api, *made)`) and what it is given (`setup(api, shapes)`, by default a
    random tensor per shape)."""

    label: str
    full: tuple[Shape, ...]
    small: tuple[Shape, ...]
    run: Callable[..., Any]
    setup: Callable[[Api, Sequence[Shape]], list[Any]] = field(default=_tensors)

    def call(self, api: Api, quick: bool) -> Callable[[], object]:
        """The timed call, its inputs made now, once."""
        made = self.setup(api, self.small if quick else self.full)
        return lambda: _read_one(self.run(api, *made))

    def describe(self, quick: bool) -> str:
        """The row's case: the label and the shapes, e.g. "exp, 32x512x1024 f32"."""
        shapes = self.small if quick else self.full
        return f"{self.label}, {', '.join('x'.join(map(str, s)) for s in shapes)} f32"


def _gelu(x: Any) -> Any:
    """GELU, tanh approximation, written as eight elementwise ops: a fusion's test."""
    return 0.5 * x * (1.0 + (0.7978845608 * (x + 0.044715 * x * x * x)).tanh())


def _encoder(grad: bool) -> Callable[[Api, Sequence[Shape]], list[Any]]:
    """The setup of a transformer encoder case: `ENCODER_LAYERS` post-norm layers of
    `ENCODER_HEADS` heads, width of the input's last dim, feed-forward four times that, no
    dropout; on the training device with an input requiring grad when `grad`, else in eval
    mode."""
    def setup(api: Api, shapes: Sequence[Shape]) -> list[Any]:
        ((batch, seq, width),) = shapes
        layer = api.nn.TransformerEncoderLayer(
            width, ENCODER_HEADS, 4 * width, dropout=0.0, batch_first=True,
            device=api.train_device if grad else api.device)
        model = api.nn.TransformerEncoder(layer, ENCODER_LAYERS)
        if not grad:
            model.eval()
        return [model, api.rand(batch, seq, width, grad=grad)]

    return setup


def _no_grad_forward(api: Api, model: Any, x: Any) -> Any:
    with api.lib.no_grad():
        return model(x)


def _lstm(api: Api, shapes: Sequence[Shape]) -> list[Any]:
    ((batch, seq, features),) = shapes
    model = api.nn.LSTM(features, 2 * features, batch_first=True, device=api.train_device)
    return [model, api.rand(batch, seq, features, grad=True)]


def _backward(api: Api, model: Any, x: Any) -> Any:
    """Forward, the sum of the output, backward to every parameter and the input; the
    gradients are reset first, as a training step's zero_grad does."""
    for p in [*model.parameters(), x]:
        p.grad = None
    output = model(x)
    (output[0] if isinstance(output, tuple) else output).sum().backward()
    return x.grad


def _square(n: int) -> tuple[Shape, Shape]:
    return (n, n), (n, n)


def _no_inputs(api: Api, shapes: Sequence[Shape]) -> list[Any]:
    return list(shapes)


def _host(api: Api, shapes: Sequence[Shape]) -> list[Any]:
    """A numpy array of uniform float32 numbers of the one shape (numpy: a peer's input)."""
    import numpy as np  # optional: the to_device family needs numpy, as its peer does

    (shape,) = shapes
    return [np.random.default_rng(0).random(shape, dtype=np.float32)]


def _record(api: Api, shapes: Sequence[Shape]) -> list[Any]:
    """An MLP of the shapes' widths and the file its weights were saved to (in a temporary
    folder that lives as long as the case's inputs)."""
    ((inputs, hidden),) = shapes
    model = api.nn.Sequential(api.nn.Linear(inputs, hidden, device=api.device), api.nn.ReLU(),
                              api.nn.Linear(hidden, inputs, device=api.device))
    folder = tempfile.TemporaryDirectory(prefix="pyburn-bench-")
    path = os.path.join(folder.name, "record")
    api.save(model, path)
    return [model, path, folder]


def _loaded(api: Api, model: Any, path: str, folder: Any) -> Any:
    """`model` after loading its weights from `path`: its first weight."""
    api.load(model, path)
    return next(iter(model.parameters()))


def _family(name: str, about: str, cases: Sequence[Case]) -> Family:
    """The family `name` of `cases`, measured on any device against PyTorch CPU."""
    def measure_on(device: str, settings: Settings) -> list[Row]:
        apis = {"pyburn": pyburn_api(device)}
        torch = peers.load("torch")
        if torch is not None:
            torch.set_num_threads(blas_threads())
            apis["torch"] = torch_api(torch)
        rows = []
        for case in cases:
            candidates = {}
            for who, api in apis.items():
                api.lib.manual_seed(0)
                candidates[who] = case.call(api, settings.quick)
            times = measure(candidates, settings)
            rows.append(Row.compare(f"{name}.{device}", case.describe(settings.quick), "ms",
                                    lambda seconds: seconds * 1e3, times, "torch",
                                    peers.label("torch"), None, settings.quick))
        return rows

    return Family(name, f"{about}, ms vs PyTorch CPU", measure_on)


FAMILIES = (
    _family("unary", "exp on 32x512x1024",
            [Case("exp", (LARGE,), (SMALL,), lambda api, x: x.exp())]),
    _family("binary", "a + b on 32x512x1024",
            [Case("a + b", (LARGE, LARGE), (SMALL, SMALL), lambda api, a, b: a + b)]),
    _family("custom_gelu", "GELU as 8 elementwise ops on 32x512x1024",
            [Case("gelu (tanh) as elementwise ops", (LARGE,), (SMALL,),
                  lambda api, x: _gelu(x))]),
    _family("reduce", "sum, sum along a dim, argmax on 32x512x1024",
            [Case("sum()", (LARGE,), (SMALL,), lambda api, x: x.sum()),
             Case("sum(dim=2)", (LARGE,), (SMALL,), lambda api, x: x.sum(dim=2)),
             Case("argmax(dim=2)", (LARGE,), (SMALL,), lambda api, x: x.argmax(dim=2))]),
    _family("gemm", "square matmul 256 to 8192, batched, fused with bias and relu",
            [*(Case("a @ b", _square(n), _square(n // 64), lambda api, a, b: a @ b)
               for n in (256, 1024, 4096, 8192)),
             Case("batched a @ b", ((16, 512, 512), (16, 512, 512)), ((2, 8, 8), (2, 8, 8)),
                  lambda api, a, b: a @ b),
             Case("relu(a @ b + bias)", (*_square(1024), (1024,)), (*_square(16), (16,)),
                  lambda api, a, b, bias: api.F.relu(a @ b + bias))]),
    _family("softmax", "softmax along the last dim of 32x512x1024",
            [Case("softmax(dim=-1)", (LARGE,), (SMALL,),
                  lambda api, x: api.F.softmax(x, dim=-1))]),
    _family("conv2d", "3x3 convolution, 32->64 channels, 16x64x64",
            [Case("conv2d 3x3 pad 1", ((16, 32, 64, 64), (64, 32, 3, 3)),
                  ((1, 2, 8, 8), (3, 2, 3, 3)),
                  lambda api, x, w: api.F.conv2d(x, w, padding=1))]),
    _family("max_pool2d", "3x3 max pool, stride 2, on 16x32x128x128",
            [Case("max_pool2d 3x3 stride 2 pad 1", ((16, 32, 128, 128),), ((1, 2, 8, 8),),
                  lambda api, x: api.F.max_pool2d(x, 3, stride=2, padding=1))]),
    _family("conv3d", "3x3x3 convolution, 16->32 channels, 4x16x16x32x32",
            [Case("conv3d 3x3x3 pad 1", ((4, 16, 16, 32, 32), (32, 16, 3, 3, 3)),
                  ((1, 2, 4, 6, 6), (3, 2, 3, 3, 3)),
                  lambda api, x, w: api.F.conv3d(x, w, padding=1))]),
    _family("conv_transpose2d", "3x3 transposed convolution, stride 2, 64->32 channels",
            [Case("conv_transpose2d 3x3 stride 2", ((16, 64, 32, 32), (64, 32, 3, 3)),
                  ((1, 3, 4, 4), (3, 2, 3, 3)),
                  lambda api, x, w: api.F.conv_transpose2d(x, w, stride=2))]),
    _family("conv_transpose3d", "3x3x3 transposed convolution, stride 2, 32->16 channels",
            [Case("conv_transpose3d 3x3x3 stride 2", ((4, 32, 8, 16, 16), (32, 16, 3, 3, 3)),
                  ((1, 3, 3, 4, 4), (3, 2, 3, 3, 3)),
                  lambda api, x, w: api.F.conv_transpose3d(x, w, stride=2))]),
    _family("attention", "scaled dot-product attention, 8 heads of 64 over 512 tokens",
            [Case("scaled_dot_product_attention", ((8, 8, 512, 64),) * 3, ((1, 2, 8, 4),) * 3,
                  lambda api, q, k, v: api.F.scaled_dot_product_attention(q, k, v))]),
    _family("transformer", "a 4-layer transformer encoder, d_model 256 over 128 tokens: "
            "inference, and forward+backward",
            [Case(f"TransformerEncoder {ENCODER_LAYERS} layers {ENCODER_HEADS} heads, "
                  "inference", ((8, 128, 256),), ((2, 4, 16),), _no_grad_forward,
                  _encoder(grad=False)),
             Case(f"TransformerEncoder {ENCODER_LAYERS} layers {ENCODER_HEADS} heads, "
                  "forward+backward", ((8, 128, 256),), ((2, 4, 16),), _backward,
                  _encoder(grad=True))]),
    _family("lstm", "autodiff: an LSTM's forward+backward, 64 steps of 16x64",
            [Case("LSTM to twice the features, forward+backward", ((16, 64, 64),),
                  ((2, 3, 4),), _backward, _lstm)]),
    _family("random", "rand(32, 512, 1024)",
            [Case("rand", (LARGE,), (SMALL,), lambda api, shape: api.rand(*shape),
                  _no_inputs)]),
    _family("launch_overhead", "one op on one element, then its read back",
            [Case("x + 1, then read", ((1,),), ((1,),), lambda api, x: x + 1)]),
    _family("to_device", "32x512x1024 numbers from the host to the device and back",
            [Case("host -> device -> host", (LARGE,), (SMALL,),
                  lambda api, host: api.upload(host).numpy(), _host)]),
    _family("load_record", "an MLP's weights (1024 -> 4096 -> 1024) loaded from its file",
            [Case("load a saved state dict", ((1024, 4096),), ((8, 16),), _loaded, _record)]),
)
