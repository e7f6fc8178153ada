"""Fusion shared by the backends that generate kernels: a graph of lazy tensors (`lazy`),
the decorator that records elementwise ops into it (`recorder.LazyBackend`), and the planning
common to their code generators (`plan`). wgpu's kernels are WGSL
(``pyburn/backends/wgpu/fusion``), wasm's WebAssembly (``pyburn/backends/wasm/fusion.py``).
See docs/fusion.md."""

from __future__ import annotations

import os


def enabled() -> bool:
    """Whether the backends that fuse (wgpu, wasm) wrap themselves in their fusion
    decorator: yes unless $PYBURN_FUSION is "0" (or "false", "off", "no")."""
    return os.environ.get("PYBURN_FUSION", "1").strip().lower() not in ("0", "false", "off", "no")
