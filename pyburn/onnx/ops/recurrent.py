"""Recurrent layers: RNN, GRU and LSTM, every direction, layout, activation list, clip,
sequence_lens, initial state, GRU's linear_before_reset and LSTM's peepholes and
input_forget.

One loop serves all three: the input projection of every time step is one matmul up front,
then each step adds the recurrent projection and applies the cell. Sequences shorter than
the input (sequence_lens) keep their state past their end and output zeros there; the
reverse direction of a short sequence starts at its own last element.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from ... import Tensor, stack, where, zeros
from ...nn import functional as F
from ..registry import check, onnx_op

Activation = Callable[[Tensor], Tensor]


def _activation(name: str, alpha: float | None, beta: float | None, op: str) -> Activation:
    """ONNX's named activation with its alpha/beta (None: the activation's default)."""
    key = name.lower()

    def a(default: float) -> float:
        return default if alpha is None else alpha

    def b(default: float) -> float:
        return default if beta is None else beta

    table: dict[str, Activation] = {
        "relu": F.relu,
        "tanh": lambda x: x.tanh(),
        "sigmoid": lambda x: x.sigmoid(),
        "affine": lambda x: x * a(1.0) + b(0.0),
        "leakyrelu": lambda x: F.leaky_relu(x, a(0.01)),
        "thresholdedrelu": lambda x: where(x > a(1.0), x, 0.0),
        "scaledtanh": lambda x: (x * b(1.0)).tanh() * a(1.0),
        "hardsigmoid": lambda x: (x * a(0.2) + b(0.5)).clamp(0.0, 1.0),
        "elu": lambda x: F.elu(x, a(1.0)),
        "softsign": F.softsign,
        "softplus": F.softplus,
    }
    check(key in table, f"{op}: unknown activation {name!r}")
    return table[key]


_USES_ALPHA = {"affine", "leakyrelu", "thresholdedrelu", "scaledtanh", "hardsigmoid", "elu"}
_USES_BETA = {"affine", "scaledtanh", "hardsigmoid"}


def _activations(names: Sequence[str] | None, defaults: list[str], directions: int,
                 alphas: Sequence[float] | None, betas: Sequence[float] | None,
                 op: str) -> list[list[Activation]]:
    """Per direction, the cell's activations; alpha and beta values are consumed in order by
    the activations that take them."""
    per_dir = len(defaults)
    listed = list(names) if names else defaults * directions
    if len(listed) == per_dir and directions == 2:
        listed = listed * 2
    check(len(listed) == per_dir * directions,
          f"{op}: activations must name {per_dir * directions} functions ({per_dir} per "
          f"direction), got {listed}")
    alpha_left, beta_left = list(alphas or []), list(betas or [])
    made = []
    for name in listed:
        key = name.lower()
        alpha = alpha_left.pop(0) if key in _USES_ALPHA and alpha_left else None
        beta = beta_left.pop(0) if key in _USES_BETA and beta_left else None
        made.append(_activation(name, alpha, beta, op))
    return [made[d * per_dir:(d + 1) * per_dir] for d in range(directions)]


@dataclass
class _Cell:
    """One direction's weights: W (G*H, I), R (G*H, H), the two biases and peepholes."""

    w: Tensor
    r: Tensor
    wb: Tensor | None
    rb: Tensor | None
    peephole: Tensor | None
    acts: list[Activation]


def _clipped(clip: float | None) -> Callable[[Tensor], Tensor]:
    if clip is None:
        return lambda t: t
    return lambda t: t.clamp(-clip, clip)


