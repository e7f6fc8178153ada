"""RNN, LSTM, GRU and their cells against PyTorch: state_dict layout, outputs and final
states for every option, initial states, gradients through time, init, errors."""

from __future__ import annotations

import itertools
import math
import zlib

import pytest

import pyburn
from pyburn import nn

from .sequence_twins import check_sequence_twin, np, torch

L, N, IN, H = 4, 3, 3, 4  # sequence length, batch, input size, hidden size


def _floats(key: str, *shape: int) -> np.ndarray:
    rng = np.random.default_rng(zlib.crc32(f"{key}{shape}".encode()))
    return rng.uniform(-1.5, 1.5, shape).astype(np.float32)


def _ids(options: dict) -> str:
    return "-".join(f"{k}={v}" for k, v in options.items())


def _grid(**axes: list) -> list[dict]:
    return [dict(zip(axes, values)) for values in itertools.product(*axes.values())]


def _sequence(options: dict, key: str) -> np.ndarray:
    shape = (N, L, IN) if options.get("batch_first") else (L, N, IN)
    return _floats(key, *shape)


COMMON = dict(num_layers=[1, 2], bidirectional=[False, True], batch_first=[False, True],
              bias=[True, False])
RNN_OPTIONS = _grid(nonlinearity=["tanh", "relu"], **COMMON)
LSTM_OPTIONS = _grid(proj_size=[0, 2], **COMMON)
GRU_OPTIONS = _grid(**COMMON)


@pytest.mark.parametrize("options", RNN_OPTIONS, ids=_ids)
def test_rnn(device, options):
    check_sequence_twin(device, nn.RNN(IN, H, device=device, **options),
                        torch.nn.RNN(IN, H, **options), [_sequence(options, "rnn")])


@pytest.mark.parametrize("options", LSTM_OPTIONS, ids=_ids)
def test_lstm(device, options):
    check_sequence_twin(device, nn.LSTM(IN, H, device=device, **options),
                        torch.nn.LSTM(IN, H, **options), [_sequence(options, "lstm")])


@pytest.mark.parametrize("options", GRU_OPTIONS, ids=_ids)
def test_gru(device, options):
    check_sequence_twin(device, nn.GRU(IN, H, device=device, **options),
                        torch.nn.GRU(IN, H, **options), [_sequence(options, "gru")])


def _state(options: dict, size: int, key: str, batched: bool = True) -> np.ndarray:
    rows = options.get("num_layers", 1) * (2 if options.get("bidirectional") else 1)
    return _floats(key, *((rows, N, size) if batched else (rows, size)))


STATE_OPTIONS = [dict(), dict(num_layers=2, bidirectional=True, batch_first=True)]


@pytest.mark.parametrize("options", STATE_OPTIONS, ids=_ids)
@pytest.mark.parametrize("kind", ["RNN", "GRU"])
def test_initial_state(device, kind, options):
    """h0 given: outputs, h_n and the gradient with respect to h0."""
    x, h0 = _sequence(options, kind), _state(options, H, kind + "h0")
    check_sequence_twin(device, getattr(nn, kind)(IN, H, device=device, **options),
                        getattr(torch.nn, kind)(IN, H, **options), [x, h0])


@pytest.mark.parametrize("options", STATE_OPTIONS + [dict(proj_size=3)], ids=_ids)
def test_lstm_initial_state(device, options):
    x = _sequence(options, "lstm-state")
    h0 = _state(options, options.get("proj_size") or H, "h0")
    c0 = _state(options, H, "c0")
    check_sequence_twin(device, nn.LSTM(IN, H, device=device, **options),
                        torch.nn.LSTM(IN, H, **options), [x, (h0, c0)])


@pytest.mark.parametrize("with_state", [False, True])
@pytest.mark.parametrize("kind", ["RNN", "LSTM", "GRU"])
def test_unbatched(device, kind, with_state):
    """Input (L, input_size): the state has no batch dim either."""
    options = dict(num_layers=2, bidirectional=True)
    args = [_floats(kind, L, IN)]
    if with_state:
        h0 = _state(options, H, "h0", batched=False)
        args.append((h0, _state(options, H, "c0", batched=False)) if kind == "LSTM" else h0)
    check_sequence_twin(device, getattr(nn, kind)(IN, H, device=device, **options),
                        getattr(torch.nn, kind)(IN, H, **options), args)


@pytest.mark.parametrize("kind", ["RNN", "LSTM", "GRU"])
def test_dropout_inactive_in_eval(device, kind):
    check_sequence_twin(device, getattr(nn, kind)(IN, H, num_layers=3, dropout=0.5, device=device),
                        getattr(torch.nn, kind)(IN, H, num_layers=3, dropout=0.5),
                        [_floats(kind, L, N, IN)])


@pytest.mark.parametrize("kind", ["RNN", "LSTM", "GRU"])
def test_dropout_one_between_layers(device, kind):
    """Training with dropout 1: every layer after the first sees zeros, deterministically on
    both sides, and the last layer's output is not dropped."""
    check_sequence_twin(device, getattr(nn, kind)(IN, H, num_layers=2, dropout=1.0, device=device),
                        getattr(torch.nn, kind)(IN, H, num_layers=2, dropout=1.0),
                        [_floats(kind, L, N, IN)], train=True, grad=False)


