"""A short tour of the pyburn tensor API, run on every device available here.

    python examples/tensor_tour.py
"""

from __future__ import annotations

import time

import pyburn


def tour(device: pyburn.Device) -> None:
    """Create, compute, reduce, index and read back a few tensors on `device`."""
    pyburn.manual_seed(0)
    x = pyburn.arange(12, device=device).reshape(3, 4).float()
    print(f"x =\n{x}")
    print("x.T @ x row sums:", (x.T @ x).sum(dim=1).tolist())
    print("softmax of row 0:", [round(v, 4) for v in (x[0].exp() / x[0].exp().sum()).tolist()])
    print("column max (values, indices):", tuple(t.tolist() for t in x.max(dim=0)))
    print("x[x > 5] =", x[x > 5].tolist())
    print("x[[0, 2], ::2] =", x[[0, 2], ::2].tolist())
    w = pyburn.randn(4, 2, device=device)
    print("randn(4, 2) with seed 0:", [round(v, 4) for v in w.reshape(-1).tolist()])
    print("topk(3) of x.flatten():", x.flatten().topk(3).values.tolist())
    start = time.perf_counter()
    a = pyburn.rand(64, 256, device=device)
    b = pyburn.rand(256, 64, device=device)
    product = (a @ b).mean().item()
    elapsed = (time.perf_counter() - start) * 1e3
    print(f"mean of a 64x256 @ 256x64 product: {product:.4f} ({elapsed:.1f} ms)")


def main() -> None:
    """Run the tour on each available device."""
    print(f"pyburn {pyburn.__version__}; default device: {pyburn.default_device()}")
    for device in pyburn.available_devices():
        print(f"\n=== device {device.name} ===")
        tour(device)


if __name__ == "__main__":
    main()
