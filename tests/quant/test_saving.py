"""``quant.save`` / ``quant.load_into``: quantized models through safetensors files bit for
bit on every device (every tensor's bytes, the same outputs), the schemes in the header's
metadata, files any safetensors reader opens, paths, bytes and file objects; bad files and
models that do not fit."""

from __future__ import annotations

import io
import json

import numpy as np
import pytest
from safetensors.numpy import load_file

import pyburn
from pyburn import nn, quant, store
from pyburn.errors import ArgumentError, FormatError


def _model(device):
    return nn.Sequential(nn.Conv2d(1, 3, 3, device=device), nn.Flatten(),
                         nn.Linear(3 * 4 * 4, 8, device=device), nn.ReLU(),
                         nn.Linear(8, 2, device=device))


def _quantized(device):
    pyburn.manual_seed(4)
    model = _model(device)
    x = pyburn.rand(2, 1, 6, 6, device=device)
    calibration = quant.calibrate(model, [x], targets=["2"])
    quant.quantize(model, quant.INT8_SYMMETRIC_PER_CHANNEL, "static", calibration, targets=["2"])
    quant.quantize(model, quant.UINT4_BLOCK32, "dynamic", targets=["0"])
    quant.quantize(model, quant.QuantScheme("int4", granularity="tensor"), skip=["0", "2"])
    return model, x


def test_a_quantized_model_round_trips_bit_for_bit(device, tmp_path):
    model, x = _quantized(device)
    path = tmp_path / "model.safetensors"
    quant.save(model, path, metadata={"epochs": 3})
    loaded = quant.load_into(_model(device), path)
    mine, theirs = model.state_dict(), loaded.state_dict()
    assert list(mine) == list(theirs)
    for key in mine:
        assert (mine[key].dtype, mine[key].shape, mine[key].device) == (
            theirs[key].dtype, theirs[key].shape, theirs[key].device), key
        assert mine[key].to_bytes() == theirs[key].to_bytes(), key
    for name, m in model.named_modules():
        if isinstance(m, quant.QuantizedLayer):
            other = loaded.get_submodule(name)
            assert (type(other), other.scheme, other.activations) == (type(m), m.scheme,
                                                                      m.activations)
    assert loaded(x).to_bytes() == model(x).to_bytes()
    assert store.load_metadata(path) == {"epochs": 3}


def test_the_file_holds_packed_words_and_the_schemes(tmp_path):
    model, _ = _quantized("cpu")
    path = tmp_path / "model.safetensors"
    quant.save(model, path)
    arrays = load_file(str(path))  # any safetensors reader
    assert arrays["2.weight_data"].dtype == np.int32 and arrays["2.weight_data"].shape == (8, 12)
    assert arrays["0.weight_scale"].shape == (3, 1) and "2.input_zero_point" in arrays
    layers = json.loads(store.read_header(path).metadata[quant.saving.QUANT_KEY])["layers"]
    assert layers["0"] == {"type": "QuantizedConv2d", "scheme": quant.UINT4_BLOCK32.to_dict(),
                           "activations": "dynamic"}
    assert layers["4"]["scheme"]["dtype"] == "int4" and layers["2"]["activations"] == "static"
    data = path.read_bytes()
    for source in (data, io.BytesIO(data)):  # as a page fetches it, and a file object
        loaded = quant.load_into(_model("cpu"), source)
        assert loaded[2].weight_data.to_bytes() == model[2].weight_data.to_bytes()
    again = quant.load_into(loaded, path)  # into a model quantized the same way already
    assert again is loaded


def test_files_and_models_that_do_not_fit_are_refused(tmp_path):
    model, _ = _quantized("flex")
    path = tmp_path / "model.safetensors"
    quant.save(model, path)
    with pytest.raises(ArgumentError, match="which the model lacks"):
        quant.load_into(nn.Sequential(), path)
    other = _model("flex")
    other[2] = nn.Conv2d(1, 1, 1, device="flex")
    with pytest.raises(ArgumentError, match="model's '2' is a Conv2d, not a Linear"):
        quant.load_into(other, path)
    plain = tmp_path / "plain.safetensors"
    store.save(_model("flex"), plain)
    with pytest.raises(FormatError, match="not written by pyburn.quant.save"):
        quant.load_into(_model("flex"), plain)
    with pytest.raises(ArgumentError, match="has no quantized layer"):
        quant.save(_model("flex"), plain)
    with pytest.raises(ArgumentError, match="takes a pyburn.nn.Module"):
        quant.load_into({}, path)
