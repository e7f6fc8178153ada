"""Recurrent layers with PyTorch's API and weight layout: `RNN` (tanh or relu), `LSTM` (with
optional projections) and `GRU`, and their one-step forms `RNNCell`, `LSTMCell`, `GRUCell`.

Parameters are named and shaped as in PyTorch (``weight_ih_l0``, ``weight_hh_l1_reverse``,
``bias_ih_l0``, ``weight_hr_l0``; gate rows stacked in PyTorch's order: LSTM ``i, f, g, o``,
GRU ``r, z, n``), so a PyTorch state_dict loads unchanged; all are initialised from
U(-1/sqrt(hidden_size), 1/sqrt(hidden_size)), as PyTorch does.

The time loop is written for the number of recorded ops, not for brevity: the input
projection of a whole sequence is one matmul up front (every step's ``x_t @ W_ih^T + b``
at once), and each step then does one matmul with the hidden state for all gates together,
slicing the gates out of the result. Everything is made of public tensor ops, so the layers
run on every device and differentiate on an autodiff device (backpropagation through time is
just the recorded loop).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from .._tensor import Tensor
from ..errors import ArgumentError, ShapeError
from ..ops.creation import zeros
from ..ops.movement import cat, stack
from . import functional as F
from . import init
from .module import Module
from .parameter import empty_parameter

#: a recurrent state: (h,) for RNN and GRU, (h, c) for LSTM
State = tuple[Tensor, ...]


@dataclass(frozen=True)
class _Weights:
    """One layer's weights in one direction, arranged for the time loop: `w_ih`/`b_in` make
    the input projection (for RNN and LSTM `b_in` also carries ``bias_hh``, which they only
    ever add to it), `w_hh_t` is ``weight_hh`` transposed once per call instead of once per
    step, `b_hh` is the hidden bias a GRU needs apart (its n gate multiplies it by r), and
    `w_hr_t` an LSTM's projection, transposed."""

    w_ih: Tensor
    b_in: Tensor | None
    w_hh_t: Tensor
    b_hh: Tensor | None
    w_hr_t: Tensor | None


def _hidden(h: Tensor, w: _Weights) -> Tensor:
    """The hidden-state contribution to every gate: one matmul."""
    out = h @ w.w_hh_t
    return out if w.b_hh is None else out + w.b_hh


def _tanh_step(gx: Tensor, state: State, w: _Weights) -> State:
    return ((gx + _hidden(state[0], w)).tanh(),)


def _relu_step(gx: Tensor, state: State, w: _Weights) -> State:
    return (F.relu(gx + _hidden(state[0], w)),)


def _lstm_step(gx: Tensor, state: State, w: _Weights) -> State:
    h, c = state
    size = c.shape[-1]
    gates = gx + _hidden(h, w)
    # one sigmoid over all four gates (g's share is unused) records fewer ops than three
    gate = gates.sigmoid()
    i, f, o = (gate.narrow(-1, k * size, size) for k in (0, 1, 3))
    c = f * c + i * gates.narrow(-1, 2 * size, size).tanh()
    h = o * c.tanh()
    return (h if w.w_hr_t is None else h @ w.w_hr_t), c


def _gru_step(gx: Tensor, state: State, w: _Weights) -> State:
    h = state[0]
    size = h.shape[-1]
    gh = _hidden(h, w)
    # r and z with one add and one sigmoid; n needs r first
    rz = (gx.narrow(-1, 0, 2 * size) + gh.narrow(-1, 0, 2 * size)).sigmoid()
    r, z = rz.narrow(-1, 0, size), rz.narrow(-1, size, size)
    n = (gx.narrow(-1, 2 * size, size) + r * gh.narrow(-1, 2 * size, size)).tanh()
    return (n + z * (h - n),)  # (1 - z) * n + z * h, one op fewer


Step = Callable[[Tensor, State, _Weights], State]

