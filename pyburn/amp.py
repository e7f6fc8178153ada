"""Mixed-precision training: `GradScaler`, the dynamic loss scaler, and `autocast` (from
`pyburn.precision`), as in ``torch.amp``.

float16 gradients of small losses underflow to zero. The scaler multiplies the loss by a
large factor before ``backward()``, divides the (float32) gradients by it before the
update, and skips an update whose gradients hold an inf or a NaN (the factor was too large),
halving the factor then; after `growth_interval` clean steps it doubles it again.

>>> import pyburn
>>> from pyburn.amp import GradScaler, autocast
>>> from pyburn.optim import SGD
>>> dev = pyburn.device("cpu").autodiff()
>>> w = pyburn.ones(3, 3, device=dev, requires_grad=True)
>>> opt, scaler = SGD([w], lr=0.1), GradScaler()
>>> with autocast(dev):
...     loss = (pyburn.ones(2, 3, device=dev) @ w).float().mean()
>>> scaler.scale(loss).backward()
>>> scaler.step(opt)
>>> scaler.update()
>>> w.grad.dtype, round(w[0, 0].item(), 4), scaler.get_scale()
(pyburn.float32, 0.9667, 65536.0)
"""

from __future__ import annotations

from typing import Any

from ._tensor import Tensor
from .devices import Device
from .dtypes import float16, float32, promote
from .errors import ArgumentError, DTypeError
from .ops.movement import stack
from .precision import autocast
from .tape import no_grad

__all__ = ["GradScaler", "autocast"]

# where an optimizer is between two update() calls
_READY, _UNSCALED, _STEPPED = "ready", "unscaled", "stepped"


