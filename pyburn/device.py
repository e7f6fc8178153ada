"""Devices: where a tensor lives and which backend computes on it.

Backends are found by file name: ``pyburn.device("flex")`` imports ``pyburn.backends.flex``,
which provides ``unavailable_reason() -> str | None`` (why it cannot run here, cheaply) and
``create(index: int) -> Backend``, and may provide ``priority() -> int`` (its place in the
default order, when that depends on the machine: wgpu comes first with a hardware adapter,
after cpu with only a software one). There is no registry to edit.
"""

from __future__ import annotations

import importlib
import os
from dataclasses import dataclass, field

from .backends.base import Backend
from .errors import DeviceError

#: backend kinds, in their usual order of speed
PREFERENCE = ("wgpu", "cpu", "flex")
#: default-device priority (lower first) of the kinds whose module has no ``priority()``
PRIORITY = {"cpu": 20, "flex": 40}
#: "autodiff+cpu" names the cpu device with gradients on
AUTODIFF_PREFIX = "autodiff+"


@dataclass(frozen=True, eq=False)
class Device:
    """A backend instance and its name, e.g. ``device('cpu')``; ``.autodiff()`` gives the
    same backend with gradient recording switched on."""

    kind: str
    index: int
    backend: Backend = field(repr=False)
    #: whether operations on this device are recorded for backward()
    is_autodiff: bool = False

    @property
    def caps(self) -> frozenset[str]:
        """Optional capabilities of the backend (dtypes beyond the defaults, ...)."""
        return self.backend.caps

    @property
    def name(self) -> str:
        """The device string that `pyburn.device` accepts ("cpu", "wgpu:1",
        "autodiff+cpu")."""
        plain = self.kind if self.index == 0 else f"{self.kind}:{self.index}"
        return f"{AUTODIFF_PREFIX}{plain}" if self.is_autodiff else plain

    def autodiff(self) -> Device:
        """This device with gradients on: tensors on it that require grad record the
        operations that use them, so ``backward()`` can run."""
        return device(AUTODIFF_PREFIX + self.name.removeprefix(AUTODIFF_PREFIX))

    def plain(self) -> Device:
        """This device with gradients off."""
        return device(self.name.removeprefix(AUTODIFF_PREFIX))

    def __repr__(self) -> str:
        return f"device({self.name!r})"

    def __str__(self) -> str:
        return self.name


_devices: dict[tuple[str, int, bool], Device] = {}
_default: Device | None = None


def _backend_module(kind: str):
    if not kind.isidentifier() or kind.startswith("_") or kind == "base":
        raise DeviceError(f"unknown device kind {kind!r}; known: {', '.join(PREFERENCE)}")
    try:
        return importlib.import_module(f".backends.{kind}", __package__)
    except ModuleNotFoundError as exc:
        if exc.name and exc.name.endswith(f"backends.{kind}"):
            raise DeviceError(f"unknown device kind {kind!r}; known: "
                              f"{', '.join(PREFERENCE)}") from None
        raise


def device(spec: str | Device | None = None) -> Device:
    """The device named by `spec`: "flex", "cpu", "cpu:0", ... (None: the default device).

    >>> import pyburn
    >>> pyburn.device("flex")
    device('flex')
    """
    if spec is None:
        return default_device()
    if isinstance(spec, Device):
        return spec
    if not isinstance(spec, str):
        raise DeviceError(f"a device is a string such as 'cpu' or 'flex', got {spec!r}")
    spec = spec.strip()
    if spec.startswith(AUTODIFF_PREFIX):
        base = device(spec.removeprefix(AUTODIFF_PREFIX))
        key = (base.kind, base.index, True)
        if key not in _devices:
            _devices[key] = Device(base.kind, base.index, base.backend, is_autodiff=True)
        return _devices[key]
    kind, _, index_text = spec.partition(":")
    try:
        index = int(index_text) if index_text else 0
    except ValueError:
        raise DeviceError(f"bad device index in {spec!r}: expected e.g. 'wgpu:1'") from None
    key = (kind, index, False)
    if key in _devices:
        return _devices[key]
    module = _backend_module(kind)
    reason = module.unavailable_reason()
    if reason:
        raise DeviceError(f"device {spec!r} is not available: {reason}")
    found = _devices[key] = Device(kind, index, module.create(index))
    return found


def _priority(kind: str) -> int:
    ranked = getattr(_backend_module(kind), "priority", None)
    return ranked() if ranked else PRIORITY[kind]


def device_report() -> list[tuple[str, str | None]]:
    """(kind, reason it is unavailable or None) for every known backend, fastest first."""
    return [(kind, _backend_module(kind).unavailable_reason())
            for kind in sorted(PREFERENCE, key=_priority)]


def available_devices() -> list[Device]:
    """Every device that works here, fastest first."""
    return [device(kind) for kind, reason in device_report() if reason is None]


def default_device() -> Device:
    """The device new tensors go to: $PYBURN_DEVICE if set, else the fastest available."""
    global _default
    if _default is None:
        wanted = os.environ.get("PYBURN_DEVICE")
        _default = device(wanted) if wanted else available_devices()[0]
    return _default


def set_default_device(spec: str | Device) -> Device:
    """Make `spec` the device new tensors go to; returns it."""
    global _default
    _default = device(spec)
    return _default
