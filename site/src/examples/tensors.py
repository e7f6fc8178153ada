"""Tensors on the default device: WebGPU in a browser that has it, else pure Python (flex);
on a desktop, a GPU or numpy. Edit and press Run (or Ctrl+Enter)."""

import pyburn
import pyburn.nn.functional as F

x = pyburn.tensor([[1.0, 2.0], [3.0, 4.0]])
print("device:", x.device)
print("x @ x.T =", (x @ x.T).tolist())
print("softmax of the first row:", [round(v, 4) for v in F.softmax(x, dim=1)[0].tolist()])

a = pyburn.arange(12).reshape(3, 4)
print("a =", a.tolist())
print("column sums:", a.sum(dim=0).tolist())
print("row maxima:", a.amax(dim=1).tolist())
