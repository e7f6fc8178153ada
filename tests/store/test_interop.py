"""Files written by pyburn read by the `safetensors` package, and files written by it (numpy
and PyTorch flavours) read by pyburn, including the element types pyburn converts."""

from __future__ import annotations

import pytest

import pyburn
from pyburn import store

from .files import SAMPLES, sample

np = pytest.importorskip("numpy")
pytest.importorskip("safetensors")
from safetensors import safe_open  # noqa: E402
from safetensors.numpy import load_file as np_load_file  # noqa: E402
from safetensors.numpy import save_file as np_save_file  # noqa: E402


def _assert_same_floats(actual, expected) -> None:
    """Equal values, NaN where NaN, and the same sign on zeros."""
    np.testing.assert_array_equal(actual, expected)
    assert np.array_equal(np.signbit(actual), np.signbit(expected))


def test_safetensors_reads_every_pyburn_dtype(device, tmp_path):
    tensors = {dtype: sample(dtype, device) for dtype in SAMPLES
               if pyburn.dtypes.as_dtype(dtype) in device.backend.dtypes}
    path = tmp_path / "pyburn.safetensors"
    store.save(tensors, path, metadata={"k": 1})
    loaded = np_load_file(str(path))
    assert set(loaded) == set(tensors)
    for name, t in tensors.items():
        assert loaded[name].dtype == np.dtype("bool" if name == "bool" else name)
        assert loaded[name].shape == t.shape
        assert loaded[name].tobytes() == t.to_bytes()
    with safe_open(str(path), "np") as f:
        assert f.metadata()["pyburn.user"] == '{"k": 1}'


def test_pyburn_reads_numpy_files_of_its_own_dtypes(device, tmp_path):
    rng = np.random.default_rng(0)
    arrays = {"f32": rng.standard_normal((3, 4)).astype(np.float32),
              "f64": rng.standard_normal(5), "f16": rng.standard_normal(7).astype(np.float16),
              "i32": rng.integers(-2**31, 2**31, 6, dtype=np.int32),
              "i64": rng.integers(-2**63, 2**63 - 1, 6, dtype=np.int64),
              "u8": rng.integers(0, 256, 9, dtype=np.uint8), "b": rng.random(4) > 0.5,
              "scalar": np.array(2.5, dtype=np.float32), "empty": np.zeros((0, 3), np.int32)}
    arrays = {k: a for k, a in arrays.items()
              if pyburn.dtypes.as_dtype(a.dtype.name) in device.backend.dtypes}
    path = tmp_path / "np.safetensors"
    np_save_file(arrays, str(path), metadata={"format": "np"})
    loaded = store.load(path, device=device)
    for name, array in arrays.items():
        assert loaded[name].dtype.name == array.dtype.name
        assert loaded[name].shape == array.shape
        assert loaded[name].to_bytes() == array.tobytes()
    assert store.read_header(path).metadata == {"format": "np"}
    assert store.load_metadata(path) is None


@pytest.mark.parametrize("np_dtype, expected", [
    ("int8", "int32"), ("int16", "int32"), ("uint16", "int32"), ("uint32", "int64"),
    ("uint64", "int64")])
def test_numpy_integer_types_pyburn_lacks_are_widened(np_dtype, expected, tmp_path):
    info = np.iinfo(np_dtype)
    high = min(int(info.max), 2**63 - 1)
    values = np.array([info.min, info.min + 1, 0, 1, 7, high - 1, high], dtype=np_dtype)
    path = tmp_path / "ints.safetensors"
    np_save_file({"x": values.reshape(7, 1)}, str(path))
    loaded = store.load(path, device="flex")["x"]
    assert loaded.dtype.name == expected and loaded.shape == (7, 1)
    assert [row[0] for row in loaded.tolist()] == [int(v) for v in values]


def test_uint64_past_int64_is_refused(tmp_path):
    path = tmp_path / "u64.safetensors"
    np_save_file({"big": np.array([1, 2**63], dtype=np.uint64)}, str(path))
    with pytest.raises(pyburn.DTypeError, match="U64.*2\\*\\*63"):
        store.load(path, device="flex")


