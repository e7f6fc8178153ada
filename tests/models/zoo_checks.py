"""What the model-zoo tests (test_vision_zoo, test_vit, test_yolox, test_bert, test_llama)
share: the packages they compare against, the devices a model's outputs are checked on, the
tolerance of "the reference's outputs", reference weights saved as a publisher's ``.pth`` and
``.safetensors`` files, and the ONNX round trip (``pyburn.onnx.export``, then
``pyburn.onnx.load`` and onnxruntime, all giving the model's own outputs).

Importing it needs numpy and PyTorch (every zoo test compares against PyTorch): without them
the importing test module is skipped, as its own `require` would skip it."""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

import pyburn
import pyburn.onnx
from pyburn import models
from pyburn.backends import wgpu

np = pytest.importorskip("numpy")
torch = pytest.importorskip("torch")

#: the devices a zoo model's outputs are checked on, as a test's `on` argument (not `device`:
#: tests/conftest.py would parametrize that over every device, flex included); wgpu is
#: skipped where it has no adapter (a run with ``PYBURN_SKIP=wgpu``)
DEVICES = ["cpu", pytest.param("wgpu", marks=pytest.mark.skipif(
    wgpu.unavailable_reason() is not None, reason="no wgpu adapter"))]

#: (the .pth path, the .safetensors path, the reference network's outputs)
Published = tuple[Path, Path, Any]


def require(*names: str) -> tuple[ModuleType, ...]:
    """The modules `names`, imported; at a test module's top, the whole module is skipped
    where one is missing (`pytest.importorskip`)."""
    return tuple(pytest.importorskip(name) for name in names)


def as_numpy(value: Any) -> Any:
    """`value` as a numpy array: a pyburn tensor through its values (``tolist``, so float64),
    a PyTorch tensor detached, anything else (lists, numpy arrays) as numpy reads it."""
    if isinstance(value, pyburn.Tensor):
        return np.array(value.tolist())
    if isinstance(value, torch.Tensor):
        return value.detach().numpy()
    return np.asarray(value)


def assert_close(actual: Any, expected: Any, what: str = "", *, floor: float = 1.0) -> None:
    """`actual` equals the reference `expected` within a relative tolerance of 1e-4 and an
    absolute one of 1e-5 times the larger of `floor` and the reference's largest magnitude
    (float32 arithmetic done in another order); `what` names the comparison in the failure.
    Either side may be a pyburn or PyTorch tensor, a numpy array or nested lists."""
    expected = as_numpy(expected)
    np.testing.assert_allclose(as_numpy(actual), expected, rtol=1e-4,
                               atol=1e-5 * max(floor, float(np.abs(expected).max())),
                               err_msg=what)


def images(seed: int = 0, count: int = 2, size: int = 32) -> tuple[Any, Any]:
    """`count` random RGB images of `size` x `size` drawn from `seed`, as a PyTorch tensor and
    the same values as a numpy array."""
    x = torch.randn(count, 3, size, size, generator=torch.Generator().manual_seed(seed))
    return x, x.numpy()


def save_weights(state: Mapping[str, Any], folder: Path, stem: str,
                 pth_key: str | None = None) -> tuple[Path, Path]:
    """The PyTorch state dict `state` saved as a publisher saves it: `folder`/`stem`.pth by
    ``torch.save`` (nested under `pth_key` where the publisher's checkpoints are, as the YOLOX
    repository's are under "model") and `folder`/`stem`.safetensors; the two paths."""
    safetensors_torch = pytest.importorskip("safetensors.torch")
    pth, safetensors = folder / f"{stem}.pth", folder / f"{stem}.safetensors"
    torch.save(state if pth_key is None else {pth_key: state}, pth)
    safetensors_torch.save_file({k: v.contiguous() for k, v in state.items()}, safetensors)
    return pth, safetensors


def published_weights(tmp_path_factory: pytest.TempPathFactory,
                      reference: Callable[[str], Any], inputs: Any,
                      pth_key: str | None = None) -> Callable[[str], Published]:
    """For a module-scoped fixture: name -> (.pth path, .safetensors path, outputs), the
    weights of the PyTorch network ``reference(name)`` saved once (`save_weights`, in a
    folder of their own) with the network's outputs on `inputs` (a PyTorch tensor) as numpy."""

    @functools.cache
    def get(name: str) -> Published:
        net = reference(name)
        pth, safetensors = save_weights(net.state_dict(), tmp_path_factory.mktemp(name), name,
                                        pth_key)
        with torch.no_grad():
            return pth, safetensors, net(inputs).numpy()

    return get


def assert_files_give_outputs(name: str, paths: Iterable[Path], on: str, inputs: Any,
                              expected: Any, /, **config: Any) -> None:
    """The zoo's model `name` (``pyburn.models.create`` with `config`) loaded from each file
    of `paths` on the device `on` gives the reference's `expected` outputs on `inputs` (a
    numpy array), without gradients (`assert_close`)."""
    x = pyburn.tensor(inputs, device=on)
    for path in paths:
        model = models.create(name, weights=path, device=on, **config)
        with pyburn.no_grad():
            assert_close(model(x), expected, f"{name} from {path.name} on {on}")


def assert_onnx_round_trip(model: pyburn.nn.Module, inputs: Any, path: Path,
                           what: str = "") -> None:
    """`model` exported to ONNX at `path` on `inputs` (one numpy array, taken on cpu): the
    file loaded back by ``pyburn.onnx.load`` and run by onnxruntime both give the model's own
    outputs (`assert_close`); `what`, where given, prefixes the failure's message."""
    ort = pytest.importorskip("onnxruntime")
    x = pyburn.tensor(inputs, device="cpu")
    pyburn.onnx.export(model, x, path)
    with pyburn.no_grad():
        ours = np.array(model(x).tolist())
        again = np.array(pyburn.onnx.load(path, device="cpu")(x).tolist())
    session = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    (theirs,) = session.run(None, {session.get_inputs()[0].name: inputs})
    prefix = f"{what}: " if what else ""
    assert_close(again, ours, f"{prefix}pyburn.onnx.load")
    assert_close(theirs, ours, f"{prefix}onnxruntime")
