"""PyTorch models saved by torch, loaded into pyburn twins with ``Module.load_from``: the same
outputs as torch on every device; key remapping, filters, partial loads and their report,
adapters (PyTorch layouts, half precision, a custom layout), safetensors stores, and flat
memory while loading a 100 MB file."""

from __future__ import annotations

import dataclasses
import io
import tracemalloc

import pytest

import pyburn
from pyburn import nn as pnn
from pyburn.store import (
    Adapter,
    HalfPrecision,
    LazyStateDict,
    PyTorchAdapter,
    SafetensorsStore,
    load_pytorch,
)

torch = pytest.importorskip("torch")
np = pytest.importorskip("numpy")
tnn = torch.nn


def resnet(nn, relu):
    """A small ResNet (conv, batch norm, residual blocks with a projection shortcut), built
    from `nn` (torch.nn or pyburn.nn) so both frameworks get the same architecture."""

    class Block(nn.Module):
        def __init__(self, cin: int, cout: int, stride: int):
            super().__init__()
            self.conv1 = nn.Conv2d(cin, cout, 3, stride, 1, bias=False)
            self.bn1 = nn.BatchNorm2d(cout)
            self.conv2 = nn.Conv2d(cout, cout, 3, 1, 1, bias=False)
            self.bn2 = nn.BatchNorm2d(cout)
            self.shortcut = nn.Sequential()
            if stride != 1 or cin != cout:
                self.shortcut = nn.Sequential(nn.Conv2d(cin, cout, 1, stride, bias=False),
                                              nn.BatchNorm2d(cout))

        def forward(self, x):
            y = relu(self.bn1(self.conv1(x)))
            return relu(self.bn2(self.conv2(y)) + self.shortcut(x))

    class ResNet(nn.Module):
        def __init__(self):
            super().__init__()
            self.stem = nn.Sequential(nn.Conv2d(3, 8, 3, 1, 1, bias=False), nn.BatchNorm2d(8),
                                      nn.ReLU())
            self.layers = nn.Sequential(Block(8, 8, 1), Block(8, 16, 2))
            self.head = nn.Sequential(nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(16, 10))

        def forward(self, x):
            return self.head(self.layers(self.stem(x)))

    return ResNet()


def transformer(nn):
    """Embedding, one Transformer encoder layer, LayerNorm and a head, from `nn`."""

    class Encoder(nn.Module):
        def __init__(self):
            super().__init__()
            self.embed = nn.Embedding(20, 16)
            self.layer = nn.TransformerEncoderLayer(16, 4, dim_feedforward=32, dropout=0.0,
                                                    batch_first=True)
            self.norm = nn.LayerNorm(16)
            self.head = nn.Linear(16, 5)

        def forward(self, tokens):
            return self.head(self.norm(self.layer(self.embed(tokens))))

    return Encoder()


def trained_resnet():
    """A torch ResNet whose batch norms have running statistics of their own."""
    torch.manual_seed(0)
    model = resnet(tnn, torch.relu)
    with torch.no_grad():
        for _ in range(3):
            model(torch.randn(4, 3, 8, 8) * 2 + 0.5)
    return model.eval()


def saved(obj, fmt: str = "zip") -> bytes:
    buf = io.BytesIO()
    torch.save(obj, buf, _use_new_zipfile_serialization=fmt == "zip")
    return buf.getvalue()


def close(got: pyburn.Tensor, want, tol: float = 1e-4) -> None:
    np.testing.assert_allclose(got.numpy(), want.detach().numpy(), rtol=tol, atol=tol)


@pytest.mark.parametrize("fmt", ["zip", "legacy"])
def test_resnet_twin_gives_torchs_outputs(device, fmt):
    model = trained_resnet()
    twin = resnet(pnn, pnn.functional.relu).to(device).eval()
    result = twin.load_from(saved({"state_dict": model.state_dict(), "epoch": 9}, fmt))
    assert result.all_matched and result.loaded == list(model.state_dict())
    x = torch.randn(2, 3, 8, 8)
    close(twin(pyburn.tensor(x.numpy(), device=device)), model(x))


@pytest.mark.parametrize("fmt", ["zip", "legacy"])
def test_transformer_twin_gives_torchs_outputs(device, fmt):
    torch.manual_seed(1)
    model = transformer(tnn).eval()
    optimizer = torch.optim.Adam(model.parameters())
    model(torch.randint(0, 20, (2, 5))).sum().backward()
    optimizer.step()
    checkpoint = {"model_state_dict": model.state_dict(),
                  "optimizer_state_dict": optimizer.state_dict(), "epoch": 1, "loss": 0.25}
    twin = transformer(pnn).to(device).eval()
    twin.load_from(saved(checkpoint, fmt))
    tokens = torch.randint(0, 20, (3, 7))
    close(twin(pyburn.tensor(tokens.tolist(), device=device)), model(tokens))