class GradScaler:
    """Scales the loss and unscales the gradients, skipping the steps whose gradients
    overflowed, with torch.amp.GradScaler's arguments, methods and scale sequence.

    One training step: ``scaler.scale(loss).backward()``, then optionally
    ``scaler.unscale_(optimizer)`` (before clipping gradients), ``scaler.step(optimizer)``
    and ``scaler.update()``. `step` reads one value from the device (whether every gradient
    is finite), one per device the parameters live on; `update` reads none. With
    ``enabled=False`` every method passes through (``scale`` returns the loss,
    ``step`` calls ``optimizer.step()``).
    """

    def __init__(self, init_scale: float = 2.0 ** 16, growth_factor: float = 2.0,
                 backoff_factor: float = 0.5, growth_interval: int = 2000,
                 enabled: bool = True):
        if not init_scale > 0:
            raise ArgumentError(f"GradScaler: init_scale must be positive, got {init_scale}")
        if not growth_factor > 1.0:
            raise ArgumentError(f"GradScaler: growth_factor must be > 1, got {growth_factor}")
        if not 0.0 < backoff_factor < 1.0:
            raise ArgumentError(f"GradScaler: backoff_factor must be in (0, 1), got "
                                f"{backoff_factor}")
        if isinstance(growth_interval, bool) or not isinstance(growth_interval, int) \
                or growth_interval < 1:
            raise ArgumentError(f"GradScaler: growth_interval must be a positive int, got "
                                f"{growth_interval!r}")
        self._enabled = bool(enabled)
        self._scale = float(init_scale)
        self._growth_factor = float(growth_factor)
        self._backoff_factor = float(backoff_factor)
        self._growth_interval = growth_interval
        self._growth_tracker = 0  # clean steps since the scale last changed
        # per optimizer (by id) since the last update(): its stage, and whether some
        # gradient overflowed: a bool tensor per device (all finite there) until read once
        self._stages: dict[int, str] = {}
        self._overflow: dict[int, dict[Device, Tensor] | bool] = {}

    # ---- the training step ------------------------------------------------------------
    def scale(self, outputs: Any) -> Any:
        """`outputs` (a tensor, or a list or tuple of them) times the current scale, in at
        least float32 (a float16 loss times 2**16 would overflow), as torch's is."""
        if not self._enabled:
            return outputs
        if isinstance(outputs, Tensor):
            return outputs.cast(promote(outputs.dtype, float32)) * self._scale
        if isinstance(outputs, (list, tuple)):
            return type(outputs)(self.scale(o) for o in outputs)
        raise ArgumentError(f"GradScaler.scale takes a tensor or a list or tuple of tensors, "
                            f"got {type(outputs).__name__}")

    def unscale_(self, optimizer: Any) -> None:
        """Divide the gradients of `optimizer`'s parameters by the scale, in place, and note
        (on the device, without reading it) whether they are all finite. Call it before
        clipping or inspecting gradients; `step` calls it otherwise. Once per optimizer per
        `update`."""
        if not self._enabled:
            return
        stage = self._stages.get(id(optimizer), _READY)
        if stage != _READY:
            raise ArgumentError("GradScaler.unscale_: " + (
                "already called on this optimizer since the last update()"
                if stage == _UNSCALED else "called after step(); call update() first"))
        inverse = 1.0 / self._scale
        flags: dict[Device, list[Tensor]] = {}
        with no_grad():
            for group in optimizer.param_groups:
                for p in group["params"]:
                    if p.grad is None:
                        continue
                    if p.grad.dtype is float16:
                        raise DTypeError("GradScaler: a parameter has float16 gradients; keep "
                                         "parameters float32 (master weights) and run the "
                                         "forward pass under pyburn.autocast")
                    p.grad.mul_(inverse)
                    flags.setdefault(p.grad.device, []).append(p.grad.isfinite().all())
        self._overflow[id(optimizer)] = {dev: stack(f).all() for dev, f in flags.items()}
        self._stages[id(optimizer)] = _UNSCALED

    def step(self, optimizer: Any, *args: Any, **kwargs: Any) -> Any:
        """Unscale `optimizer`'s gradients (unless `unscale_` did) and run
        ``optimizer.step(*args, **kwargs)`` if they are all finite; skip it otherwise.
        Returns what the optimizer's step returns, or None when skipped."""
        if not self._enabled:
            return optimizer.step(*args, **kwargs)
        if "closure" in kwargs:
            raise ArgumentError("GradScaler.step does not support a closure")
        if self._stages.get(id(optimizer), _READY) == _STEPPED:
            raise ArgumentError("GradScaler.step: already called on this optimizer since the "
                                "last update()")
        if self._stages.get(id(optimizer), _READY) == _READY:
            self.unscale_(optimizer)
        self._stages[id(optimizer)] = _STEPPED
        if self._overflowed(id(optimizer)):
            return None
        return optimizer.step(*args, **kwargs)

    def _overflowed(self, key: int) -> bool:
        """Whether some gradient of the optimizer with id `key` is inf or NaN: read once
        (one value per device), then remembered until `update`."""
        found = self._overflow[key]
        if not isinstance(found, bool):
            found = self._overflow[key] = not all(flag.item() for flag in found.values())
        return found

    def update(self, new_scale: float | None = None) -> None:
        """Set the scale for the next step: `new_scale` if given; else the scale times
        `backoff_factor` if any optimizer stepped since the last update found an inf or
        NaN, times `growth_factor` after `growth_interval` clean steps in a row, else the
        same."""
        if not self._enabled:
            return
        if new_scale is not None:
            if not new_scale > 0:
                raise ArgumentError(f"GradScaler.update: new_scale must be positive, got "
                                    f"{new_scale}")
            self._scale = float(new_scale)
        elif not self._overflow:
            raise ArgumentError("GradScaler.update: no step() or unscale_() since the last "
                                "update(), so there is nothing to adjust the scale by")
        elif any([self._overflowed(key) for key in self._overflow]):
            self._scale *= self._backoff_factor
            self._growth_tracker = 0
        else:
            self._growth_tracker += 1
            if self._growth_tracker == self._growth_interval:
                self._scale *= self._growth_factor
                self._growth_tracker = 0
        self._stages.clear()
        self._overflow.clear()

    # ---- inspection and checkpoints -----------------------------------------------
    def get_scale(self) -> float:
        """The current scale (1.0 when disabled)."""
        return self._scale if self._enabled else 1.0

    def get_growth_factor(self) -> float:
        """The factor the scale grows by after `growth_interval` clean steps."""
        return self._growth_factor

    def get_backoff_factor(self) -> float:
        """The factor the scale shrinks by after a step with an inf or NaN gradient."""
        return self._backoff_factor

    def get_growth_interval(self) -> int:
        """How many clean steps in a row make the scale grow."""
        return self._growth_interval

    def is_enabled(self) -> bool:
        """Whether the scaler scales at all."""
        return self._enabled

    def state_dict(self) -> dict[str, Any]:
        """The scale and its schedule, in torch.amp.GradScaler's keys ({} when disabled)."""
        if not self._enabled:
            return {}
        return {"scale": self._scale, "growth_factor": self._growth_factor,
                "backoff_factor": self._backoff_factor,
                "growth_interval": self._growth_interval,
                "_growth_tracker": self._growth_tracker}

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        """Take the scale and its schedule from `state_dict` (one a `state_dict` call or
        torch's GradScaler gave)."""
        if not self._enabled:
            return
        if not state_dict:
            raise ArgumentError("GradScaler.load_state_dict: the state dict is empty (it was "
                                "saved from a disabled GradScaler)")
        missing = {"scale", "growth_factor", "backoff_factor", "growth_interval",
                   "_growth_tracker"} - set(state_dict)
        if missing:
            raise ArgumentError(f"GradScaler.load_state_dict: missing {sorted(missing)}")
        self._scale = float(state_dict["scale"])
        self._growth_factor = float(state_dict["growth_factor"])
        self._backoff_factor = float(state_dict["backoff_factor"])
        self._growth_interval = int(state_dict["growth_interval"])
        self._growth_tracker = int(state_dict["_growth_tracker"])