def _run_direction(kind: str, cell: _Cell, xs: Tensor, h: Tensor, c: Tensor | None,
                   valid: list[Tensor] | None, reverse: bool, clip: float | None,
                   linear_before_reset: int, input_forget: int, hidden: int):
    """The outputs (in time order) and final states of one direction."""
    bound = _clipped(clip)
    projected = xs @ cell.w.mT  # (T, B, G*H): every step's input projection at once
    if cell.wb is not None:
        projected = projected + cell.wb
    steps = range(xs.shape[0] - 1, -1, -1) if reverse else range(xs.shape[0])
    outputs: list[Tensor | None] = [None] * xs.shape[0]
    f = cell.acts[0]
    for t in steps:
        gx = projected[t]
        if kind == "GRU":
            gx_zr, gx_h = gx[:, :2 * hidden], gx[:, 2 * hidden:]
            rec = h @ cell.r.mT[:, :2 * hidden]
            if cell.rb is not None:
                rec = rec + cell.rb[:2 * hidden]
            zr = f(bound(gx_zr + rec))
            z, r = zr[:, :hidden], zr[:, hidden:]
            r_h, rb_h = cell.r[2 * hidden:], None if cell.rb is None else cell.rb[2 * hidden:]
            if linear_before_reset:
                rec_h = h @ r_h.mT
                if rb_h is not None:
                    rec_h = rec_h + rb_h
                candidate = cell.acts[1](bound(gx_h + r * rec_h))
            else:
                rec_h = (r * h) @ r_h.mT
                if rb_h is not None:
                    rec_h = rec_h + rb_h
                candidate = cell.acts[1](bound(gx_h + rec_h))
            h_new, c_new = (1.0 - z) * candidate + z * h, None
        else:
            gates = gx + h @ cell.r.mT
            if cell.rb is not None:
                gates = gates + cell.rb
            if kind == "RNN":
                h_new, c_new = f(bound(gates)), None
            else:
                h_new, c_new = _lstm_step(cell, gates, c, bound, input_forget, hidden)
        if valid is None:
            h, c, outputs[t] = h_new, c_new, h_new
        else:
            keep = valid[t]
            h = where(keep, h_new, h)
            if c is not None:
                c = where(keep, c_new, c)
            outputs[t] = where(keep, h_new, 0.0)
    return outputs, h, c


def _lstm_step(cell: _Cell, gates: Tensor, c: Tensor, bound: Callable[[Tensor], Tensor],
               input_forget: int, hidden: int) -> tuple[Tensor, Tensor]:
    """One LSTM step from the summed gate inputs (i, o, f, c order): the new h and c."""
    gate, cell_input, output = cell.acts  # ONNX's f, g and h
    gi, go, gf, gc = (gates[:, k * hidden:(k + 1) * hidden] for k in range(4))
    if cell.peephole is not None:
        p_i, p_o, p_f = (cell.peephole[k * hidden:(k + 1) * hidden] for k in range(3))
        gi, gf = gi + p_i * c, gf + p_f * c
    i = gate(bound(gi))
    forget = 1.0 - i if input_forget else gate(bound(gf))
    c_new = forget * c + i * cell_input(bound(gc))
    if cell.peephole is not None:
        go = go + p_o * c_new
    return gate(bound(go)) * output(c_new), c_new


_GATES = {"RNN": 1, "GRU": 3, "LSTM": 4}
_DEFAULT_ACTS = {"RNN": ["Tanh"], "GRU": ["Sigmoid", "Tanh"], "LSTM": ["Sigmoid", "Tanh", "Tanh"]}


def _recurrent(kind: str, x: Tensor, w: Tensor, r: Tensor, b: Tensor | None,
               sequence_lens: Tensor | None, initial_h: Tensor | None,
               initial_c: Tensor | None, p: Tensor | None, *,
               activation_alpha: list[float] | None, activation_beta: list[float] | None,
               activations: list[str] | None, clip: float | None, direction: str,
               hidden_size: int | None, layout: int, linear_before_reset: int = 0,
               input_forget: int = 0) -> tuple:
    op = kind
    check(direction in ("forward", "reverse", "bidirectional"),
          f"{op}: direction must be forward, reverse or bidirectional, got {direction!r}")
    directions = 2 if direction == "bidirectional" else 1
    check(x.ndim == 3, f"{op}: X must be 3-d, got shape {x.shape}")
    if layout:  # batch-major in and out
        x = x.transpose(0, 1)
        initial_h = None if initial_h is None else initial_h.transpose(0, 1)
        initial_c = None if initial_c is None else initial_c.transpose(0, 1)
    steps, batch = x.shape[:2]
    gates = _GATES[kind]
    hidden = r.shape[-1]
    check(w.shape[0] == directions and w.shape[1] == gates * hidden and
          r.shape == (directions, gates * hidden, hidden) and
          (hidden_size is None or hidden_size == hidden),
          f"{op}: W {w.shape} and R {r.shape} do not fit direction={direction!r}, "
          f"hidden_size={hidden_size} and X {x.shape}")
    acts = _activations(activations, _DEFAULT_ACTS[kind], directions, activation_alpha,
                        activation_beta, op)
    valid = None
    if sequence_lens is not None:
        lengths = sequence_lens.reshape(batch, 1)
        valid = [lengths > t for t in range(steps)]
    ys, hs, cs = [], [], []
    for d in range(directions):
        cell = _Cell(w[d], r[d], None if b is None else b[d, :gates * hidden],
                     None if b is None else b[d, gates * hidden:],
                     None if p is None else p[d], acts[d])
        h = initial_h[d] if initial_h is not None else zeros(batch, hidden, dtype=x.dtype,
                                                               device=x.device)
        c = None
        if kind == "LSTM":
            c = initial_c[d] if initial_c is not None else zeros(batch, hidden, dtype=x.dtype,
                                                                   device=x.device)
        reverse = direction == "reverse" or d == 1
        outs, h, c = _run_direction(kind, cell, x, h, c, valid, reverse, clip,
                                    linear_before_reset, input_forget, hidden)
        ys.append(stack(outs, 0))
        hs.append(h)
        cs.append(c)
    y = stack(ys, 1)  # (T, D, B, H)
    y_h = stack(hs, 0)  # (D, B, H)
    y_c = stack(cs, 0) if kind == "LSTM" else None
    if layout:
        y = y.permute(2, 0, 1, 3)
        y_h = y_h.transpose(0, 1)
        y_c = None if y_c is None else y_c.transpose(0, 1)
    return (y, y_h, y_c) if kind == "LSTM" else (y, y_h)