def test_key_remapping_filters_and_the_report(tmp_path):
    model = trained_resnet()
    path = tmp_path / "dp.pth"
    torch.save({"module." + k: v for k, v in model.state_dict().items()}, path)  # DataParallel
    twin = resnet(pnn, pnn.functional.relu).eval()
    with pytest.raises(pyburn.ArgumentError, match="missing \\(in the model, not in the store\\)"
                                                   ": 'stem.0.weight'"):
        twin.load_from(path)
    result = twin.load_from(path, key_remap=[(r"^module\.", "")])
    assert result.all_matched
    assert twin.load_from(load_pytorch(path).with_key_remapping(r"^module\.", "")).all_matched
    heads = twin.load_from(path, key_remap={r"^module\.": ""}, filter=r"^head\.")
    assert heads.loaded == ["head.2.weight", "head.2.bias"] and not heads.missing
    assert len(heads.skipped) == len(model.state_dict()) - 2 and not heads.unused
    by_predicate = twin.load_from(path, key_remap=[(r"^module\.", "")],
                                  filter=lambda key: key.endswith("running_mean"))
    assert by_predicate.loaded and all(k.endswith("running_mean") for k in by_predicate.loaded)
    with pytest.raises(pyburn.ArgumentError, match="maps both 'module.stem.0.weight' and "
                                                   "'module.stem.1.weight' to 'x'"):
        twin.load_from(path, key_remap=[(r".*weight", "x")])
    with pytest.raises(pyburn.ArgumentError, match="not a valid regular expression"):
        twin.load_from(path, key_remap=[("(", "")])


def test_partial_loads_and_all_or_nothing(tmp_path):
    model = trained_resnet()
    sd = dict(model.state_dict())
    sd["head.2.weight"] = torch.zeros(3, 16)  # the wrong shape
    del sd["stem.0.weight"]
    sd["extra.weight"] = torch.ones(2)
    twin = resnet(pnn, pnn.functional.relu).eval()
    before = {k: v.numpy().copy() for k, v in twin.state_dict().items()}
    with pytest.raises(pyburn.ArgumentError) as info:
        twin.load_from(saved(sd))
    message = str(info.value)
    assert "1 missing (in the model, not in the store): 'stem.0.weight'" in message
    assert "1 unused (in the store, not in the model): 'extra.weight'" in message
    assert "shape mismatch for 'head.2.weight': the model has (10, 16), the store (3, 16)" \
        in message
    for key, value in twin.state_dict().items():  # nothing changed
        np.testing.assert_array_equal(value.numpy(), before[key])
    result = twin.load_from(saved(sd), allow_partial=True)
    assert result.missing == ["stem.0.weight"] and result.unused == ["extra.weight"]
    assert result.mismatched == {"head.2.weight": ((10, 16), (3, 16))}
    assert len(result.loaded) == len(sd) - 2
    close(twin.state_dict()["layers.1.bn2.running_var"], model.layers[1].bn2.running_var)
    np.testing.assert_array_equal(twin.state_dict()["stem.0.weight"].numpy(),
                                  before["stem.0.weight"])


def test_pytorch_adapter_keeps_counters_old_checkpoints_lack():
    model = trained_resnet()
    old = {k: v for k, v in model.state_dict().items() if "num_batches_tracked" not in k}
    twin = resnet(pnn, pnn.functional.relu).eval()
    result = twin.load_from(saved(old))
    assert result.all_matched and len(result.kept) == 6 and not result.missing
    tensors = {k: pyburn.tensor(v.numpy()) for k, v in old.items()}
    with pytest.raises(pyburn.ArgumentError, match="6 missing"):  # no adapter in memory
        twin.load_from(LazyStateDict.from_tensors(tensors))
    assert twin.load_from(LazyStateDict.from_tensors(tensors), adapter=PyTorchAdapter()).kept


def test_half_precision_both_ways(tmp_path):
    model = trained_resnet()
    twin = resnet(pnn, pnn.functional.relu).eval()
    twin.load_from(saved(model.state_dict()), adapter=HalfPrecision())
    dtypes = {k: t.dtype for k, t in twin.state_dict().items()}
    assert dtypes["stem.0.weight"] is pyburn.float16 and dtypes["head.2.bias"] is pyburn.float16
    assert dtypes["stem.1.running_var"] is pyburn.float32
    assert dtypes["layers.1.shortcut.1.weight"] is pyburn.float32
    assert dtypes["stem.1.num_batches_tracked"] is pyburn.int64
    np.testing.assert_array_equal(twin.state_dict()["stem.0.weight"].numpy(),
                                  model.stem[0].weight.detach().half().numpy())
    path = tmp_path / "half.safetensors"
    full = resnet(pnn, pnn.functional.relu).eval()
    full.load_from(saved(model.state_dict()))
    pyburn.store.save(full, path, adapter=HalfPrecision())
    elements = {k: t.element.name for k, t in SafetensorsStore(path).items()}
    assert elements["stem.0.weight"] == "F16" and elements["stem.1.running_mean"] == "F32"
    assert elements["stem.1.num_batches_tracked"] == "I64"
    pyburn.store.save(full, tmp_path / "full.safetensors")
    assert path.stat().st_size < 0.6 * (tmp_path / "full.safetensors").stat().st_size
    back = resnet(pnn, pnn.functional.relu).eval()
    back.load_from(path)  # float16 in the file, float32 in the model
    assert back.state_dict()["stem.0.weight"].dtype is pyburn.float32
    np.testing.assert_array_equal(back.state_dict()["stem.0.weight"].numpy(),
                                  model.stem[0].weight.detach().half().float().numpy())
    chained = resnet(pnn, pnn.functional.relu).eval()
    assert chained.load_from(saved(model.state_dict()), adapter=[PyTorchAdapter(),
                                                                HalfPrecision()]).all_matched
    assert chained.state_dict()["head.2.weight"].dtype is pyburn.float16
    with pytest.raises(pyburn.ArgumentError, match="takes a module"):
        pyburn.store.save(full.state_dict(), path, adapter=HalfPrecision())


