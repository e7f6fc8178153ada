"""``pyburn.onnx.export``: a `pyburn.nn.Module` as an ONNX file, by tracing its forward pass.

Tracing works at two levels. A call of a layer that has an exporter (`layers.py`,
`recurrent.py`, `quantized.py`: Linear, convolutions, norms, pooling, activations, Embedding,
LSTM/GRU/RNN, pyburn.quant's layers as QDQ, ...) becomes that layer's ONNX nodes, with its
parameters as initializers; every other tensor op the forward pass reaches is recorded as the
primitive it is (`primitives.py`).
Tensors made during the forward pass from Python values become constants; ops on constants
only are folded. The model runs in eval mode (dropout off, batch norm on running statistics)
and without autodiff recording; its training flags are restored afterwards.

With `dynamic_axes`, the forward pass is traced again with those axes resized (see
`dims.py`), so every size that follows them is computed at run time in the graph. Every
export traces at least twice: the second pass, on other input values, catches tensors that
an untraced operation computed from the inputs, which would otherwise be frozen into the
file as constants.

The exporter is not thread-safe with respect to the model: other threads may run pyburn, but
only the exporting thread's operations are traced.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from typing import Any

from ... import __version__
from ..._tensor import Tensor
from ...errors import ArgumentError
from ...nn.module import Module
from ...tape import no_grad
from .. import ir
from . import activations, layers, pooling, quantized, recurrent  # noqa: F401 - registers them
from .align import Axes, align, variant_inputs
from .builder import Builder
from .dims import Dim, SizePlan
from .primitives import EMITTERS
from .registry import Unsupported
from .trace import Trace, Tracer, key_of

__all__ = ["export", "to_model"]

#: the opsets the exporter writes
OPSETS = range(13, 23)
#: the oldest IR version that allows each opset (newer readers accept older IR)
_IR_VERSION = {13: 7, 14: 7, 15: 8, 16: 8, 17: 8, 18: 8, 19: 9, 20: 9, 21: 10, 22: 10}


def export(module: Module, example_inputs: Any, path: str | os.PathLike[str], *,
           opset: int = 17, input_names: Sequence[str] | None = None,
           output_names: Sequence[str] | None = None,
           dynamic_axes: Mapping[str, Any] | None = None) -> None:
    """Write `module` as an ONNX model to `path` (atomically), traced on `example_inputs`
    (a tensor or a tuple of tensors).

    `input_names` / `output_names` name the graph's inputs and outputs (default ``input``,
    ``output``, or ``input_0``, ``input_1``, ... when there are several). `dynamic_axes`
    maps an input or output name to the axes whose size may differ from the example's:
    ``{"input": {0: "batch"}}`` or ``{"input": [0]}`` (named ``input_dim0``); axes of
    several inputs with the same name have the same size. Anything that cannot be exported
    raises `pyburn.ArgumentError` naming it, before the file is touched.

    >>> import os, tempfile, pyburn
    >>> model = pyburn.nn.Sequential(pyburn.nn.Linear(4, 2, device="cpu"), pyburn.nn.ReLU())
    >>> path = os.path.join(tempfile.mkdtemp(), "model.onnx")
    >>> export(model, pyburn.ones(3, 4, device="cpu"), path, dynamic_axes={"input": [0]})
    >>> os.path.getsize(path) > 0
    True
    """
    # import time: the protobuf writer and pyburn.store (70 ms) load on the first export
    from ...store.atomic import atomic_write
    from ..proto import write_model

    model = to_model(module, example_inputs, opset=opset, input_names=input_names,
                     output_names=output_names, dynamic_axes=dynamic_axes)
    atomic_write(path, [write_model(model)])


def to_model(module: Module, example_inputs: Any, *, opset: int = 17,
             input_names: Sequence[str] | None = None,
             output_names: Sequence[str] | None = None,
             dynamic_axes: Mapping[str, Any] | None = None) -> ir.Model:
    """The `ir.Model` that `export` writes (same arguments, no path)."""
    if not isinstance(module, Module):
        raise ArgumentError(f"export takes a pyburn.nn.Module, got {type(module).__name__}")
    if isinstance(opset, bool) or opset not in OPSETS:
        raise ArgumentError(f"opset must be an int from {OPSETS.start} to {OPSETS.stop - 1}, "
                            f"got {opset!r}")
    inputs = _as_inputs(example_inputs)
    in_names = _names(input_names, len(inputs), "input")
    out_names: list[str] = []
    axes, symbols, labels = _dynamic_axes(dynamic_axes or {}, in_names, inputs)
    plan = SizePlan(tuple(symbols), tuple(symbols.values()))
    names = {key_of(t): name for name, t in [*module.named_parameters(),
                                           *module.named_buffers()] if t is not None}
    flags = [(m, m.training) for m in module.modules()]
    # recorded by autodiff: nothing (the inputs' variants, the traces, rearranged weights)
    with no_grad():
        module.eval()
        try:
            traces = []
            for k, sizes in enumerate(plan.traces):
                trace = Tracer(names, opset).run(module, inputs if k == 0 else
                                                 variant_inputs(inputs, axes, sizes))
                if k == 0:
                    out_names = _names(output_names, len(trace.outputs), "output")
                    _check_labels(labels, in_names, out_names, trace)
                    _check_supported(trace)
                traces.append(trace)
        finally:
            for m, training in flags:
                object.__setattr__(m, "training", training)
        graph = _graph(align(traces, plan), opset, names, in_names, out_names, list(symbols),
                       labels)
    return ir.Model(graph, {"": opset}, ir_version=_IR_VERSION[opset], producer_name="pyburn",
                    producer_version=__version__)


def _as_inputs(example_inputs: Any) -> list[Tensor]:
    inputs = [example_inputs] if isinstance(example_inputs, Tensor) else example_inputs
    if not isinstance(inputs, (tuple, list)) or not all(isinstance(t, Tensor) for t in inputs):
        raise ArgumentError("example_inputs must be a tensor or a tuple of tensors, got "
                            f"{type(example_inputs).__name__}")
    return list(inputs)


def _names(given: Sequence[str] | None, count: int, kind: str) -> list[str]:
    if given is None:
        return [kind] if count == 1 else [f"{kind}_{i}" for i in range(count)]
    given = list(given)
    if len(given) != count or not all(isinstance(n, str) and n for n in given) or \
            len(set(given)) != count:
        raise ArgumentError(f"{kind}_names must be {count} distinct non-empty strings (one per "
                            f"{kind}), got {given!r}")
    return given


def _dynamic_axes(spec: Mapping[str, Any], in_names: list[str], inputs: list[Tensor]
                  ) -> tuple[list[Axes], dict[str, int], dict[str, dict[int, str]]]:
    """Per input, its dynamic axes (axis -> symbol number); each symbol's name and size in
    the example; and every given label per input or output name (axis -> name)."""
    labels: dict[str, dict[int, str]] = {}
    for name, axes in spec.items():
        if isinstance(axes, Mapping):
            labels[name] = {a: str(n) for a, n in axes.items()}
        elif isinstance(axes, (list, tuple)):
            labels[name] = {a: f"{name}_dim{a}" for a in axes}
        else:
            raise ArgumentError(f"dynamic_axes[{name!r}] must be a dict axis -> name or a list "
                                f"of axes, got {type(axes).__name__}")
    symbols: dict[str, int] = {}
    per_input: list[Axes] = []
    for name, x in zip(in_names, inputs):
        dynamic: Axes = {}
        for axis, label in labels.get(name, {}).items():
            if isinstance(axis, bool) or not isinstance(axis, int) or not \
                    -x.ndim <= axis < x.ndim:
                raise ArgumentError(f"dynamic axis {axis!r} of input {name!r} is out of range "
                                    f"for its shape {x.shape}")
            axis %= x.ndim
            size = symbols.setdefault(label, x.shape[axis])
            if size != x.shape[axis]:
                raise ArgumentError(f"dynamic axis {label!r} has size {size} on one input and "
                                    f"{x.shape[axis]} on input {name!r}: axes with one name "
                                    "must have one size")
            if size == 0:
                raise ArgumentError(f"dynamic axis {label!r} of input {name!r} has size 0 in "
                                    "the example: give an example with at least one entry")
            dynamic[axis] = list(symbols).index(label)
        per_input.append(dynamic)
    return per_input, symbols, labels


def _check_labels(labels: dict[str, dict[int, str]], in_names: list[str],
                  out_names: list[str], trace: Trace) -> None:
    if set(out_names) & set(in_names):
        raise ArgumentError(f"names {sorted(set(out_names) & set(in_names))} are given to both "
                            "an input and an output")
    for name, axes in labels.items():
        if name in in_names:
            continue
        if name not in out_names:
            raise ArgumentError(f"dynamic_axes names {name!r}, which is neither an input "
                                f"({in_names}) nor an output ({out_names})")
        rank = len(trace.values[trace.outputs[out_names.index(name)]].shape)
        if any(isinstance(a, bool) or not isinstance(a, int) or not -rank <= a < rank
               for a in axes):
            raise ArgumentError(f"dynamic_axes[{name!r}] has an axis out of range for an "
                                f"output of rank {rank}: {list(axes)}")


def _needed(trace: Trace) -> list[bool]:
    """Which events the outputs depend on."""
    live = set(trace.outputs)
    needed = [False] * len(trace.events)
    for i in reversed(range(len(trace.events))):
        ev = trace.events[i]
        if any(r in live for r in ev.outputs):
            needed[i] = True
            live.update(r for r in ev.inputs if r is not None)
    return needed


def _check_supported(trace: Trace) -> None:
    """One ArgumentError listing every traced primitive that has no ONNX form."""
    missing: dict[str, int] = {}
    for ev, needed in zip(trace.events, _needed(trace)):
        if needed and ev.kind == "op" and ev.name not in EMITTERS:
            missing[ev.name] = missing.get(ev.name, 0) + 1
    if missing:
        listed = ", ".join(f"{name} (x{count})" for name, count in sorted(missing.items()))
        raise ArgumentError(f"cannot export to ONNX: no ONNX form for the operations {listed}")


def _graph(trace: Trace, opset: int, params: dict[tuple, str], in_names: list[str],
           out_names: list[str], symbols: list[str], labels: dict[str, dict[int, str]]
           ) -> ir.Graph:
    b = Builder(trace, opset, params)
    for ref, name in zip(trace.inputs, in_names):
        b.claim(ref, name)
    copies = []  # outputs that are not an op's own result: an Identity node each
    for ref, name in zip(trace.outputs, out_names):
        if trace.values[ref].kind == "op" and not b.is_named(ref):
            b.claim(ref, name)
        else:
            b.reserve(name)
            copies.append((ref, name))
    problems: list[str] = []
    for ev, needed in zip(trace.events, _needed(trace)):
        if not needed:
            continue
        hint = ev.name.split(":")[-1] if ev.kind == "op" else ev.name.lower()
        outs = ["" if r is None else b.name(r, hint) for r in ev.outputs]
        try:
            (EMITTERS[ev.name] if ev.kind == "op" else ev.emit)(b, ev, outs)
        except Unsupported as e:
            if str(e) not in problems:
                problems.append(str(e))
    if problems:
        raise ArgumentError("cannot export to ONNX: " + "; ".join(problems))
    for ref, name in copies:
        b.node("Identity", [b.value(ref)], name)
    b.prune(out_names)

    def info(ref: int, name: str) -> ir.ValueInfo:
        v = trace.values[ref]
        given = {a % len(v.dims): n for a, n in labels.get(name, {}).items()}
        return ir.ValueInfo(name, v.dtype.name, tuple(
            given.get(a, _label(d, symbols)) for a, d in enumerate(v.dims)))

    return ir.Graph(b.nodes, [info(r, n) for r, n in zip(trace.inputs, in_names)],
                    [info(r, n) for r, n in zip(trace.outputs, out_names)], b.initializers,
                    name="pyburn")


def _label(d: Dim, symbols: list[str]) -> int | str | None:
    """How a value_info shows a size: an int, a dynamic axis's name, or unknown (None)."""
    if d.is_static:
        return d.const
    if d.const == 0 and len(d.terms) == 1 and len(d.terms[0][0]) == 1 and d.terms[0][1] == 1:
        return symbols[d.terms[0][0][0]]
    return None
