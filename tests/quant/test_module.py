"""``pyburn.quant.quantize`` on an MLP and a small CNN on every device: every Linear and
convolution replaced, outputs within a bound of the float model's (int8: 2% of the largest
output; int4 block-wise: 10%), for weights only and dynamic and static activations; a layer
given as the model; bad arguments."""

from __future__ import annotations

import numpy as np
import pytest

import pyburn
from pyburn import nn, quant
from pyburn.errors import ArgumentError


class SmallCNN(nn.Module):
    def __init__(self, device):
        super().__init__()
        self.conv = nn.Conv2d(1, 4, 3, padding=1, device=device)
        self.features = nn.Sequential(nn.ReLU(), nn.Conv1d(4, 4, 3, device=device))
        self.head = nn.Sequential(nn.Linear(4 * 6, 16, device=device), nn.ReLU(),
                                  nn.Linear(16, 3, device=device))

    def forward(self, x):
        x = self.conv(x)  # (N, 4, 8, 8) -> rows of 8 as a 1-d signal
        x = self.features(x.mean(2))
        return self.head(x.flatten(1))


def _mlp(device):
    return nn.Sequential(nn.Linear(12, 32, device=device), nn.ReLU(),
                         nn.Linear(32, 32, device=device), nn.Tanh(),
                         nn.Linear(32, 4, device=device))


MODELS = {"mlp": (_mlp, (6, 12)), "cnn": (SmallCNN, (5, 1, 8, 8))}
CASES = [("mlp", quant.INT8_SYMMETRIC_PER_CHANNEL, None, 0.02),
         ("mlp", quant.UINT8_ASYMMETRIC_PER_TENSOR, "dynamic", 0.02),
         ("mlp", quant.QuantScheme("int4", True, "block", 8), None, 0.1),
         ("cnn", quant.INT8_SYMMETRIC_PER_CHANNEL, "static", 0.02),
         ("cnn", quant.INT8_ASYMMETRIC_PER_TENSOR, "dynamic", 0.02)]


@pytest.mark.parametrize("name, scheme, activations, bound", CASES,
                         ids=[f"{m}-{s.dtype}-{a}" for m, s, a, _ in CASES])
def test_quantized_models_stay_close_to_float(device, name, scheme, activations, bound):
    make, shape = MODELS[name]
    pyburn.manual_seed(0)
    model = make(device).eval()
    x = pyburn.rand(*shape, device=device)
    want = np.array(model(x).tolist())
    floats = sum(isinstance(m, (nn.Linear, nn.Conv1d, nn.Conv2d)) for m in model.modules())
    calibration = None
    if activations == "static":
        calibration = quant.calibrate(model, [x[:2], (x[2:], None)])
    model = quant.quantize(model, scheme, activations, calibration)
    layers = [m for m in model.modules() if isinstance(m, quant.QuantizedLayer)]
    assert len(layers) == floats and all(m.activations == activations for m in layers)
    assert not any(isinstance(m, (nn.Linear, nn.Conv1d, nn.Conv2d)) for m in model.modules())
    got = np.array(model(x).tolist())
    assert np.abs(got - want).max() <= bound * np.abs(want).max()


def test_a_layer_given_as_the_model_comes_back_quantized():
    layer = nn.Linear(3, 2, device="flex")
    quantized = quant.quantize(layer, quant.INT4_BLOCK32)
    assert isinstance(quantized, quant.QuantizedLinear) and quantized.bias is layer.bias


@pytest.mark.parametrize("scheme", [quant.INT8_SYMMETRIC_PER_CHANNEL, quant.INT4_BLOCK32],
                         ids=["int8", "int4"])
def test_dequantize_gives_float_layers_computing_the_weight_only_model(scheme):
    pyburn.manual_seed(1)
    model = quant.quantize(SmallCNN("cpu").eval(), scheme)
    x = pyburn.rand(3, 1, 8, 8, device="cpu")
    want = np.array(model(x).tolist())
    weights = {name: m.weight.dequantize().numpy() for name, m in model.named_modules()
               if isinstance(m, quant.QuantizedLayer)}
    floats = quant.dequantize(model)
    assert not any(isinstance(m, quant.QuantizedLayer) for m in floats.modules())
    layers = dict(floats.named_modules())
    for name, weight in weights.items():
        assert type(layers[name]) in (nn.Linear, nn.Conv1d, nn.Conv2d)
        assert np.array_equal(layers[name].weight.numpy(), weight), name
    np.testing.assert_allclose(np.array(floats(x).tolist()), want, rtol=1e-5, atol=1e-6)


def test_bad_arguments_are_refused():
    model = _mlp("flex")
    with pytest.raises(ArgumentError, match="nothing to quantize in ReLU"):
        quant.quantize(nn.ReLU())
    with pytest.raises(ArgumentError, match="names 'head'"):
        quant.quantize(model, targets=["head"])
    with pytest.raises(ArgumentError, match="module names and module types"):
        quant.quantize(model, skip=[3])
    with pytest.raises(ArgumentError, match="static activations need a calibration"):
        quant.quantize(model, activations="static")
    with pytest.raises(ArgumentError, match="activations must be None"):
        quant.quantize(model, activations="int8")
    with pytest.raises(ArgumentError, match="scheme must be a QuantScheme"):
        quant.quantize(model, "int8")
    with pytest.raises(ArgumentError, match="takes a pyburn.nn.Module"):
        quant.quantize(pyburn.ones(2, device="flex"))
    with pytest.raises(ArgumentError, match="calibration must be what"):
        quant.quantize(model, activations="static", calibration={"0": (0, 1)})
    quant.quantize(model, skip=["4"])
    with pytest.raises(ArgumentError, match=r"2 layers are quantized already"):
        quant.quantize(model, skip=["4"])
    with pytest.raises(ArgumentError, match="no input range for layer '4'"):
        quant.quantize(model, activations="static",
                       calibration=quant.Calibration({"0": (0.0, 1.0)}))
