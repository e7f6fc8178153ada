"""Files written by torch.save (torch==2.13.0, generated here) read without torch: every dtype
in both formats, CUDA-located storages, shared storages and strided views, big-endian
files, nested containers and checkpoints; torch.load is the reference throughout."""

from __future__ import annotations

import collections
import io

import pytest

import pyburn
from pyburn.store import load_pytorch
from pyburn.store.pytorch import PytorchTensor

from .torch_files import (
    NONE,
    big_endian,
    dct,
    glob,
    legacy_file,
    num,
    pkl,
    relocate,
    tensor,
    text,
    tup,
    zip_file,
)

torch = pytest.importorskip("torch")
np = pytest.importorskip("numpy")

FORMATS = {"zip": True, "legacy": False}


def saved(obj, fmt: str = "zip") -> bytes:
    buf = io.BytesIO()
    torch.save(obj, buf, _use_new_zipfile_serialization=FORMATS[fmt])
    return buf.getvalue()


def expected(t) -> np.ndarray:
    """What pyburn documents for a torch tensor's dtype (docs/store.md): its own dtype, or
    the narrowest exact one pyburn has."""
    widen = {torch.bfloat16: torch.float32, torch.int8: torch.int32, torch.int16: torch.int32,
             torch.uint16: torch.int32, torch.uint32: torch.int64, torch.uint64: torch.int64}
    if t.dtype in widen:
        return t.to(widen[t.dtype]).numpy()
    if t.dtype.is_floating_point and t.element_size() == 1:  # the float8 types
        return t.float().numpy()
    return t.numpy()


def assert_same(got: pyburn.Tensor, want) -> None:
    want = expected(want)
    assert got.shape == want.shape
    np.testing.assert_array_equal(got.numpy(), want)  # NaN equals NaN here
    assert got.numpy().dtype == want.dtype


def every_dtype() -> dict[str, object]:
    """One tensor per dtype torch can save and pyburn can hold, with extreme values."""
    gen = torch.Generator().manual_seed(0)
    out = {}
    for dt in (torch.float32, torch.float64, torch.float16, torch.bfloat16):
        info = torch.finfo(dt)
        x = torch.randn(3, 5, generator=gen).to(dt)
        x[0, :5] = torch.tensor([info.max, info.min, info.tiny, float("inf"), float("nan")])
        out[str(dt)] = x
    for dt in (torch.int8, torch.int16, torch.int32, torch.int64, torch.uint8):
        info = torch.iinfo(dt)
        out[str(dt)] = torch.tensor([[info.min, -1 if info.min else 0, 0, 1, info.max]],
                                    dtype=dt)
    for dt, top in ((torch.uint16, 2**16 - 1), (torch.uint32, 2**32 - 1),
                    (torch.uint64, 2**63 - 1)):
        out[str(dt)] = torch.tensor([0, 1, top]).to(dt)
    out["torch.bool"] = torch.tensor([[True, False], [False, True]])
    for dt in (torch.float8_e4m3fn, torch.float8_e5m2, torch.float8_e4m3fnuz,
               torch.float8_e5m2fnuz, torch.float8_e8m0fnu):
        out[str(dt)] = torch.arange(256, dtype=torch.uint8).view(dt)  # every bit pattern
    out["scalar"] = torch.tensor(2.5)
    out["empty"] = torch.zeros(0, 3)
    return out


@pytest.mark.parametrize("fmt", FORMATS)
def test_every_dtype(fmt):
    tensors = every_dtype()
    store = load_pytorch(saved(tensors, fmt), device="cpu")
    assert list(store) == list(tensors)
    for key, want in tensors.items():
        assert store[key].shape == tuple(want.shape)
        assert_same(store.tensor(key), want)


@pytest.mark.parametrize("fmt", FORMATS)
def test_complex_tensors_list_but_do_not_load(fmt):
    store = load_pytorch(saved({"z": torch.ones(2, dtype=torch.complex64),
                                "w": torch.ones(2, dtype=torch.complex128)}, fmt))
    assert store["z"].element.name == "C64" and store["w"].shape == (2,)
    with pytest.raises(pyburn.DTypeError, match="tensor 'z' has element type C64"):
        store.tensor("z")


@pytest.mark.parametrize("fmt", FORMATS)
def test_cuda_located_storages_load_on_the_cpu(fmt):
    tensors = {"w": torch.randn(3, 4), "b": torch.arange(5)}
    data = relocate(saved(tensors, fmt), "cuda:0")
    assert b"cuda:0" in data
    store = load_pytorch(data, device="cpu")
    assert {store[k].location for k in store} == {"cuda:0"}
    reference = torch.load(io.BytesIO(data), map_location="cpu")
    for key, want in tensors.items():
        assert_same(store.tensor(key), want)
        assert torch.equal(reference[key], want)


