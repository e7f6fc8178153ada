"""A kernel compiles once per signature: the tensors' dtypes and dims, the scalars' types and
the constants' values; launching it again with the same ones compiles nothing."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

import pyburn
from pyburn.backends import wgpu

from .sources import load


def test_a_second_launch_of_a_signature_compiles_nothing(device):
    kernel = load("""
        def k(out: Tensor[f32], x: Tensor[f32], n: i32, scale: Const):
            i = K.global_id(0)
            if i < n:
                out[i] = x[i] * scale
        """)
    x = pyburn.arange(4.0, device=device)
    assert kernel[1, 4]((4,), x, 4, 2).tolist() == [0.0, 2.0, 4.0, 6.0]
    assert kernel.compiles == 1
    kernel[1, 4]((4,), x + 1, 4, 2)  # new values, the same signature
    assert kernel.compiles == 1
    assert kernel[1, 4]((4,), x, 4, 3).tolist() == [0.0, 3.0, 6.0, 9.0]  # a new constant
    assert kernel.compiles == 2
    kernel[2, 2]((4,), x, 4, 3)  # another grid: the same kernel
    assert kernel.compiles == 2


_PROCESS = """
import pyburn
from pyburn.kernel import examples, wgsl_exec
x = pyburn.arange(8.0, device="wgpu")
print(examples.gelu(x).tolist()[3], wgsl_exec.STATS.generated, wgsl_exec.STATS.from_disk)
"""


@pytest.mark.skipif(wgpu.unavailable_reason() is not None,
                    reason="under Pyodide: no wgpu and no second process")
def test_a_second_process_finds_the_shader_on_disk(tmp_path):
    """The WGSL of a kernel is kept in $PYBURN_DATA/kernels: the next process generates
    nothing."""
    env = {**os.environ, "PYBURN_DATA": str(tmp_path)}

    def run() -> list[str]:
        done = subprocess.run([sys.executable, "-c", _PROCESS], env=env, capture_output=True,
                              text=True, timeout=120, check=True)
        return done.stdout.split()

    first, second = run(), run()
    assert first[1:] == ["1", "0"] and second[1:] == ["0", "1"]
    assert first[0] == second[0]
    assert len(list((tmp_path / "kernels").glob("*.json"))) == 1
