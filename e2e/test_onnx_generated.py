"""Code that `pyburn onnx convert` writes, run in the browser: a small PyTorch CNN exported to
ONNX with a dynamic batch (so that its shape arithmetic, a Gather of int64 indices and an
Expand stay in the graph, with int64 constants) is converted on the desktop, the folder it
wrote is served beside the site, and the playground's worker fetches it, imports it, loads its
weights and runs it on WebGPU and on flex: the outputs are those `pyburn.onnx.load` gives for
the same file on the desktop's cpu backend."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
import torch
from conftest import Watched, _watched

import pyburn
import pyburn.onnx
from pyburn.web.serve import serving

PYBURN = Path(sys.executable).parent / "pyburn"
DEVICES = ("wgpu", "flex")
#: a batch other than the exported one, so that the batch is read from the input
BATCH = 3

# The generated folder fetched into Pyodide's file system as the package `out`, as
# docs/onnx.md imports it; `base`, `files`, `devices` and `image` are set before this runs.
RUN = """
import os, sys, tempfile
import pyburn
from pyodide.http import pyfetch

root = tempfile.mkdtemp()
os.makedirs(root + "/out")
for name in files:
    data = await (await pyfetch(base + "out/" + name)).bytes()
    with open(f"{root}/out/{name}", "wb") as file:
        file.write(data)
sys.path.insert(0, root)
from out.model import Model

results = {}
with pyburn.no_grad():
    for device in devices:
        y = Model.load(root + "/out/model.safetensors", device)(pyburn.tensor(image, device=device))
        results[device] = [str(y.device), y.tolist()]
results
"""


class Net(torch.nn.Module):
    """A CNN whose head's outputs are permuted by int64 indices and added to its bias
    expanded to the batch."""

    def __init__(self) -> None:
        super().__init__()
        self.conv = torch.nn.Conv2d(1, 4, 3, padding=1)
        self.bn = torch.nn.BatchNorm2d(4)
        self.head = torch.nn.Linear(4 * 4 * 4, 5)
        self.register_buffer("order", torch.tensor([4, 0, 3, 1, 2]))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = torch.nn.functional.max_pool2d(torch.relu(self.bn(self.conv(x))), 2)
        y = self.head(y.reshape(y.shape[0], -1))[:, self.order]
        return y + self.head.bias.expand(y.shape[0], -1)


@pytest.fixture(scope="module")
def converted(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """`Net` exported by PyTorch's TorchScript exporter, the batch dynamic, and the folder
    `pyburn onnx convert` wrote from it (model.py, model.safetensors)."""
    folder = tmp_path_factory.mktemp("onnx")
    torch.manual_seed(0)
    net = Net().eval()
    net.bn.running_mean.uniform_(-0.5, 0.5)  # non-trivial statistics (folded into the conv)
    net.bn.running_var.uniform_(0.5, 1.5)
    torch.onnx.export(net, (torch.randn(2, 1, 8, 8),), str(folder / "model.onnx"),
                      dynamo=False, opset_version=17, input_names=["image"],
                      dynamic_axes={"image": {0: "batch"}})
    done = subprocess.run([str(PYBURN), "onnx", "convert", str(folder / "model.onnx"), "-o",
                           str(folder / "out")], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    return folder / "model.onnx", folder / "out"


@pytest.fixture(scope="module")
def served(site_dir: Path, converted: tuple[Path, Path]) -> Iterator[str]:
    """The base URL of a server of the site with the generated folder at /out/."""
    with serving({"/": site_dir, "/out/": converted[1]}) as base:
        yield base


@pytest.fixture(scope="module")
def watched(browser: object, served: str) -> Iterator[Watched]:
    """A watched context of the WebGPU browser on that server."""
    yield from _watched(browser, served)


@pytest.mark.filterwarnings("ignore::DeprecationWarning")  # the TorchScript exporter
def test_generated_code_runs_in_the_page_as_the_runner_on_the_desktop(
        watched: Watched, served: str, converted: tuple[Path, Path]) -> None:
    model, out = converted
    # what the test is for: int64 constants held in the device's index dtype, a Gather and an
    # Expand (were the exporter or the passes to fold them away, this would say so)
    source = (out / "model.py").read_text()
    assert "index = ops.index_dtype(device)" in source
    assert "ops.indexing.gather(" in source and "ops.shape.expand(" in source
    image = pyburn.randn(BATCH, 1, 8, 8, generator=pyburn.Generator(1), device="cpu")
    with pyburn.no_grad():
        expected = pyburn.onnx.load(model, device="cpu")(image).tolist()
    files = sorted(p.name for p in out.iterdir())
    setup = (f"base = {served!r}\nfiles = {files!r}\ndevices = {list(DEVICES)!r}\n"
             f"image = {image.tolist()!r}\n")
    page = watched.open("playground.html")
    results = page.evaluate("(code) => window.pyburn.run(code)", setup + RUN)
    assert list(results) == list(DEVICES)
    for device, (where, got) in results.items():
        assert where == device
        assert len(got) == BATCH
        for row, want in zip(got, expected):
            assert row == pytest.approx(want, rel=1e-5, abs=1e-5), device