@pytest.mark.parametrize("fmt", FORMATS)
def test_shared_storages_and_strided_views(fmt):
    base = torch.arange(60, dtype=torch.float32).reshape(3, 4, 5)
    views = {
        "base": base, "transposed": base.transpose(0, 2), "permuted": base.permute(1, 2, 0),
        "row": base[1], "offset_slice": base[1:, 2:, 1:4], "stepped": base[:, ::2, ::3],
        "column": base[:, :, 3], "narrow_t": base[2].t()[1:4], "expanded": base[0, 0, :1]
        .expand(4, 7), "diagonal": base[0].diagonal(), "flat_tail": base.view(-1)[55:],
        "tied": base,
    }
    data = saved(views, fmt)
    store = load_pytorch(data, device="flex")
    storages = {id(store[k].storage) for k in store}
    assert len(storages) == 1, "every view shares the one storage"
    assert not store["transposed"].is_contiguous() and store["row"].offset == 20
    for key, want in views.items():
        assert_same(store.tensor(key), want)
    weights = {"a": torch.randn(64, 3).t(), "b": torch.randn(2, 3, 4, 5).permute(3, 1, 0, 2),
               "c": torch.randn(40, 2).t()[:, 5:30:3]}  # gather's loop picks its axis
    store = load_pytorch(saved(weights, fmt), device="flex")
    for key, want in weights.items():
        assert_same(store.tensor(key), want)


def test_a_view_reads_only_its_own_bytes(tmp_path):
    big = torch.randn(1000, 1000)
    torch.save({"big": big, "row": big[500]}, tmp_path / "x.pt")
    row = load_pytorch(tmp_path / "x.pt")["row"]
    reads: list[int] = []
    original = row.storage.reader
    row.storage.reader = lambda begin, n: reads.append(n) or original(begin, n)
    assert len(row.read()) == 4000 and reads == [4000]