#: mode -> (gates stacked in the weights, the step)
_MODES: dict[str, tuple[int, Step]] = {
    "RNN_TANH": (1, _tanh_step),
    "RNN_RELU": (1, _relu_step),
    "LSTM": (4, _lstm_step),
    "GRU": (3, _gru_step),
}


def _rnn_mode(nonlinearity: str) -> str:
    if nonlinearity not in ("tanh", "relu"):
        raise ArgumentError(f"RNN nonlinearity must be 'tanh' or 'relu', got {nonlinearity!r}")
    return "RNN_TANH" if nonlinearity == "tanh" else "RNN_RELU"


def _check_size(value: Any, name: str, owner: str, minimum: int = 1) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise ArgumentError(f"{owner}: {name} must be an int >= {minimum}, got {value!r}")
    return value


def _arrange(mode: str, w_ih: Tensor, w_hh: Tensor, b_ih: Tensor | None, b_hh: Tensor | None,
             w_hr: Tensor | None) -> _Weights:
    if mode == "GRU" or b_ih is None:
        b_in, b_rest = b_ih, b_hh
    else:
        b_in, b_rest = b_ih + b_hh, None
    return _Weights(w_ih, b_in, w_hh.mT, b_rest, None if w_hr is None else w_hr.mT)


def _project(x: Tensor, w: Tensor, b: Tensor | None) -> Tensor:
    """``x @ w^T + b`` for x (L, N, I) as one 2-d matmul: (L, N, gates * H)."""
    length, batch, features = x.shape
    out = x.reshape(length * batch, features) @ w.mT
    if b is not None:
        out = out + b
    return out.reshape(length, batch, w.shape[0])


def _steps(x: Tensor) -> list[Tensor]:
    """x (L, ...) as the L tensors x[0], ..., x[L-1], cut by repeated halving.

    The gradient of a slice is padded back to the shape of what it was cut from, so cutting
    all L steps from x directly would make backpropagation through time cost L full-size
    tensors (quadratic in L); halving makes it log2(L) full sizes."""
    length = x.shape[0]
    if length == 1:
        return [x.squeeze(0)]
    middle = length // 2
    return _steps(x[:middle]) + _steps(x[middle:])


def _run(step: Step, gx: Tensor, state: State, w: _Weights, reverse: bool) -> tuple[Tensor, State]:
    """The time loop over gx (L, N, G): the outputs (L, N, H) in time order and the final
    state. A reverse direction walks from the last step to the first."""
    inputs = _steps(gx)
    outputs = []
    for x in (reversed(inputs) if reverse else inputs):
        state = step(x, state, w)
        outputs.append(state[0])
    if reverse:
        outputs.reverse()
    return stack(outputs), state


def _reset_uniform(module: Module) -> None:
    """PyTorch's init of recurrent weights: all from U(-1/sqrt(H), 1/sqrt(H))."""
    bound = 1.0 / math.sqrt(module.hidden_size)
    for p in module.parameters():
        init.uniform_(p, -bound, bound)


