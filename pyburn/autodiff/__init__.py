"""Automatic differentiation: switched on per device with ``pyburn.device(...).autodiff()``.

>>> import pyburn
>>> dev = pyburn.device("flex").autodiff()
>>> x = pyburn.tensor([1.0, 2.0, 3.0], device=dev, requires_grad=True)
>>> (x * x).sum().backward()
>>> x.grad.tolist()
[2.0, 4.0, 6.0]
"""

from __future__ import annotations

from ..tape import enable_grad, is_grad_enabled, no_grad
from .api import checkpoint, grad

__all__ = ["checkpoint", "enable_grad", "grad", "is_grad_enabled", "no_grad"]