torch = pytest.importorskip("torch")
from safetensors.torch import save_file as torch_save_file  # noqa: E402

# every bit pattern of each 8- and 16-bit type, and its expected pyburn dtype
_ALL_8 = [("float8_e4m3fn", "float32"), ("float8_e5m2", "float32"),
          ("float8_e4m3fnuz", "float32"), ("float8_e5m2fnuz", "float32"),
          ("float8_e8m0fnu", "float32"), ("int8", "int32"), ("uint8", "uint8"),
          ("bool", "bool")]
_ALL_16 = [("bfloat16", "float32"), ("int16", "int32"), ("uint16", "int32"),
           ("float16", "float16")]


def _every_pattern(torch_dtype: str, bits: int):
    raw = torch.arange(2**bits, dtype=torch.int32).to(torch.uint8 if bits == 8 else torch.int16)
    if torch_dtype == "bool":
        return raw.to(torch.bool)  # torch writes bools as 0 or 1
    return raw.view(getattr(torch, torch_dtype))


@pytest.mark.parametrize("torch_dtype, expected, bits",
                         [(t, e, 8) for t, e in _ALL_8] + [(t, e, 16) for t, e in _ALL_16],
                         ids=lambda v: str(v))
def test_torch_files_load_exactly(device, torch_dtype, expected, bits, tmp_path):
    if pyburn.dtypes.as_dtype(expected) not in device.backend.dtypes:
        pytest.skip(f"{device.name} has no {expected}")
    values = _every_pattern(torch_dtype, bits)
    path = tmp_path / "torch.safetensors"
    torch_save_file({"x": values.reshape(-1, 2**(bits // 2))}, str(path))
    loaded = store.load(path, device=device)["x"]
    assert loaded.dtype.name == expected and loaded.shape == (2**(bits // 2),) * 2
    reference = values.to(getattr(torch, expected)).reshape(loaded.shape).numpy()
    if expected.startswith("float"):
        _assert_same_floats(loaded.numpy(), reference)
    else:
        np.testing.assert_array_equal(loaded.numpy(), reference)


def test_torch_uint32_and_uint64_load_as_int64(tmp_path):
    values = {"u32": torch.tensor([0, 1, 2**31, 2**32 - 1], dtype=torch.uint32),
              "u64": torch.tensor([0, 5, 2**63 - 1], dtype=torch.uint64)}
    path = tmp_path / "wide.safetensors"
    torch_save_file(values, str(path))
    loaded = store.load(path, device="flex")
    assert loaded["u32"].dtype is pyburn.int64 and loaded["u64"].dtype is pyburn.int64
    assert loaded["u32"].tolist() == [0, 1, 2**31, 2**32 - 1]
    assert loaded["u64"].tolist() == [0, 5, 2**63 - 1]


def test_a_torch_model_file_loads_with_its_metadata(device, tmp_path):
    gen = torch.Generator().manual_seed(0)
    state = {"fc.weight": torch.randn(4, 3, generator=gen).bfloat16(),
             "fc.bias": torch.randn(4, generator=gen), "steps": torch.tensor(9, dtype=torch.int16)}
    path = tmp_path / "model.safetensors"
    torch_save_file(state, str(path), metadata={"format": "pt"})
    loaded = store.load(path, device=device)
    assert loaded["fc.weight"].tolist() == state["fc.weight"].float().tolist()
    assert loaded["fc.bias"].tolist() == state["fc.bias"].tolist()
    assert loaded["steps"].dtype is pyburn.int32 and loaded["steps"].item() == 9
    assert store.read_header(path).metadata == {"format": "pt"}


def test_complex_tensors_are_refused_by_name(tmp_path):
    path = tmp_path / "c64.safetensors"
    torch_save_file({"z": torch.zeros(2, dtype=torch.complex64)}, str(path))
    with pytest.raises(pyburn.DTypeError, match="'z'.*C64.*complex"):
        store.load(path, device="flex")
    assert store.read_header(path).tensors["z"].dtype == "C64"  # the header still reads