def test_dropout_between_layers_in_training(device):
    """Dropout is random in training, reproducible under a seed, and off in eval."""
    lstm = nn.LSTM(IN, H, num_layers=2, dropout=0.5, device=device)
    x = pyburn.tensor(_floats("drop", L, N, IN), device=device)
    runs = []
    for _ in range(2):
        pyburn.manual_seed(5)
        runs.append(lstm(x)[0].numpy())
    np.testing.assert_array_equal(runs[0], runs[1])
    evaluated = lstm.eval()(x)[0].numpy()
    assert not np.allclose(runs[0], evaluated)
    one_layer = nn.LSTM(IN, H, num_layers=1, dropout=0.5, device=device)
    np.testing.assert_array_equal(one_layer(x)[0].numpy(), one_layer.eval()(x)[0].numpy())


CELL_OPTIONS = _grid(bias=[True, False], batched=[True, False], with_state=[False, True])


@pytest.mark.parametrize("options", CELL_OPTIONS, ids=_ids)
@pytest.mark.parametrize("kind", ["RNNCell", "LSTMCell", "GRUCell"])
def test_cell(device, kind, options):
    batched, with_state = options["batched"], options["with_state"]
    lead = (N,) if batched else ()
    args = [_floats(kind, *lead, IN)]
    if with_state:
        h = _floats(kind + "h", *lead, H)
        args.append((h, _floats(kind + "c", *lead, H)) if kind == "LSTMCell" else h)
    check_sequence_twin(device, getattr(nn, kind)(IN, H, bias=options["bias"], device=device),
                        getattr(torch.nn, kind)(IN, H, bias=options["bias"]), args)


def test_rnn_cell_relu(device):
    check_sequence_twin(device, nn.RNNCell(IN, H, nonlinearity="relu", device=device),
                        torch.nn.RNNCell(IN, H, nonlinearity="relu"), [_floats("cell", N, IN)])


def test_long_sequence_gradients(device):
    """Backpropagation through 24 steps of a 2-layer LSTM."""
    check_sequence_twin(device, nn.LSTM(IN, H, num_layers=2, device=device),
                        torch.nn.LSTM(IN, H, num_layers=2), [_floats("long", 24, 2, IN)])


@pytest.mark.parametrize("kind", ["RNN", "LSTM", "GRU"])
def test_default_init(device, kind):
    """Every parameter from U(-1/sqrt(H), 1/sqrt(H)): within the bound, spread across it."""
    pyburn.manual_seed(1)
    hidden = 64
    layer = getattr(nn, kind)(16, hidden, num_layers=2, bidirectional=True, device=device)
    bound = 1 / math.sqrt(hidden)
    values = np.concatenate([p.numpy().ravel() for p in layer.parameters()])
    assert np.abs(values).max() <= bound
    # U(-b, b) has std b / sqrt(3); tens of thousands of draws pin it within 2%
    assert abs(values.std() / (bound / math.sqrt(3)) - 1) < 0.02


def test_init_reproducible_across_devices():
    states = []
    for dev in pyburn.available_devices():
        pyburn.manual_seed(9)
        states.append(nn.GRU(3, 5, device=dev).state_dict())
    for other in states[1:]:
        for key, value in states[0].items():
            np.testing.assert_array_equal(value.numpy(), other[key].numpy())


def test_all_weights_and_attributes(device):
    lstm = nn.LSTM(IN, H, num_layers=2, bidirectional=True, proj_size=2, device=device)
    ref = torch.nn.LSTM(IN, H, num_layers=2, bidirectional=True, proj_size=2)
    assert [[tuple(w.shape) for w in ws] for ws in lstm.all_weights] == \
        [[tuple(w.shape) for w in ws] for ws in ref.all_weights]
    for name in ("input_size", "hidden_size", "num_layers", "bias", "batch_first", "dropout",
                 "bidirectional", "proj_size", "mode"):
        assert getattr(lstm, name) == getattr(ref, name), name
    lstm.flatten_parameters()
    assert "proj_size=2" in repr(lstm) and "bidirectional=True" in repr(lstm)


def test_float64(device):
    if "float64" not in device.caps:
        pytest.skip("needs float64")
    gru = nn.GRU(IN, H, device=device, dtype=pyburn.float64)
    out, h = gru(pyburn.ones(L, N, IN, device=device, dtype=pyburn.float64))
    assert out.dtype is pyburn.float64 and h.dtype is pyburn.float64


def test_errors(device):
    lstm = nn.LSTM(IN, H, num_layers=2, device=device)
    x = pyburn.ones(L, N, IN, device=device)
    with pytest.raises(pyburn.ShapeError, match="input_size"):
        lstm(pyburn.ones(L, N, IN + 1, device=device))
    with pytest.raises(pyburn.ShapeError, match="input must be"):
        lstm(pyburn.ones(L, device=device))
    with pytest.raises(pyburn.ShapeError, match=r"h0 must have shape \(2, 3, 4\)"):
        lstm(x, (pyburn.zeros(1, N, H, device=device), pyburn.zeros(2, N, H, device=device)))
    with pytest.raises(pyburn.ArgumentError, match="tuple"):
        lstm(x, pyburn.zeros(2, N, H, device=device))
    with pytest.raises(pyburn.ShapeError, match="empty"):
        lstm(pyburn.ones(0, N, IN, device=device))
    with pytest.raises(pyburn.ArgumentError, match="nonlinearity"):
        nn.RNN(IN, H, nonlinearity="sigmoid")
    with pytest.raises(pyburn.ArgumentError, match="proj_size"):
        nn.LSTM(IN, H, proj_size=H)
    with pytest.raises(pyburn.ArgumentError, match="dropout"):
        nn.GRU(IN, H, dropout=1.5)
    with pytest.raises(pyburn.ArgumentError, match="hidden_size"):
        nn.GRU(IN, 0)
    with pytest.raises(pyburn.ShapeError, match="state"):
        nn.GRUCell(IN, H, device=device)(pyburn.ones(N, IN, device=device),
                                          pyburn.ones(N + 1, H, device=device))
