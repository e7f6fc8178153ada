"""Optimizers, gradient clipping, gradient accumulation and learning-rate schedules, with
PyTorch's names and semantics (``pyburn.optim.Adam`` is ``torch.optim.Adam``).

>>> import pyburn
>>> from pyburn.optim import Adam
>>> dev = pyburn.device("flex").autodiff()
>>> w = pyburn.tensor([1.0, -1.0], device=dev, requires_grad=True)
>>> opt = Adam([w], lr=0.1)
>>> for _ in range(3):
...     opt.zero_grad()
...     (w * w).sum().backward()
...     opt.step()
>>> [round(x, 2) for x in w.tolist()]
[0.7, -0.7]
"""

from __future__ import annotations

from . import lr_scheduler
from .accumulate import GradientAccumulator
from .adagrad import Adagrad
from .adam import Adam, AdamW
from .adamax import Adamax
from .clip import clip_grad_norm_, clip_grad_value_, clip_grads_with_norm_, get_total_norm
from .lion import Lion
from .optimizer import Optimizer
from .rmsprop import RMSprop
from .sgd import SGD

__all__ = ["SGD", "Adagrad", "Adam", "AdamW", "Adamax", "GradientAccumulator", "Lion",
           "Optimizer", "RMSprop", "clip_grad_norm_", "clip_grad_value_", "clip_grads_with_norm_",
           "get_total_norm", "lr_scheduler"]