class _RNNBase(Module):
    """What RNN, LSTM and GRU share: the parameters, the initialisation and the layered,
    optionally bidirectional loop."""

    def __init__(self, mode: str, input_size: int, hidden_size: int, num_layers: int = 1,
                 bias: bool = True, batch_first: bool = False, dropout: float = 0.0,
                 bidirectional: bool = False, proj_size: int = 0, device: Any = None,
                 dtype: Any = None):
        super().__init__()
        owner = type(self).__name__
        _check_size(input_size, "input_size", owner)
        _check_size(hidden_size, "hidden_size", owner)
        _check_size(num_layers, "num_layers", owner)
        _check_size(proj_size, "proj_size", owner, minimum=0)
        if isinstance(dropout, bool) or not isinstance(dropout, (int, float)) or \
                not 0.0 <= dropout <= 1.0:
            raise ArgumentError(f"{owner}: dropout must be a probability in [0, 1], got "
                                f"{dropout!r}")
        if proj_size >= hidden_size:
            raise ArgumentError(f"{owner}: proj_size ({proj_size}) must be smaller than "
                                f"hidden_size ({hidden_size})")
        self.mode = mode
        self.input_size = input_size
        self.hidden_size = hidden_size
        self.num_layers = num_layers
        self.bias = bias
        self.batch_first = batch_first
        self.dropout = float(dropout)
        self.bidirectional = bidirectional
        self.proj_size = proj_size
        gates = _MODES[mode][0] * hidden_size
        directions = 2 if bidirectional else 1
        out_size = proj_size or hidden_size
        # registration order is PyTorch's: per layer, per direction, ih, hh, biases, hr
        for layer in range(num_layers):
            layer_input = input_size if layer == 0 else out_size * directions
            for suffix in ("", "_reverse")[:directions]:
                shapes = {"weight_ih": (gates, layer_input), "weight_hh": (gates, out_size)}
                if bias:
                    shapes.update(bias_ih=(gates,), bias_hh=(gates,))
                if proj_size:
                    shapes["weight_hr"] = (proj_size, hidden_size)
                for name, shape in shapes.items():
                    setattr(self, f"{name}_l{layer}{suffix}", empty_parameter(shape, device, dtype))
        self.reset_parameters()

    def reset_parameters(self) -> None:
        """Every weight and bias from U(-1/sqrt(hidden_size), 1/sqrt(hidden_size))."""
        _reset_uniform(self)

    def flatten_parameters(self) -> None:
        """Nothing to do: PyTorch packs its weights into one buffer for cuDNN here; pyburn's
        layers use them as they are. Kept so that PyTorch code runs unchanged."""

    @property
    def all_weights(self) -> list[list[Tensor]]:
        """The parameters of each (layer, direction), in registration order."""
        params = list(self.parameters())
        per = len(params) // (self.num_layers * (2 if self.bidirectional else 1))
        return [params[i:i + per] for i in range(0, len(params), per)]

    def _weights(self, layer: int, reverse: bool) -> _Weights:
        suffix = f"_l{layer}" + ("_reverse" if reverse else "")
        params = self._parameters
        biases = ((params["bias_ih" + suffix], params["bias_hh" + suffix]) if self.bias
                  else (None, None))
        w_hr = params["weight_hr" + suffix] if self.proj_size else None
        return _arrange(self.mode, params["weight_ih" + suffix], params["weight_hh" + suffix],
                        *biases, w_hr)

    def _initial(self, x: Tensor, hx: Any, input: Tensor) -> State:
        """The initial state for the time-major batched x, (D * num_layers, N, H) each:
        `hx` (for `input`) checked, or zeros."""
        batched = input.ndim == 3
        rows = self.num_layers * (2 if self.bidirectional else 1)
        batch = x.shape[1]
        sizes = [self.proj_size or self.hidden_size]
        names = ["h0"]
        if self.mode == "LSTM":
            sizes.append(self.hidden_size)
            names.append("c0")
            if hx is not None and (not isinstance(hx, (tuple, list)) or len(hx) != 2):
                raise ArgumentError("LSTM takes its initial state as a tuple (h0, c0)")
        elif hx is not None:
            hx = (hx,)
        if hx is None:
            return tuple(zeros(rows, batch, size, dtype=x.dtype, device=x.device)
                         for size in sizes)
        state = []
        for t, size, name in zip(hx, sizes, names):
            want = (rows, batch, size) if batched else (rows, size)
            if not isinstance(t, Tensor) or t.shape != want:
                raise ShapeError(f"{type(self).__name__}: {name} must have shape {want} for "
                                 f"input shape {input.shape}, got "
                                 f"{getattr(t, 'shape', t)}")
            state.append(t if batched else t.unsqueeze(1))
        return tuple(state)

    def forward(self, input: Tensor, hx: Any = None) -> tuple[Tensor, Any]:
        """Run the layers over a sequence.

        `input` is (L, N, input_size), (N, L, input_size) with ``batch_first``, or unbatched
        (L, input_size). `hx` is the initial state (zeros by default): h0, or ``(h0, c0)`` for
        an LSTM, each (D * num_layers, N, H) (D = 2 if bidirectional; no batch dim for an
        unbatched input; ``batch_first`` does not apply to it). Returns ``(output, h_n)``
        (``(output, (h_n, c_n))`` for an LSTM): the last layer's hidden state at every step,
        (L, N, D * H) laid out like `input`, and the final state of every layer and
        direction, ordered layer 0 forward, layer 0 reverse, layer 1 forward, ...
        """
        owner = type(self).__name__
        if not isinstance(input, Tensor) or input.ndim not in (2, 3):
            raise ShapeError(f"{owner}: input must be (L, N, input_size), (N, L, input_size) "
                             f"with batch_first, or unbatched (L, input_size), got "
                             f"{getattr(input, 'shape', input)}")
        if input.shape[-1] != self.input_size:
            raise ShapeError(f"{owner}: input shape {input.shape} does not end in input_size "
                             f"{self.input_size}")
        batched = input.ndim == 3
        if not batched:
            x = input.unsqueeze(1)
        else:
            x = input.transpose(0, 1) if self.batch_first else input
        if x.shape[0] == 0:
            raise ShapeError(f"{owner}: the sequence (input shape {input.shape}) is empty")
        initial = self._initial(x, hx, input)
        count, step = self.num_layers, _MODES[self.mode][1]
        directions = (False, True) if self.bidirectional else (False,)
        finals: list[State] = []
        for layer in range(count):
            outputs = []
            for reverse in directions:
                row = layer * len(directions) + int(reverse)
                w = self._weights(layer, reverse)
                out, state = _run(step, _project(x, w.w_ih, w.b_in),
                                  tuple(s[row] for s in initial), w, reverse)
                outputs.append(out)
                finals.append(state)
            x = outputs[0] if len(outputs) == 1 else cat(outputs, -1)
            if layer < count - 1:
                x = F.dropout(x, self.dropout, self.training)
        final = tuple(stack([s[k] for s in finals]) for k in range(len(initial)))
        if not batched:
            x, final = x.squeeze(1), tuple(s.squeeze(1) for s in final)
        elif self.batch_first:
            x = x.transpose(0, 1)
        return x, (final if self.mode == "LSTM" else final[0])

    def extra_repr(self) -> str:
        # PyTorch's text: the sizes, then each setting that differs from its default
        text = f"{self.input_size}, {self.hidden_size}"
        for name, default in (("proj_size", 0), ("num_layers", 1), ("bias", True),
                              ("batch_first", False), ("dropout", 0.0), ("bidirectional", False)):
            value = getattr(self, name)
            if value != default:
                text += f", {name}={value}"
        return text


