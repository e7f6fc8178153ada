"""Your own kernels: written once in Python (pyburn.kernel), run on every device. Here a
fused GELU and a histogram with atomics, on the default device and on pure Python (flex),
which must agree."""

import pyburn
from pyburn.kernel import Tensor, atomic_add, f32, global_id, i32, tanh


@pyburn.kernel
def gelu(out: Tensor[f32], x: Tensor[f32], n: i32):
    i = global_id(0)
    if i < n:
        v = x[i]
        out[i] = 0.5 * v * (1.0 + tanh(0.7978845608 * (v + 0.044715 * v * v * v)))


@pyburn.kernel
def histogram(counts: Tensor[i32], values: Tensor[i32], n: i32):
    i = global_id(0)
    if i < n:
        atomic_add(counts, values[i], 1)


def run(device):
    x = pyburn.linspace(-3.0, 3.0, 7, device=device)
    values = pyburn.tensor([3, 1, 4, 1, 5, 9, 2, 6, 5, 3, 5], dtype=pyburn.int32,
                           device=device)
    y = gelu[1, 64]((7,), x, 7)
    counts = histogram[1, 64]((10,), values, values.numel())
    return [round(v, 4) for v in y.tolist()], counts.tolist()


here, flex = run(pyburn.device()), run("flex")
print("gelu:     ", here[0])
print("histogram:", here[1])
print("the default device and flex agree:", here == flex)
