"""Models exported by PyTorch (torch.onnx.export, the TorchScript exporter) run through
`pyburn.onnx.load` against onnxruntime, and through the code `pyburn onnx convert` writes
against the runner, on cpu and wgpu."""

from __future__ import annotations

import io

import numpy as np
import pytest

import pyburn
import pyburn.onnx

from . import parity

torch = pytest.importorskip("torch")
ort = pytest.importorskip("onnxruntime")
nn = torch.nn


class CNN(nn.Module):
    def __init__(self):
        super().__init__()
        self.features = nn.Sequential(
            nn.Conv2d(1, 8, 3, padding=1), nn.BatchNorm2d(8), nn.ReLU(), nn.MaxPool2d(2),
            nn.Conv2d(8, 16, 3, stride=2, padding=(0, 1)), nn.GELU(),
            nn.AvgPool2d(2, ceil_mode=True))
        self.head = nn.Linear(16 * 2 * 2, 10)

    def forward(self, x):
        return torch.log_softmax(self.head(self.features(x).flatten(1)), dim=1)


class ResBlock(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(8, 8, 3, padding=1, bias=False)
        self.bn1 = nn.BatchNorm2d(8)
        self.conv2 = nn.Conv2d(8, 8, 3, padding=1, bias=False)
        self.bn2 = nn.BatchNorm2d(8)
        self.pool = nn.AdaptiveAvgPool2d(1)

    def forward(self, x):
        y = torch.relu(self.bn1(self.conv1(x)))
        y = torch.relu(self.bn2(self.conv2(y)) + x)
        return self.pool(y).flatten(1)


class Recurrent(nn.Module):
    def __init__(self):
        super().__init__()
        self.lstm = nn.LSTM(6, 12, num_layers=2, batch_first=True, bidirectional=True)
        self.gru = nn.GRU(24, 5, batch_first=True)

    def forward(self, x):
        y, _ = self.lstm(x)
        z, h = self.gru(y)
        return z, h


class Transformer(nn.Module):
    def __init__(self):
        super().__init__()
        layer = nn.TransformerEncoderLayer(32, 4, dim_feedforward=64, dropout=0.0,
                                           batch_first=True)
        self.encoder = nn.TransformerEncoder(layer, 2, enable_nested_tensor=False)
        self.embed = nn.Embedding(50, 32)

    def forward(self, tokens):
        return self.encoder(self.embed(tokens)).mean(dim=1)


def _example(name):
    g = torch.Generator().manual_seed(3)
    if name == "cnn":
        return CNN(), (torch.randn(3, 1, 16, 16, generator=g),)
    if name == "resblock":
        return ResBlock(), (torch.randn(2, 8, 9, 7, generator=g),)
    if name == "recurrent":
        return Recurrent(), (torch.randn(2, 5, 6, generator=g),)
    return Transformer(), (torch.randint(0, 50, (2, 7), generator=g),)


MODELS = ["cnn", "resblock", "recurrent", "transformer"]


def _export(name):
    torch.manual_seed(0)
    model, inputs = _example(name)
    for m in model.modules():  # non-trivial batch-norm statistics
        if isinstance(m, nn.BatchNorm2d):
            m.running_mean.uniform_(-0.5, 0.5)
            m.running_var.uniform_(0.5, 1.5)
    model.eval()
    buffer = io.BytesIO()
    torch.onnx.export(model, inputs, buffer, dynamo=False, opset_version=17)
    data = buffer.getvalue()
    return data, inputs, ort.InferenceSession(data, providers=["CPUExecutionProvider"])


def _outputs(result):
    return result if isinstance(result, tuple) else (result,)


def _tensor(x):
    return pyburn.from_numpy(x.numpy(), device="cpu")


#: the models `pyburn.capture` refuses (a word of the reason), the others it captures: on
#: wgpu two read a value back, the recurrent model and the transformer (its token ids are
#: int32 there, not the declared int64, so the general program runs, whose Reshape reads
#: the shape it computed)
REFUSED = {("recurrent", "wgpu"): "to_bytes", ("transformer", "wgpu"): "to_bytes"}


@pytest.mark.filterwarnings("ignore::DeprecationWarning")
@pytest.mark.parametrize("dev", parity.DEVICES)
@pytest.mark.parametrize("name", MODELS)
def test_load_matches_onnxruntime(name, dev):
    """Three calls with new inputs of one signature: a plain run, a captured one, and a
    replay (`pyburn.capture`) where the model allows it; each equals onnxruntime."""
    data, inputs, session = _export(name)
    module = pyburn.onnx.load(data, device=dev)
    for k in range(3):
        feed = inputs if k == 0 else tuple(_varied(x, k) for x in inputs)
        expected = session.run(None, {i.name: x.numpy()
                                      for i, x in zip(session.get_inputs(), feed)})
        got = _outputs(module(*(parity.argument(_tensor(x), dev) for x in feed)))
        assert len(got) == len(expected)
        for g, e in zip(got, expected):
            np.testing.assert_allclose(g.numpy(), e, rtol=1e-4, atol=1e-4)
    (entry,) = module._captured.entries.values()
    refused = REFUSED.get((name, dev))
    assert (entry.capture is None) == (refused is not None)
    assert refused is None or refused in entry.refused


def _varied(x, seed):
    """An input like x (token ids stay in the embedding's range) from another seed."""
    g = torch.Generator().manual_seed(10 + seed)
    if x.dtype.is_floating_point:
        return torch.randn(x.shape, generator=g)
    return torch.randint(0, 50, x.shape, generator=g)


@pytest.mark.filterwarnings("ignore::DeprecationWarning")
@pytest.mark.parametrize("name", MODELS)
def test_generated_code_gives_the_runners_results(name, tmp_path):
    data, inputs, _ = _export(name)
    parity.assert_same(data, [_tensor(x) for x in inputs], tmp_path)
