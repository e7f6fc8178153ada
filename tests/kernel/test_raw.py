"""`pyburn.kernel.wgsl`: a WGSL shader someone already has, run on a wgpu device with its
storage buffers bound to tensors by name."""

from __future__ import annotations

import numpy as np
import pytest

import pyburn
from pyburn.backends import wgpu
from pyburn.kernel import KernelError, wgsl

#: y = a * x + b over n elements, n and the offset of x in `info` (Burn's custom kernel
#: example passes its sizes the same way)
AXPY = """
@group(0) @binding(0) var<storage, read> x: array<f32>;
@group(0) @binding(1) var<storage, read> b: array<f32>;
@group(0) @binding(2) var<storage, read> info: array<u32>;
@group(0) @binding(3) var<storage, read_write> y: array<f32>;

@compute @workgroup_size(32)
fn main(@builtin(global_invocation_id) gid: vec3<u32>) {
    let i = gid.x;
    if (i < info[0]) {
        y[i] = bitcast<f32>(info[1]) * x[i] + b[i];
    }
}
"""

WGPU = [d for d in ("wgpu", "wgpu_nofusion") if wgpu.unavailable_reason() is None]


@pytest.mark.parametrize("name", WGPU)
def test_a_shader_runs_on_tensors_bound_by_name(name):
    rng = np.random.default_rng(0)
    x, b = (rng.standard_normal(100).astype(np.float32) for _ in range(2))
    shader = wgsl(AXPY)
    dev = pyburn.device(name)
    whole = pyburn.from_numpy(np.concatenate([np.zeros(3, np.float32), x]), device=dev)
    tx, tb = whole[3:], pyburn.from_numpy(b, device=dev)  # x a view at an offset
    scale = int(np.float32(2.5).view(np.uint32))
    y = shader[4](x=tx, b=tb, info=[100, scale], y=(100,))
    np.testing.assert_array_equal(y.numpy(), np.float32(2.5) * x + b)
    start = pyburn.full((100,), 7.0, device=dev)
    assert shader[4](x=tx, b=tb, info=[0, scale], y=start).tolist() == [7.0] * 100
    assert start.tolist() == [7.0] * 100  # the argument is not changed


def test_a_launch_that_does_not_fit_the_shader():
    shader = wgsl(AXPY)
    x = pyburn.ones(4, device="flex")
    with pytest.raises(KernelError, match="missing info"):
        shader[1](x=x, b=x, y=(4,))
    with pytest.raises(KernelError, match="unknown z"):
        shader[1](x=x, b=x, info=[4, 0], y=(4,), z=x)
    with pytest.raises(KernelError, match="runs on one wgpu device"):
        shader[1](x=x, b=x, info=[4, 0], y=(4,))
    with pytest.raises(KernelError, match="declares no @group"):
        wgsl("fn main() {}")
    with pytest.raises(KernelError, match="f32 or i32"):
        wgsl("@group(0) @binding(0) var<storage, read_write> h: array<f16>;")
