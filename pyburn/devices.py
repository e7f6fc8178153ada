"""Devices: where a tensor lives and which backend computes on it.

Backends register themselves: each module in ``pyburn/backends/`` that defines
``REGISTRATION`` (a `pyburn.backends.base.Registration`: name, availability check,
constructor, rank) is a device kind, found the first time a device is asked for. There is
no list to edit.
"""

from __future__ import annotations

import functools
import importlib
import os
import pkgutil
from dataclasses import dataclass, field

from . import backends
from .backends.base import Backend, Registration
from .errors import DeviceError

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
    #: where a device of an addressed kind is ("ws://host:3000" of "remote+ws://host:3000")
    address: str = ""

    @property
    def caps(self) -> frozenset[str]:
        """Optional capabilities of the backend (dtypes beyond the defaults, ...)."""
        return self.backend.caps

    @property
    def name(self) -> str:
        """The device string that `pyburn.device` accepts ("cpu", "wgpu:1",
        "autodiff+cpu")."""
        if self.address:
            plain = f"{self.kind}+{self.address}"
        else:
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

    def __reduce__(self) -> tuple[object, tuple[str]]:
        # by name: unpickled (in a distributed worker, say) it is that process's own device
        return (device, (self.name,))


_devices: dict[tuple[str, int | str, bool], Device] = {}
_default: Device | None = None


@functools.cache
def registrations() -> dict[str, Registration]:
    """Every backend kind, by name: the modules of ``pyburn/backends/`` that define
    ``REGISTRATION``."""
    found = {}
    for module_info in pkgutil.iter_modules(backends.__path__):
        module = importlib.import_module(f"{backends.__name__}.{module_info.name}")
        registration = getattr(module, "REGISTRATION", None)
        if isinstance(registration, Registration):
            if registration.name != module_info.name:
                raise DeviceError(f"pyburn.backends.{module_info.name} registers itself as "
                                  f"{registration.name!r}: a kind is its module's name")
            found[registration.name] = registration
    return found


def _registration(kind: str) -> Registration:
    found = registrations()
    if kind not in found:
        listed = ", ".join(sorted(k for k, r in found.items() if r.rank is not None))
        raise DeviceError(f"unknown device kind {kind!r}; known: {listed}")
    return found[kind]


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
        key = (base.kind, base.address or base.index, True)
        if key not in _devices:
            _devices[key] = Device(base.kind, base.index, base.backend, is_autodiff=True,
                                   address=base.address)
        return _devices[key]
    if "+" in spec:
        return _addressed(spec)
    kind, _, index_text = spec.partition(":")
    try:
        index = int(index_text) if index_text else 0
    except ValueError:
        raise DeviceError(f"bad device index in {spec!r}: expected e.g. 'wgpu:1'") from None
    key = (kind, index, False)
    if key in _devices:
        return _devices[key]
    registration = _registration(kind)
    if registration.connect is not None:
        raise DeviceError(f"a {kind} device is named by its address, e.g. "
                          f"'{kind}+ws://127.0.0.1:3000'")
    _check_available(registration, spec)
    found = _devices[key] = Device(kind, index, registration.create(index))
    return found


def _check_available(registration: Registration, spec: str) -> None:
    reason = registration.unavailable_reason()
    if reason:
        raise DeviceError(f"device {spec!r} is not available: {reason}")


def _addressed(spec: str) -> Device:
    """The device of an addressed kind, "kind+address", connected on first use."""
    kind, _, address = spec.partition("+")
    key = (kind, address, False)
    if key in _devices:
        return _devices[key]
    registration = _registration(kind)
    if registration.connect is None:
        raise DeviceError(f"{kind!r} devices are named by an index ('{kind}:1'), not an "
                          f"address: {spec!r}")
    _check_available(registration, spec)
    found = _devices[key] = Device(kind, 0, registration.connect(address), address=address)
    return found


def device_report() -> list[tuple[str, str | None]]:
    """(kind, reason it is unavailable or None) for every ranked backend, fastest first
    (kinds chosen only by name, such as "wgpu_nofusion", are left out)."""
    ranked = [(r.place(), name, r) for name, r in registrations().items() if r.rank is not None]
    return [(name, r.unavailable_reason()) for _, name, r in sorted(ranked, key=lambda t: t[:2])]


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
