"""ONNX in and out: export a pyburn model to ONNX bytes, load them back as a module, and turn
them into Python source. The reader and writer are pure Python, so this runs in the page
exactly as on a desktop."""

import os
import tempfile

import pyburn
import pyburn.onnx
from pyburn import nn

pyburn.manual_seed(0)
model = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 3), nn.Softmax(dim=-1))
x = pyburn.randn(2, 4)

folder = tempfile.mkdtemp()
path = os.path.join(folder, "tiny.onnx")
pyburn.onnx.export(model, x, path, dynamic_axes={"input": {0: "batch"}})
print("exported", os.path.getsize(path), "bytes")

imported = pyburn.onnx.load(path)
print(imported)
print("same outputs:", bool(pyburn.isclose(imported(x), model(x), atol=1e-6).all().item()))
print("batch of 5:", tuple(imported(pyburn.randn(5, 4)).shape))

code, weights = pyburn.onnx.convert(path, folder)
forward = open(code).read().split("def forward")[1]
print("generated forward:\n    def forward" + forward)
