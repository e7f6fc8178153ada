"""The model zoo's inference speed on the cpu device (issue 22), against PyTorch and
onnxruntime on one thread, in the same run.

Seven zoo models with random (seeded) weights, batch 1: resnet18, mobilenet_v2,
mobilenet_v3_small, efficientnet_b0 and squeezenet1_1 on a 3x224x224 image, yolox_nano on
3x416x416, all-minilm-l6-v2 on 32 tokens (a quick run: 64x64 images and 8 tokens). Two rows
per model (three for the classifiers), in ms per forward:

- eager: ``create(name, device="cpu")`` in eval mode under ``no_grad`` against the same
  network in PyTorch eager mode (``torch.set_num_threads(1)``) holding a copy of pyburn's
  weights: `torch_zoo`'s networks of torchvision's layout for the classifiers,
  `torch_detector`'s for YOLOX, transformers' ``BertModel`` of the same configuration,
  mean-pooled and L2-normalised as the zoo's sentence encoder, for MiniLM. Goal: ratio at
  least 0.7.
- onnx: the model exported by ``pyburn.onnx.export`` and run by ``pyburn.onnx.load`` on cpu
  against an onnxruntime session of the same file with ``intra_op_num_threads=1``. Goal:
  ratio at least 0.5.
- torch.onnx (the five classifiers): the PyTorch twin exported by ``torch.onnx.export``
  (opset 17; it folds each batch norm into its convolution), run the same two ways. Goal:
  ratio at least 0.5.

pyburn's cpu device computes with numpy, whose BLAS takes ``$OPENBLAS_NUM_THREADS`` threads
(default: one per CPU): ``OPENBLAS_NUM_THREADS=1 pyburn bench models`` puts all three on one
thread. The benchmark needs torch, transformers and onnxruntime (the peers, and the makers
of the peers' models): without one it is skipped, saying which.
"""

from __future__ import annotations

import os
import sys
import tempfile
from collections.abc import Callable
from dataclasses import asdict
from typing import Any

import pyburn

from ..models import create
from ..nn import Module
from . import peers
from .onnx import _quiet_options
from .report import Row, Target
from .suite import Benchmark, unavailable
from .timing import Settings, measure

EAGER = Target("ratio", at_least=True, bound=0.7)
ONNX = Target("ratio", at_least=True, bound=0.5)
VISION = ("resnet18", "mobilenet_v2", "mobilenet_v3_small", "efficientnet_b0", "squeezenet1_1")
#: the detector, at YOLOX's own input side (a quick run: 64)
DETECTOR = "yolox_nano"
MINILM = "all-minilm-l6-v2"
#: (image side, tokens) of a full run and of a quick one
SIZES = {False: (224, 32), True: (64, 8)}
DETECTOR_SIDES = {False: 416, True: 64}


def _torch_state(model: Module, torch: Any) -> dict[str, Any]:
    """`model`'s state dict as torch tensors (copies)."""
    return {k: torch.from_numpy(v.numpy().copy()) for k, v in model.state_dict().items()}


def _vision(name: str, side: int, torch: Any) -> tuple[Any, Callable[[], Any], tuple[Any, ...],
                                                       Any]:
    """The zoo's `name`, its PyTorch twin's forward on the same image, the image, and the
    twin."""
    # import time: torch loads for this family only
    from .torch_detector import TorchYOLOX
    from .torch_zoo import REFERENCES

    model = create(name, device="cpu")
    # YOLOX-Nano: depth 0.33, width 0.25, depthwise
    twin = TorchYOLOX(0.33, 0.25, 80, True) if name == DETECTOR else REFERENCES[name](1000)
    twin.load_state_dict(_torch_state(model, torch))
    twin.eval()
    image = pyburn.randn(1, 3, side, side, device="cpu")
    x = torch.from_numpy(image.numpy())
    return model, lambda: twin(x), (image,), twin


def _minilm(tokens: int, torch: Any, transformers: Any) -> tuple[Any, Callable[[], Any],
                                                                  tuple[Any, ...]]:
    """The zoo's MiniLM sentence encoder (no pooler: its forward does not use one),
    transformers' BertModel of its configuration with its weights, mean-pooled and
    normalised, and a sequence of random token ids."""
    model = create(MINILM, device="cpu", add_pooling_layer=False)
    twin = transformers.BertModel(transformers.BertConfig(**asdict(model.config)),
                                  add_pooling_layer=False)
    twin.load_state_dict(_torch_state(model, torch))
    twin.eval()
    ids = pyburn.randint(0, model.config.vocab_size, (1, tokens), device="cpu")
    x = torch.from_numpy(ids.numpy()).long()

    def forward() -> Any:
        hidden = twin(x).last_hidden_state
        return torch.nn.functional.normalize(hidden.mean(1), dim=1)

    return model, forward, (ids,)