def test_big_endian_files():
    tensors = {"f32": torch.randn(3, 4), "f64": torch.randn(5).double(),
               "f16": torch.randn(6).half(), "bf16": torch.randn(2, 3).bfloat16(),
               "i64": torch.arange(-3, 3), "i16": torch.tensor([-2, 300], dtype=torch.int16),
               "u8": torch.arange(7, dtype=torch.uint8), "view": None}
    tensors["view"] = tensors["f32"].t()[1:]
    data = saved(tensors)
    itemsizes = {t.storage.key: t.element.bits // 8 for t in load_pytorch(data).values()}
    swapped = big_endian(data, itemsizes)
    reference = torch.load(io.BytesIO(swapped))  # torch swaps them back too
    store = load_pytorch(swapped, device="cpu")
    assert store.metadata["byteorder"] == "big"
    for key, want in tensors.items():
        assert torch.equal(reference[key], want)
        assert_same(store.tensor(key), want)


@pytest.mark.parametrize("fmt", FORMATS)
def test_nested_containers(fmt):
    w = torch.randn(2, 2)
    obj = {"encoder": collections.OrderedDict([("0", {"weight": w}), ("1", [w * 2, (w * 3,)])]),
           "step": 7, "name": "run", "lr": 0.5, "flags": {True, False}, "sizes": torch.Size([2]),
           "dev": torch.device("cuda", 1), "dtype": torch.bfloat16, 3: {"x": w[0]},
           "raw": b"\x00\xff", "nothing": None}
    store = load_pytorch(saved(obj, fmt), device="flex")
    assert list(store) == ["encoder.0.weight", "encoder.1.0", "encoder.1.1.0", "3.x"]
    assert_same(store.tensor("encoder.1.1.0"), w * 3)
    tree = store.tree
    assert tree["step"] == 7 and tree["name"] == "run" and tree["flags"] == {True, False}
    assert tree["sizes"] == (2,) and tree["dev"] == "cuda:1" and tree["raw"] == b"\x00\xff"
    assert isinstance(tree["encoder"]["0"]["weight"], PytorchTensor)


def test_a_model_state_dict_keeps_its_metadata():
    model = torch.nn.Sequential(torch.nn.Linear(2, 3), torch.nn.BatchNorm1d(3))
    store = load_pytorch(saved(model.state_dict()))
    assert list(store) == list(model.state_dict())
    assert store.tree.attributes["_metadata"]["1"] == {"version": 2}


@pytest.mark.parametrize("fmt", FORMATS)
def test_top_level_keys(fmt):
    sd = {"fc.weight": torch.randn(3, 2), "fc.bias": torch.randn(3)}
    optimizer = {"state": {0: {"exp_avg": torch.zeros(3, 2), "step": torch.tensor(4.0)}},
                 "param_groups": [{"lr": 0.1, "betas": (0.9, 0.999), "params": [0, 1]}]}
    for key in ("state_dict", "model", "model_state_dict"):
        store = load_pytorch(saved({key: sd, "optimizer": optimizer, "epoch": 3}, fmt))
        assert store.top_level_key == key and list(store) == list(sd)
    plain = load_pytorch(saved(sd, fmt))
    assert plain.top_level_key == "" and list(plain) == list(sd)
    whole = load_pytorch(saved({"model": sd, "epoch": 1}, fmt), top_level_key="")
    assert list(whole) == ["model.fc.weight", "model.fc.bias"]
    chosen = load_pytorch(saved({"model": sd, "state_dict": sd}, fmt), top_level_key="model")
    assert list(chosen) == list(sd)
    with pytest.raises(pyburn.ArgumentError, match="several top-level keys \\('state_dict', "
                                                   "'model'\\); pass top_level_key="):
        load_pytorch(saved({"model": sd, "state_dict": sd}, fmt))
    with pytest.raises(pyburn.ArgumentError, match="no tensors under the top-level key 'ema'"
                                                   "; its top-level keys are 'model'"):
        load_pytorch(saved({"model": sd}, fmt), top_level_key="ema")
    optim = load_pytorch(saved({"model": sd, "optimizer": optimizer}, fmt),
                         top_level_key="optimizer")
    assert list(optim) == ["state.0.exp_avg", "state.0.step"]


@pytest.mark.parametrize("fmt", FORMATS)
def test_parameters_and_a_single_tensor(fmt):
    p = torch.nn.Parameter(torch.randn(3))
    store = load_pytorch(saved({"p": p}, fmt), device="flex")
    assert store["p"].requires_grad
    assert_same(store.tensor("p"), p.detach())
    single = load_pytorch(saved(torch.arange(3), fmt), device="flex")
    assert list(single) == [""] and single.tensor("").tolist() == [0, 1, 2]


def test_legacy_storage_views_and_hand_built_files_match_torch():
    """Files from before PyTorch 0.4 describe views of storages in their persistent IDs
    (view key, offset, size); torch.load still reads them, and so does pyburn."""
    root = (text("storage"), glob("torch", "FloatStorage"), text("root"), text("cpu"), num(6))
    view = tup(*root, tup(text("view"), num(2), num(3))) + b"Q"  # elements 2 to 4 of root
    plain = tup(*root, NONE) + b"Q"
    body = pkl(dct((text("v"), tensor(view, 1, (2,), (1,))),
                   (text("all"), tensor(plain, 0, (6,), (1,)))))
    values = np.arange(6, dtype="<f4")
    data = legacy_file(body, {"root": (6, values.tobytes())})
    reference = torch.load(io.BytesIO(data))
    store = load_pytorch(data, device="flex")
    assert store.tensor("v").tolist() == reference["v"].tolist() == [3.0, 4.0]
    assert store.tensor("all").tolist() == reference["all"].tolist()
    built = zip_file(pkl(dct((text("t"), tensor(
        tup(text("storage"), glob("torch", "DoubleStorage"), text("0"), text("cpu"), num(4))
        + b"Q", 1, (3,), (1,))))), {"0": np.arange(4.0).tobytes()}, prefix="anything_at_all")
    assert torch.load(io.BytesIO(built))["t"].tolist() == [1.0, 2.0, 3.0]
    store = load_pytorch(built, device="flex")
    assert store.metadata["archive"] == "anything_at_all"
    assert store.tensor("t").tolist() == [1.0, 2.0, 3.0]


def test_sources_paths_bytes_and_file_objects(tmp_path):
    data = saved({"w": torch.arange(4)})
    path = tmp_path / "w.pth"
    path.write_bytes(data)
    with open(path, "rb") as file:
        file.seek(0)
        from_file = load_pytorch(file, device="flex")
        assert from_file.tensor("w").tolist() == [0, 1, 2, 3]
    for source in (path, str(path), data, bytearray(data), memoryview(data)):
        assert load_pytorch(source, device="flex").tensor("w").tolist() == [0, 1, 2, 3]
    with pytest.raises(pyburn.ArgumentError, match="expected a path, bytes or a binary file"):
        load_pytorch(42)