class InOutLinear(Adapter):
    """A custom adapter: files that store Linear weights as (in_features, out_features)
    (as JAX and Burn do) load into pyburn's (out, in) layout, and are saved back that way."""

    def load(self, entry):
        if entry.value is not None and entry.module_is([pnn.Linear]) and entry.name == "weight":
            return dataclasses.replace(entry, value=entry.value.map(lambda w: w.T,
                                                                    entry.value.shape[::-1]))
        return entry


def test_a_custom_layout_adapter():
    torch.manual_seed(2)
    model = tnn.Sequential(tnn.Linear(4, 3), tnn.ReLU(), tnn.Linear(3, 2))
    flipped = {k: (v.t().contiguous() if k.endswith("weight") else v)
               for k, v in model.state_dict().items()}
    twin = pnn.Sequential(pnn.Linear(4, 3), pnn.ReLU(), pnn.Linear(3, 2))
    with pytest.raises(pyburn.ArgumentError, match="shape mismatch for '0.weight'"):
        twin.load_from(saved(flipped))
    assert twin.load_from(saved(flipped), adapter=InOutLinear()).all_matched
    x = torch.randn(5, 4)
    close(twin(pyburn.tensor(x.numpy())), model(x))


def test_element_types_pyburn_cannot_hold_refuse_before_loading():
    sd = {"weight": torch.ones(2, 2, dtype=torch.complex64), "bias": torch.ones(2)}
    layer = pnn.Linear(2, 2)
    before = layer.bias.numpy().copy()
    with pytest.raises(pyburn.DTypeError, match="complex"):
        layer.load_from(saved(sd))
    np.testing.assert_array_equal(layer.bias.numpy(), before)


def test_safetensors_stores(tmp_path):
    safetensors_torch = pytest.importorskip("safetensors.torch")
    model = trained_resnet()
    path = tmp_path / "resnet.safetensors"
    safetensors_torch.save_file({k: v.contiguous() for k, v in model.state_dict().items()},
                                str(path), metadata={"source": "torch"})
    store = SafetensorsStore(path)
    assert store.metadata == {"source": "torch"} and set(store) == set(model.state_dict())
    twin = resnet(pnn, pnn.functional.relu).eval()
    assert twin.load_from(path).all_matched
    x = torch.randn(2, 3, 8, 8)
    close(twin(pyburn.tensor(x.numpy())), model(x))
    ckpt = tmp_path / "run.ckpt"
    pyburn.store.save_checkpoint(ckpt, model=twin, epoch=2)
    again = resnet(pnn, pnn.functional.relu).eval()
    assert again.load_from(ckpt, top_level_key="model").all_matched
    close(again(pyburn.tensor(x.numpy())), model(x))


def test_loading_a_100_mb_file_keeps_memory_flat(tmp_path):
    """Listing reads only the pickle; reading tensors one after the other, or loading them
    into a model, holds one file tensor at a time: beyond what the model keeps, the peak of
    Python-tracked memory stays near one tensor (4 MB), not the file (100 MB)."""
    torch.manual_seed(3)
    layers, width = 25, 1024
    path = tmp_path / "big.pt"
    torch.save({f"{i}.weight": torch.randn(width, width) for i in range(layers)}, path)
    assert path.stat().st_size > 100e6
    model = pnn.Sequential(*[pnn.Linear(width, width, bias=False, device="cpu")
                             for _ in range(layers)])
    tracemalloc.start()
    try:
        store = load_pytorch(path)
        keys = list(store)
        listing_peak = tracemalloc.get_traced_memory()[1]
        tracemalloc.reset_peak()
        for key in keys:
            store.tensor(key)
        reading_peak = tracemalloc.get_traced_memory()[1]
        tracemalloc.reset_peak()
        start = tracemalloc.get_traced_memory()[0]
        result = model.load_from(store)
        kept, loading_peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    one_tensor = width * width * 4
    assert len(keys) == layers and result.all_matched
    assert listing_peak < 1e6, listing_peak
    assert reading_peak < 3 * one_tensor, reading_peak
    assert kept - start > 0.9 * layers * one_tensor  # the model now holds the new weights
    assert loading_peak - kept < 3 * one_tensor, loading_peak - kept
    reference = torch.load(path)
    np.testing.assert_array_equal(model[24].weight.numpy(), reference["24.weight"].numpy())