class RNN(_RNNBase):
    """Elman RNN: ``h_t = act(x_t @ W_ih^T + b_ih + h_{t-1} @ W_hh^T + b_hh)`` with act tanh
    or relu, stacked `num_layers` deep. See `forward` for shapes.

    >>> import pyburn
    >>> rnn = pyburn.nn.RNN(3, 5, num_layers=2, device="flex")
    >>> out, h_n = rnn(pyburn.ones(7, 2, 3, device="flex"))
    >>> out.shape, h_n.shape
    ((7, 2, 5), (2, 2, 5))
    """

    def __init__(self, input_size: int, hidden_size: int, num_layers: int = 1,
                 nonlinearity: str = "tanh", bias: bool = True, batch_first: bool = False,
                 dropout: float = 0.0, bidirectional: bool = False, device: Any = None,
                 dtype: Any = None):
        super().__init__(_rnn_mode(nonlinearity), input_size, hidden_size, num_layers, bias,
                         batch_first, dropout, bidirectional, device=device, dtype=dtype)
        self.nonlinearity = nonlinearity


class LSTM(_RNNBase):
    """Long short-term memory, PyTorch's formulation (gate rows i, f, g, o)::

        i, f, g, o = sigmoid, sigmoid, tanh, sigmoid of x_t @ W_ih^T + b_ih + h @ W_hh^T + b_hh
        c_t = f * c_{t-1} + i * g;   h_t = o * tanh(c_t)   (then h_t @ W_hr^T if proj_size)

    Returns ``(output, (h_n, c_n))``; with `proj_size` > 0 the hidden state and output have
    proj_size features (c keeps hidden_size).

    >>> import pyburn
    >>> lstm = pyburn.nn.LSTM(3, 4, batch_first=True, bidirectional=True, device="flex")
    >>> out, (h_n, c_n) = lstm(pyburn.ones(2, 6, 3, device="flex"))
    >>> out.shape, h_n.shape, c_n.shape
    ((2, 6, 8), (2, 2, 4), (2, 2, 4))
    """

    def __init__(self, input_size: int, hidden_size: int, num_layers: int = 1, bias: bool = True,
                 batch_first: bool = False, dropout: float = 0.0, bidirectional: bool = False,
                 proj_size: int = 0, device: Any = None, dtype: Any = None):
        super().__init__("LSTM", input_size, hidden_size, num_layers, bias, batch_first, dropout,
                         bidirectional, proj_size, device, dtype)


