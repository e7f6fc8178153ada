"""``calibrate`` against onnxruntime's static quantization (MinMax calibration: the input's
scale and zero point bit for bit) and PyTorch's MinMaxObserver and
MovingAverageMinMaxObserver, on every device; batches as tensors or (input, target) pairs;
the model left as it was; bad arguments."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from torch.ao.quantization import MinMaxObserver, MovingAverageMinMaxObserver

import pyburn
from pyburn import nn, quant
from pyburn.errors import ArgumentError

from .references import ort_quantized

RNG = np.random.default_rng(11)
WEIGHT = RNG.standard_normal((5, 16)).astype(np.float32)
BATCHES = [(RNG.standard_normal((3, 16)) * scale + shift).astype(np.float32)
           for scale, shift in ((1.0, 0.5), (2.0, -0.3), (0.5, 2.0), (1.5, 0.0))]


def _linear(device) -> nn.Linear:
    layer = nn.Linear(16, 5, bias=False, device=device)
    layer.load_state_dict({"weight": WEIGHT})
    return layer


def _on(device, batches):
    return [pyburn.tensor(b.tolist(), device=device) for b in batches]


def test_input_scale_and_zero_point_equal_onnxruntimes_static_quantization(device):
    found = ort_quantized(WEIGHT, "int8", True, True, BATCHES)
    model = nn.Sequential(_linear(device))
    calibration = quant.calibrate(model, _on(device, BATCHES))
    assert calibration.ranges == {"0": (min(b.min() for b in BATCHES),
                                        max(b.max() for b in BATCHES))}
    quantized = quant.quantize(model, quant.INT8_SYMMETRIC_PER_CHANNEL, "static", calibration)
    assert np.float32(quantized[0].input_scale.item()) == found["x_scale"]
    assert quantized[0].input_zero_point.item() == int(found["x_zero_point"])
    np.testing.assert_array_equal(np.array(quantized[0].weight.scale.tolist(), np.float32),
                                  found["w_scale"])


@pytest.mark.parametrize("observer", ["minmax", "moving_average"])
def test_ranges_and_qparams_equal_torchs_observers(device, observer):
    if observer == "minmax":
        theirs = MinMaxObserver(dtype=torch.quint8, qscheme=torch.per_tensor_affine)
    else:
        theirs = MovingAverageMinMaxObserver(averaging_constant=0.25, dtype=torch.quint8,
                                             qscheme=torch.per_tensor_affine)
    for batch in BATCHES:
        theirs(torch.from_numpy(batch))
    model = nn.Sequential(_linear(device))
    found = quant.calibrate(model, [(x, None) for x in _on(device, BATCHES)],
                            observer=observer, averaging_constant=0.25)
    low, high = found.ranges["0"]
    assert (np.float32(low), np.float32(high)) == (theirs.min_val.item(), theirs.max_val.item())
    assert found.observer == observer
    scales, zeros = quant.ACTIVATIONS.qparams([low], [high])
    scale, zero = theirs.calculate_qparams()
    assert abs(np.float32(scales[0]) - scale.item()) <= np.spacing(np.float32(scale.item()))
    assert zeros == zero.tolist()


def test_every_target_layer_is_observed_and_the_model_is_left_as_it_was():
    model = nn.Sequential(nn.Linear(4, 3, device="flex"), nn.ReLU(),
                          nn.Linear(3, 2, device="flex"), nn.Dropout(0.5))
    model.train()
    x = pyburn.tensor([[1.0, -2.0, 0.5, 3.0], [0.0, 1.0, -1.0, 2.0]], device="flex")
    found = quant.calibrate(model, [x, x * 10], num_batches=1, skip=["0"])
    hidden = nn.functional.relu(model[0](x))
    assert list(found.ranges) == ["2"]
    assert found.ranges["2"] == (hidden.min().item(), hidden.max().item())
    assert model.training and all(m.training for m in model.modules())
    assert "forward" not in model[2].__dict__


def test_bad_arguments_are_refused():
    model = nn.Sequential(nn.Linear(2, 2, device="flex"))
    x = pyburn.ones(1, 2, device="flex")
    with pytest.raises(ArgumentError, match="gave no batch"):
        quant.calibrate(model, [])
    with pytest.raises(ArgumentError, match="observer must be one of"):
        quant.calibrate(model, [x], observer="percentile")
    with pytest.raises(ArgumentError, match="num_batches must be a positive int"):
        quant.calibrate(model, [x], num_batches=0)
    with pytest.raises(ArgumentError, match="averaging_constant must be in"):
        quant.calibrate(model, [x], observer="moving_average", averaging_constant=2.0)
    with pytest.raises(ArgumentError, match="a batch is a tensor"):
        quant.calibrate(model, [[1.0, 2.0]])
    assert "forward" not in model[0].__dict__