@onnx_op("RNN", since=1)
def rnn(x: Tensor, w: Tensor, r: Tensor, b: Tensor | None = None,
        sequence_lens: Tensor | None = None, initial_h: Tensor | None = None, *,
        activation_alpha: list[float] | None = None, activation_beta: list[float] | None = None,
        activations: list[str] | None = None, clip: float | None = None,
        direction: str = "forward", hidden_size: int | None = None, layout: int = 0,
        output_sequence: int = 0) -> tuple[Tensor, Tensor]:
    """RNN: ``H_t = f(X_t W^T + H_{t-1} R^T + Wb + Rb)`` (f Tanh by default): (Y, Y_h).
    Opset 1's output_sequence is accepted and ignored (Y is always produced)."""
    del output_sequence
    return _recurrent("RNN", x, w, r, b, sequence_lens, initial_h, None, None,
                      activation_alpha=activation_alpha, activation_beta=activation_beta,
                      activations=activations, clip=clip, direction=direction,
                      hidden_size=hidden_size, layout=layout)


@onnx_op("GRU", since=1)
def gru(x: Tensor, w: Tensor, r: Tensor, b: Tensor | None = None,
        sequence_lens: Tensor | None = None, initial_h: Tensor | None = None, *,
        activation_alpha: list[float] | None = None, activation_beta: list[float] | None = None,
        activations: list[str] | None = None, clip: float | None = None,
        direction: str = "forward", hidden_size: int | None = None, layout: int = 0,
        linear_before_reset: int = 0, output_sequence: int = 0) -> tuple[Tensor, Tensor]:
    """GRU (gates z, r, h): ``H_t = (1 - z) * h~ + z * H_{t-1}``, with the reset gate applied
    before the recurrent projection of h~, or after it with linear_before_reset: (Y, Y_h).
    Opset 1's output_sequence is accepted and ignored."""
    del output_sequence
    return _recurrent("GRU", x, w, r, b, sequence_lens, initial_h, None, None,
                      activation_alpha=activation_alpha, activation_beta=activation_beta,
                      activations=activations, clip=clip, direction=direction,
                      hidden_size=hidden_size, layout=layout,
                      linear_before_reset=linear_before_reset)


@onnx_op("LSTM", since=1)
def lstm(x: Tensor, w: Tensor, r: Tensor, b: Tensor | None = None,
         sequence_lens: Tensor | None = None, initial_h: Tensor | None = None,
         initial_c: Tensor | None = None, p: Tensor | None = None, *,
         activation_alpha: list[float] | None = None,
         activation_beta: list[float] | None = None, activations: list[str] | None = None,
         clip: float | None = None, direction: str = "forward",
         hidden_size: int | None = None, input_forget: int = 0, layout: int = 0,
         output_sequence: int = 0) -> tuple[Tensor, Tensor, Tensor]:
    """LSTM (gates i, o, f, c; peepholes P = (Pi, Po, Pf)): (Y, Y_h, Y_c); input_forget
    couples the forget gate to 1 - i. Opset 1's output_sequence is accepted and ignored."""
    del output_sequence
    return _recurrent("LSTM", x, w, r, b, sequence_lens, initial_h, initial_c, p,
                      activation_alpha=activation_alpha, activation_beta=activation_beta,
                      activations=activations, clip=clip, direction=direction,
                      hidden_size=hidden_size, layout=layout, input_forget=input_forget)