class GRU(_RNNBase):
    """Gated recurrent unit, PyTorch's formulation (gate rows r, z, n)::

        r = sigmoid(x W_ir^T + b_ir + h W_hr^T + b_hr);  z likewise with W_iz, W_hz
        n = tanh(x W_in^T + b_in + r * (h W_hn^T + b_hn));  h_t = (1 - z) * n + z * h_{t-1}

    >>> import pyburn
    >>> gru = pyburn.nn.GRU(3, 4, device="flex")
    >>> out, h_n = gru(pyburn.ones(5, 3, device="flex"))   # unbatched (L, input_size)
    >>> out.shape, h_n.shape
    ((5, 4), (1, 4))
    """

    def __init__(self, input_size: int, hidden_size: int, num_layers: int = 1, bias: bool = True,
                 batch_first: bool = False, dropout: float = 0.0, bidirectional: bool = False,
                 device: Any = None, dtype: Any = None):
        super().__init__("GRU", input_size, hidden_size, num_layers, bias, batch_first, dropout,
                         bidirectional, device=device, dtype=dtype)


class _CellBase(Module):
    """One time step of a recurrent layer: parameters ``weight_ih`` (G*H, input_size),
    ``weight_hh`` (G*H, H), ``bias_ih`` and ``bias_hh`` (G*H,), initialised as the layers."""

    def __init__(self, mode: str, input_size: int, hidden_size: int, bias: bool, device: Any,
                 dtype: Any):
        super().__init__()
        owner = type(self).__name__
        self.mode = mode
        self.input_size = _check_size(input_size, "input_size", owner)
        self.hidden_size = _check_size(hidden_size, "hidden_size", owner)
        self.bias = bias
        gates = _MODES[mode][0] * hidden_size
        self.weight_ih = empty_parameter((gates, input_size), device, dtype)
        self.weight_hh = empty_parameter((gates, hidden_size), device, dtype)
        for name in ("bias_ih", "bias_hh"):
            self.register_parameter(name, empty_parameter((gates,), device, dtype)
                                    if bias else None)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        """Every weight and bias from U(-1/sqrt(hidden_size), 1/sqrt(hidden_size))."""
        _reset_uniform(self)

    def _step(self, input: Tensor, hx: Any) -> tuple[State, bool]:
        """The new state, batched, and whether the input was batched."""
        owner = type(self).__name__
        if not isinstance(input, Tensor) or input.ndim not in (1, 2) or \
                input.shape[-1] != self.input_size:
            raise ShapeError(f"{owner}: input must be (N, {self.input_size}) or "
                             f"({self.input_size},), got {getattr(input, 'shape', input)}")
        batched = input.ndim == 2
        x = input if batched else input.unsqueeze(0)
        count = 2 if self.mode == "LSTM" else 1
        if hx is None:
            state = tuple(zeros(x.shape[0], self.hidden_size, dtype=x.dtype, device=x.device)
                          for _ in range(count))
        else:
            state = tuple(hx) if self.mode == "LSTM" else (hx,)
            want = (x.shape[0], self.hidden_size) if batched else (self.hidden_size,)
            if len(state) != count or any(not isinstance(s, Tensor) or s.shape != want
                                          for s in state):
                raise ShapeError(f"{owner}: the state must be {count} tensor(s) of shape "
                                 f"{want} for input shape {input.shape}, got "
                                 f"{[getattr(s, 'shape', s) for s in state]}")
            state = state if batched else tuple(s.unsqueeze(0) for s in state)
        w = _arrange(self.mode, self.weight_ih, self.weight_hh, self.bias_ih, self.bias_hh, None)
        gx = x @ w.w_ih.mT
        gx = gx if w.b_in is None else gx + w.b_in
        return _MODES[self.mode][1](gx, state, w), batched

    def extra_repr(self) -> str:
        text = f"{self.input_size}, {self.hidden_size}"
        if not self.bias:
            text += ", bias=False"
        if self.mode == "RNN_RELU":
            text += ", nonlinearity=relu"
        return text


