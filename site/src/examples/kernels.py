"""Your own kernels: written once in Python (pyburn.kernel), run on every device. Here a
fused GELU, a histogram with atomics and row sums with subgroup reductions (the adapter's
subgroups where it has them), on every device pyburn finds here (WebGPU, wasm and flex in a
browser), which must agree."""

import pyburn
from pyburn.kernel import (
    Tensor,
    atomic_add,
    barrier,
    f32,
    global_id,
    group_id,
    i32,
    local_id,
    shared,
    subgroup_add,
    subgroup_id,
    subgroup_lane,
    subgroup_size,
    tanh,
)


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


@pyburn.kernel
def row_sums(out: Tensor[f32], x: Tensor[f32, 2]):
    partial = shared(f32, 64)  # a sum per subgroup
    total = subgroup_add(x[group_id(0), local_id(0)])
    if subgroup_lane() == 0:
        partial[subgroup_id()] = total
    barrier()
    if local_id(0) == 0:
        total = 0.0
        for k in range((64 + subgroup_size() - 1) // subgroup_size()):
            total += partial[k]
        out[group_id(0)] = total


def run(device):
    x = pyburn.linspace(-3.0, 3.0, 7, device=device)
    values = pyburn.tensor([3, 1, 4, 1, 5, 9, 2, 6, 5, 3, 5], dtype=pyburn.int32,
                           device=device)
    y = gelu[1, 64]((7,), x, 7)
    counts = histogram[1, 64]((10,), values, values.numel())
    sums = row_sums[2, 64]((2,), pyburn.arange(128.0, device=device).reshape(2, 64))
    return [round(v, 4) for v in y.tolist()], counts.tolist(), sums.tolist()


devices = pyburn.available_devices()  # here: WebGPU, wasm and flex; on a desktop, cpu too
first, *others = [run(device) for device in devices]
print("gelu:     ", first[0])
print("histogram:", first[1])
print("row sums: ", first[2])
print("every device agrees:", all(result == first for result in others))
