"""One command for a machine with a real GPU: ``python -m pyburn.bench.gpu_check``.

Installs nothing and finishes in well under five minutes. It measures, on the default wgpu
adapter and in the same process:

- matmul 4096³ float32, TFLOP/s, against PyTorch's cuBLAS float32 (TF32 off) when torch
  with CUDA is importable (goal: at least 0.5 of cuBLAS);
- the MNIST CNN's 32 -> 64 3x3 convolution forward, TFLOP/s per conv kernel, against cuDNN;
- MNIST CNN training steps per second (batch 64, Adam), against PyTorch CUDA;

and prints a table. Peers that are missing are reported as such. ``--size``, ``--steps``
and ``--batch`` shrink the run (the smoke test uses them on a software adapter).
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable
from typing import Any

import pyburn

from ..backends.wgpu.conv import VARIANTS as CONV_VARIANTS
from ..backends.wgpu.matmul import VARIANTS
from .gpu import conv_call, matmul_call
from .inputs import Floats
from .train import labels_for, pyburn_trainer, torch_trainer

#: products per timed run, so that the final read's round trip is a small share of it
CALLS = 4


def _seconds(fn: Callable[[], object], sync: Callable[[], object], repeat: int) -> float:
    """Median seconds of `fn` over `repeat` runs, each ended by `sync` (after one warm-up)."""
    fn()
    sync()
    runs = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        sync()
        runs.append(time.perf_counter() - start)
    return sorted(runs)[len(runs) // 2]


def _cuda_torch() -> Any:
    try:
        import torch  # optional: torch, the peer
    except ImportError:
        return None
    return torch if torch.cuda.is_available() else None


def _kernel_rows(tflop: float, repeat: int, calls: dict[str, Callable[[], None]],
                 theirs: Callable[[], object] | None, peer: str) -> list[tuple[str, str]]:
    """(pyburn, peer) cells in TFLOP/s for each kernel variant's call in `calls`, against
    `theirs` (a CUDA call of PyTorch's, or None where it is missing) named `peer`."""
    peer_speed = None
    if theirs is not None:
        torch = _cuda_torch()
        peer_speed = tflop / _seconds(lambda: [theirs() for _ in range(CALLS)],
                                      torch.cuda.synchronize, repeat)
    cells = []
    for call in calls.values():
        ours = tflop / _seconds(call, lambda: None, repeat)
        cells.append((f"{ours:.3f} TFLOP/s", "torch CUDA not available" if peer_speed is None
                      else f"{peer_speed:.2f} TFLOP/s ({peer}), ratio {ours / peer_speed:.2f}"))
    return cells


def matmul_rows(size: int, repeat: int) -> list[tuple[str, str, str]]:
    """(case, pyburn, peer) rows of matmul ``size``³ float32, one per kernel variant,
    against cuBLAS (TF32 off); each timed run issues `CALLS` products and waits for the
    last."""
    torch, theirs = _cuda_torch(), None
    if torch is not None:
        torch.backends.cuda.matmul.allow_tf32 = False
        ta, tb = (torch.rand(size, size, device="cuda") for _ in range(2))

        def theirs() -> object:
            return ta @ tb
    calls = {v: matmul_call(size, v, CALLS) for v in VARIANTS}
    cells = _kernel_rows(2 * size**3 / 1e12 * CALLS, repeat, calls, theirs, "cuBLAS f32")
    return [(f"matmul {v} {size}³ f32", *c) for v, c in zip(calls, cells)]


def conv_rows(batch: int, repeat: int) -> list[tuple[str, str, str]]:
    """(case, pyburn, peer) rows of the MNIST CNN's 32 -> 64 3x3 convolution forward at
    `batch`, one per conv kernel variant, against cuDNN (TF32 off)."""
    torch, theirs = _cuda_torch(), None
    if torch is not None:
        torch.backends.cudnn.allow_tf32 = False
        tx = torch.rand(batch, 32, 26, 26, device="cuda")
        tw = torch.rand(64, 32, 3, 3, device="cuda")

        def theirs() -> object:
            return torch.nn.functional.conv2d(tx, tw)
    calls = {v: conv_call(batch, v, CALLS) for v in CONV_VARIANTS}
    tflop = 2 * batch * 64 * 24 * 24 * 32 * 9 / 1e12 * CALLS
    cells = _kernel_rows(tflop, repeat, calls, theirs, "cuDNN f32")
    return [(f"conv 32->64 3x3 {v}, batch {batch}", *c) for v, c in zip(calls, cells)]


def training_rows(steps: int, batch: int = 64) -> list[tuple[str, str, str]]:
    """(case, pyburn, peer) rows of MNIST CNN training steps per second."""
    images = Floats.random((batch, 1, 28, 28), seed=1)
    labels = labels_for(batch)
    model, step = pyburn_trainer("cnn", images, labels, device="wgpu")
    first = next(iter(model.parameters()))
    ours = steps / _seconds(lambda: [step() for _ in range(steps)],
                            lambda: first.sum().item(), 1)
    torch = _cuda_torch()
    peer = "torch CUDA not available"
    if torch is not None:
        _, their_step = torch_trainer("cnn", images, labels, torch, device="cuda")
        theirs = steps / _seconds(lambda: [their_step() for _ in range(steps)],
                                  torch.cuda.synchronize, 1)
        peer = f"{theirs:.1f} steps/s (torch CUDA), ratio {ours / theirs:.2f}"
    return [(f"MNIST CNN train, batch {batch}", f"{ours:.1f} steps/s", peer)]


def main(argv: list[str] | None = None) -> int:
    """Run the checks and print the table; returns the exit status."""
    parser = argparse.ArgumentParser(prog="python -m pyburn.bench.gpu_check",
                                     description=__doc__.split("\n\n")[0])
    parser.add_argument("--size", type=int, default=4096, help="matmul size (default 4096)")
    parser.add_argument("--steps", type=int, default=50, help="training steps (default 50)")
    parser.add_argument("--repeat", type=int, default=5, help="timed matmuls (default 5)")
    parser.add_argument("--batch", type=int, default=64, help="training batch (default 64)")
    args = parser.parse_args(argv)
    dev = pyburn.device("wgpu")
    print(f"adapter: {dev.backend!r}")
    rows = (matmul_rows(args.size, args.repeat) + conv_rows(args.batch, args.repeat)
            + training_rows(args.steps, args.batch))
    widths = [max(len(r[i]) for r in rows) for i in range(3)]
    for row in rows:
        print("  ".join(cell.ljust(w) for cell, w in zip(row, widths)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