def _rows(name: str, case: str, built: tuple[Any, Callable[[], Any], tuple[Any, ...]],
          settings: Settings, torch: Any, ort: Any) -> list[Row]:
    """The eager row and the ONNX row of one model."""
    import pyburn.onnx  # import time: the ONNX reader and writer load for this family only

    model, twin, inputs = built
    print(f"  {name} ...", file=sys.stderr, flush=True)

    def ours() -> Any:
        with pyburn.no_grad():
            return model(*inputs).numpy()

    def theirs() -> Any:
        with torch.no_grad():
            return twin().numpy()

    times = measure({"pyburn": ours, "peer": theirs}, settings)
    rows = [Row.compare("models.cpu", f"{name} eager, {case}", "ms", lambda s: s * 1e3, times,
                        "peer", peers.label("torch"), EAGER, settings.quick)]
    with tempfile.TemporaryDirectory() as folder:
        path = os.path.join(folder, f"{name}.onnx")
        pyburn.onnx.export(model, inputs, path)
        imported = pyburn.onnx.load(path, device="cpu")
        options = _quiet_options(ort)
        options.intra_op_num_threads = 1
        session = ort.InferenceSession(path, options, providers=["CPUExecutionProvider"])
        feed = {i.name: x.numpy() for i, x in zip(session.get_inputs(), inputs)}
        times = measure({"pyburn": lambda: imported(*inputs).numpy(),
                         "peer": lambda: session.run(None, feed)}, settings)
    rows.append(Row.compare("models.cpu", f"{name} ONNX, {case}", "ms", lambda s: s * 1e3,
                            times, "peer", peers.label("onnxruntime"), ONNX, settings.quick))
    return rows


def _torch_onnx(name: str, case: str, twin: Any, image: Any, settings: Settings, torch: Any,
                ort: Any) -> Row:
    """The PyTorch twin exported by ``torch.onnx.export`` (TorchScript's exporter, opset 17,
    which folds each batch norm into its convolution), run by ``pyburn.onnx.load`` on cpu
    against onnxruntime on the same file."""
    import pyburn.onnx  # import time: the ONNX reader loads for this family only

    with tempfile.TemporaryDirectory() as folder:
        path = os.path.join(folder, f"{name}.onnx")
        with torch.no_grad():
            torch.onnx.export(twin, (torch.from_numpy(image.numpy()),), path,
                              opset_version=17, dynamo=False)
        imported = pyburn.onnx.load(path, device="cpu")
        options = _quiet_options(ort)
        options.intra_op_num_threads = 1
        session = ort.InferenceSession(path, options, providers=["CPUExecutionProvider"])
        feed = {session.get_inputs()[0].name: image.numpy()}
        times = measure({"pyburn": lambda: imported(image).numpy(),
                         "peer": lambda: session.run(None, feed)}, settings)
    return Row.compare("models.cpu", f"{name} torch.onnx, {case}", "ms", lambda s: s * 1e3,
                       times, "peer", peers.label("onnxruntime"), ONNX, settings.quick)


def measure_cpu(settings: Settings) -> list[Row]:
    """Each model's eager forward against PyTorch's and its ONNX export against
    onnxruntime's, PyTorch held to one thread meanwhile."""
    # all three are there: `missing` said so before the run
    torch: Any = peers.load("torch")
    ort, transformers = peers.load("onnxruntime"), peers.load("transformers")
    side, tokens = SIZES[settings.quick]
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        rows = []
        for name, at in [(name, side) for name in VISION] + [(DETECTOR, DETECTOR_SIDES[
                settings.quick])]:
            pyburn.manual_seed(0)
            model, forward, inputs, twin = _vision(name, at, torch)
            case = f"1x3x{at}x{at}"
            rows += _rows(name, case, (model, forward, inputs), settings, torch, ort)
            if name in VISION:
                rows.append(_torch_onnx(name, case, twin, inputs[0], settings, torch, ort))
        pyburn.manual_seed(0)
        rows += _rows(MINILM, f"1x{tokens} tokens", _minilm(tokens, torch, transformers),
                      settings, torch, ort)
        return rows
    finally:
        torch.set_num_threads(threads)


def missing() -> str | None:
    """Why the benchmark cannot run here (no cpu device, or a peer missing), or None."""
    lacking = [name for name in ("torch", "transformers", "onnxruntime")
               if peers.load(name) is None]
    return unavailable("cpu") or (f"needs {', '.join(lacking)}" if lacking else None)


BENCHMARKS = (
    Benchmark("models", "cpu", "the zoo's ResNet-18, MobileNetV2/V3, EfficientNet-B0, "
              "SqueezeNet 1.1, YOLOX-Nano, MiniLM: eager vs PyTorch, ONNX vs onnxruntime "
              "(1 thread)", measure_cpu, requires=missing),
)
