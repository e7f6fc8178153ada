"""Generated code against the runner: a model is converted once (`pyburn onnx convert`'s
`convert`, which loads it on cpu, or on flex where there is no numpy), its module imported,
and then, on each device, run through `pyburn.onnx.load` and through the generated module on
the same inputs; the two must give the same outputs (dtype, shape and values: integers
exactly, floats within `RTOL`/`ATOL`, since a step written as a `pyburn.nn` layer may round
differently from the operator function the runner calls). Pure Python, so that the Pyodide
run uses it too."""

from __future__ import annotations

import importlib.util
import math
import os
from typing import Any

import pyburn
import pyburn.onnx
from pyburn.backends import cpu, wgpu
from pyburn.onnx.codegen import convert
from pyburn.onnx.registry import index_dtype

from . import node_cases

#: the devices generated code is held to the runner on, where they run (the Pyodide run
#: names flex instead)
DEVICES = [name for name, backend in (("cpu", cpu), ("wgpu", wgpu))
           if backend.unavailable_reason() is None]
#: float32 rounding: what a layer computing an operator in another order may change
RTOL, ATOL = 1e-5, 1e-6


def generated(source: Any, folder: str | os.PathLike[str]) -> tuple[type, str]:
    """`source` (an ONNX path or bytes) converted into `folder` and imported: the generated
    Model class and its weights file."""
    code, weights = convert(source, folder, name="model")
    spec = importlib.util.spec_from_file_location("generated", code)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.Model, weights


def assert_same(source: Any, inputs: list[pyburn.Tensor], folder: str | os.PathLike[str],
                devices: list[str] = DEVICES) -> None:
    """`source` converted once into `folder`; on each of `devices` the generated module gives
    the runner's outputs on `inputs`."""
    model_class, weights = generated(source, folder)
    for dev in devices:
        args = [argument(x, dev) for x in inputs]
        want = outputs(pyburn.onnx.load(source, device=dev), args)
        why = difference(want, outputs(model_class.load(weights, device=dev), args))
        assert not why, f"{dev}: {why}"


def case_difference(folder: str, model_class: type, weights: str, device: str) -> str | None:
    """How the generated module (`model_class` with `weights`) differs from the runner on the
    node-suite case in `folder` on `device`: "" where it does not, None where the runner
    cannot load or run the case there (the node suite says why), else the difference or the
    generated code's error."""
    model = pyburn.onnx.read(os.path.join(folder, "model.onnx"))
    dev = pyburn.device(device)
    try:
        runner = pyburn.onnx.load(model, dev)
        feed = node_cases.inputs(folder, model, dev)
        args = [feed[name] for name in runner.input_names]
        want = outputs(runner, args)
    except Exception:  # noqa: BLE001 - nothing to compare with
        return None
    try:
        return difference(want, outputs(model_class.load(weights, dev), args))
    except Exception as exc:  # noqa: BLE001 - the message is the difference
        return f"{type(exc).__name__}: {exc}"


def argument(x: pyburn.Tensor, device: str) -> pyburn.Tensor:
    """`x` as a model input on `device`, int64 as the device's index dtype (token ids on a
    device without int64 are int32)."""
    return (x.cast(index_dtype(device)) if x.dtype is pyburn.int64 else x).to(device)


def outputs(model: Any, args: list[Any]) -> Any:
    """`model`'s outputs on `args`, its random numbers drawn from seed 0 (so that the runner
    and the generated module draw the same ones)."""
    pyburn.manual_seed(0)
    return model(*args)


def difference(want: Any, got: Any) -> str:
    """How the generated module's outputs `got` differ from the runner's `want`, "" when
    they do not."""
    return _differs("outputs", want, got)


def _differs(name: str, want: Any, got: Any) -> str:
    """Why `got` is not `want` (a tensor, a tuple or list of values, or None), "" when it is."""
    if isinstance(want, (tuple, list)):
        if type(got) is not type(want) or len(got) != len(want):
            return f"{name}: {type(got).__name__}, the runner gives {len(want)} values"
        return next((why for why in (_differs(f"{name}[{i}]", w, g)
                                     for i, (w, g) in enumerate(zip(want, got))) if why), "")
    if want is None or got is None:
        return "" if want is got else f"{name}: {got!r}, the runner gives {want!r}"
    if (got.dtype, got.shape) != (want.dtype, want.shape):
        return (f"{name}: {got.dtype.name} {got.shape}, the runner gives {want.dtype.name} "
                f"{want.shape}")
    pairs = list(zip(_flat(want.tolist()), _flat(got.tolist())))
    if not want.dtype.is_floating_point:
        return "" if all(w == g for w, g in pairs) else f"{name}: values differ"
    wrong = [abs(g - w) for w, g in pairs if not _close(w, g)]
    return f"{name}: values differ (max abs error {max(wrong):.3g})" if wrong else ""


def _close(want: float, got: float) -> bool:
    """`got` within `RTOL`/`ATOL` of `want`, NaN matching NaN."""
    return math.isclose(got, want, rel_tol=RTOL, abs_tol=ATOL) or (math.isnan(got)
                                                                    and math.isnan(want))


def _flat(value: Any) -> list[Any]:
    """A nested list's elements in order (a scalar as one)."""
    return [v for item in value for v in _flat(item)] if isinstance(value, list) else [value]
