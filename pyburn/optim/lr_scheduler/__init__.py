"""Learning-rate schedules with PyTorch's names, arguments and values, step for step.

>>> import pyburn
>>> from pyburn.optim import SGD
>>> from pyburn.optim.lr_scheduler import StepLR
>>> opt = SGD([pyburn.zeros(1, device="flex")], lr=1.0)
>>> sched = StepLR(opt, step_size=2, gamma=0.5)
>>> lrs = []
>>> for _ in range(5):
...     lrs.append(sched.get_last_lr()[0]); sched.step()    # after opt.step() in training
>>> lrs
[1.0, 1.0, 0.5, 0.5, 0.25]
"""

from __future__ import annotations

from .base import LRScheduler
from .compose import ChainedScheduler, SequentialLR
from .cosine import CosineAnnealingLR, CosineAnnealingWarmRestarts
from .factors import ConstantLR, ExponentialLR, LinearLR, MultiStepLR, NoamLR, StepLR
from .one_cycle import OneCycleLR

__all__ = ["ChainedScheduler", "ConstantLR", "CosineAnnealingLR", "CosineAnnealingWarmRestarts",
           "ExponentialLR", "LRScheduler", "LinearLR", "MultiStepLR", "NoamLR", "OneCycleLR",
           "SequentialLR", "StepLR"]
