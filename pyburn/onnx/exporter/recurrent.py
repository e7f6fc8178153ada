"""Module exporters for `pyburn.nn.LSTM`, `GRU` and `RNN`: one ONNX LSTM/GRU/RNN node per
layer, all directions in it.

The weights are re-stacked at export: ONNX orders an LSTM's gates i, o, f, c where PyTorch
(and pyburn) stack i, f, g, o, and a GRU's z, r, h where PyTorch stacks r, z, n; ONNX's GRU
with ``linear_before_reset=1`` is PyTorch's formulation. Between layers the output
(L, D, N, H) becomes the next layer's input (L, N, D * H). Layers with projections
(``proj_size``) have no ONNX form and are traced op by op (which unrolls the time loop).
"""

from __future__ import annotations

from typing import Any

from ... import nn
from ..._tensor import Tensor
from ...ops.movement import cat, stack
from .builder import Builder
from .layers import floating
from .registry import Plan, exports
from .trace import Event

#: pyburn mode -> (ONNX operator, gate blocks of pyburn's stacking in ONNX's order)
_ONNX = {"LSTM": ("LSTM", (0, 3, 1, 2)), "GRU": ("GRU", (1, 0, 2)),
         "RNN_TANH": ("RNN", (0,)), "RNN_RELU": ("RNN", (0,))}


@exports(nn.LSTM, nn.GRU, nn.RNN)
def _recurrent(m: Any, opset: int, input: Any, hx: Any = None) -> Plan | None:
    if m.proj_size or not floating(input, (2, 3)):
        return None
    states = (tuple(hx) if isinstance(hx, (tuple, list)) else (hx,)) if hx is not None else ()
    if not all(isinstance(s, Tensor) for s in states):
        return None
    if m.mode == "LSTM" and states and len(states) != 2:
        return None
    initial = states or ((None, None) if m.mode == "LSTM" else (None,))
    return Plan((input, *initial), _emit_recurrent, {"batched": input.ndim == 3})


def _gates(w: Tensor, order: tuple[int, ...]) -> Tensor:
    """`w`'s gate blocks (stacked along dim 0) in ONNX's `order`."""
    size = w.shape[0] // len(order)
    return cat([w.narrow(0, k * size, size) for k in order])


def _emit_recurrent(b: Builder, ev: Event, outs: list[str]) -> None:
    m = ev.module
    op, order = _ONNX[m.mode]
    batched = ev.ctx["batched"]
    directions = 2 if m.bidirectional else 1
    x = b.value(ev.inputs[0])
    if not batched:
        x = b.node("Unsqueeze", [x, b.ints([1], "axes")])
    elif m.batch_first:
        x = b.node("Transpose", [x], perm=[1, 0, 2])
    # initial states: (D * layers, N, H) rows, taken D at a time
    initial = []
    for ref in ev.inputs[1:]:
        state = None if ref is None else b.value(ref)
        if state is not None and not batched:
            state = b.node("Unsqueeze", [state, b.ints([1], "axes")])
        initial.append(state)
    finals: list[list[str]] = [[] for _ in initial]
    for layer in range(m.num_layers):
        suffixes = ["", "_reverse"][:directions]
        params = m._parameters
        names = [f"_l{layer}{s}" for s in suffixes]
        w = b.param(params["weight_ih" + names[0]], stack(
            [_gates(params["weight_ih" + n], order) for n in names]), "_onnx")
        r = b.param(params["weight_hh" + names[0]], stack(
            [_gates(params["weight_hh" + n], order) for n in names]), "_onnx")
        bias = ""
        if m.bias:
            bias = b.param(params["bias_ih" + names[0]], stack(
                [cat([_gates(params["bias_ih" + n], order), _gates(params["bias_hh" + n], order)])
                 for n in names]), "_onnx")
        rows = [""] * 2
        for k, state in enumerate(initial):
            if state is not None:
                rows[k] = b.node("Slice", [state, b.ints([layer * directions]),
                                           b.ints([(layer + 1) * directions]),
                                           b.ints([0], "axes")])
        attrs: dict[str, Any] = {"hidden_size": m.hidden_size,
                                 "direction": b"bidirectional" if directions == 2 else b"forward"}
        if op == "GRU":
            attrs["linear_before_reset"] = 1
        if op == "RNN":
            attrs["activations"] = [b"Tanh" if m.mode == "RNN_TANH" else b"Relu"] * directions
        y = b.fresh(op.lower())
        state_outs = [b.fresh(f"{op.lower()}_h")] + ([b.fresh(f"{op.lower()}_c")]
                                                     if op == "LSTM" else [])
        b.nodes_out(op, [x, w, r, bias, "", *rows[:len(initial)]], [y, *state_outs], **attrs)
        for k, s in enumerate(state_outs):
            finals[k].append(s)
        # (L, D, N, H) -> (L, N, D * H)
        if directions == 1:
            x = b.node("Squeeze", [y, b.ints([1], "axes")])
        else:
            x = b.node("Reshape", [b.node("Transpose", [y], perm=[0, 2, 1, 3]),
                                   b.ints([0, 0, -1], "shape")])
    if not batched:
        b.node("Squeeze", [x, b.ints([1], "axes")], outs[0])
    elif m.batch_first:
        b.node("Transpose", [x], outs[0], perm=[1, 0, 2])
    else:
        b.node("Identity", [x], outs[0])
    for k, parts in enumerate(finals):
        if batched:
            _join(b, parts, outs[1 + k])
        else:
            _join(b, [b.node("Squeeze", [p, b.ints([1], "axes")]) for p in parts],
                  outs[1 + k])


def _join(b: Builder, parts: list[str], out: str) -> None:
    if len(parts) == 1:
        b.node("Identity", parts, out)
    else:
        b.node("Concat", parts, out, axis=0)