class RNNCell(_CellBase):
    """One step of `RNN`: ``h' = act(x @ W_ih^T + b_ih + h @ W_hh^T + b_hh)``.
    ``cell(x, h)`` with x (N, input_size) or (input_size,), h zeros by default; returns h'.

    >>> import pyburn
    >>> cell = pyburn.nn.RNNCell(3, 4, device="flex")
    >>> cell(pyburn.ones(2, 3, device="flex")).shape
    (2, 4)
    """

    def __init__(self, input_size: int, hidden_size: int, bias: bool = True,
                 nonlinearity: str = "tanh", device: Any = None, dtype: Any = None):
        super().__init__(_rnn_mode(nonlinearity), input_size, hidden_size, bias, device, dtype)
        self.nonlinearity = nonlinearity

    def forward(self, input: Tensor, hx: Tensor | None = None) -> Tensor:
        """The next hidden state."""
        (h,), batched = self._step(input, hx)
        return h if batched else h.squeeze(0)


class LSTMCell(_CellBase):
    """One step of `LSTM`: ``cell(x, (h, c))`` returns ``(h', c')`` (zeros by default)."""

    def __init__(self, input_size: int, hidden_size: int, bias: bool = True, device: Any = None,
                 dtype: Any = None):
        super().__init__("LSTM", input_size, hidden_size, bias, device, dtype)

    def forward(self, input: Tensor, hx: tuple[Tensor, Tensor] | None = None
                ) -> tuple[Tensor, Tensor]:
        """The next (hidden state, cell state)."""
        (h, c), batched = self._step(input, hx)
        return (h, c) if batched else (h.squeeze(0), c.squeeze(0))


class GRUCell(_CellBase):
    """One step of `GRU`: ``cell(x, h)`` returns h' (h zeros by default)."""

    def __init__(self, input_size: int, hidden_size: int, bias: bool = True, device: Any = None,
                 dtype: Any = None):
        super().__init__("GRU", input_size, hidden_size, bias, device, dtype)

    def forward(self, input: Tensor, hx: Tensor | None = None) -> Tensor:
        """The next hidden state."""
        (h,), batched = self._step(input, hx)
        return h if batched else h.squeeze(0)
