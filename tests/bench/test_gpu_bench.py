"""Smoke tests of ``pyburn bench gpu`` and ``python -m pyburn.bench.gpu_check`` at tiny sizes:
they run and report every row (timings are never asserted)."""

from __future__ import annotations

import pytest

pytest.importorskip("numpy")

from pyburn.backends import wgpu  # noqa: E402
from pyburn.backends.wgpu.conv import VARIANTS as CONV_VARIANTS  # noqa: E402
from pyburn.backends.wgpu.matmul import VARIANTS  # noqa: E402
from pyburn.bench import gpu, gpu_check, peers, select  # noqa: E402
from pyburn.bench.timing import Settings  # noqa: E402

if wgpu.unavailable_reason():
    pytest.skip(wgpu.unavailable_reason(), allow_module_level=True)


def test_bench_gpu_reports_every_kernel_variant_fusion_and_latency():
    assert [b.name for b in select(["gpu"])] == ["gpu.wgpu"]
    rows = gpu.measure_wgpu(Settings(repeat=1, warmup=0, min_run_s=0.0, quick=True))
    from pyburn.backends.wgpu.matmul import VARIANTS

    cases = [r.case for r in rows]
    assert len([c for c in cases if c.startswith("matmul")]) == (len(VARIANTS)
                                                               * len(gpu.MATMUL_QUICK))
    assert [c.split(":")[0] for c in cases][-2:] == ["fusion", "latency"]
    assert {r.benchmark for r in rows} == {"gpu.wgpu"}
    assert all(r.value > 0 and r.peer_value and r.peer_value > 0 for r in rows)


def test_gpu_check_prints_a_table(capsys):
    assert gpu_check.main(["--size", "32", "--steps", "1", "--repeat", "1", "--batch", "2"]) == 0
    out = capsys.readouterr().out
    assert "MNIST CNN train" in out
    assert all(f"matmul {variant} 32³ f32" in out for variant in VARIANTS)
    assert all(f"conv 32->64 3x3 {variant}, batch 2" in out for variant in CONV_VARIANTS)


def test_without_numpy_the_matmul_rows_have_no_peer(monkeypatch):
    monkeypatch.setitem(peers._loaded, "numpy", None)  # as in a web page
    rows = gpu.measure_wgpu(Settings(repeat=1, warmup=0, min_run_s=0.0, quick=True))
    matmuls = [r for r in rows if r.case.startswith("matmul")]
    assert matmuls and all(r.peer_value is None and r.ratio is None for r in matmuls)
    assert all(r.value > 0 for r in rows)
