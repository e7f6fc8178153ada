"""`autotune`: pick among a function's constant choices (tile sizes, workgroup sizes) by
timing each on the first call for an argument signature, then keep the pick, per device
and adapter, in memory and on disk (``autotune.json`` in ``$PYBURN_DATA``, by default
``~/.cache/pyburn``, where datasets go too; in a browser, IndexedDB where the page keeps a
folder there: see `cache`), so that the next process does not time again.

>>> import pyburn
>>> from pyburn.kernel import autotune
>>> @autotune(block=[1, 2])
... def scaled(x, block):
...     return x * block / block
>>> scaled(pyburn.ones(3, device="flex")).tolist()
[1.0, 1.0, 1.0]
>>> sorted(scaled.picks.values())[0] in ({"block": 1}, {"block": 2})
True
"""

from __future__ import annotations

import functools
import itertools
import json
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from .._tensor import Tensor
from . import cache
from .ir import KernelError

#: timed calls of each choice (after one untimed call: compiles happen there)
RUNS = 3


def cache_file() -> Path | None:
    """Where picks are kept between processes (None where nothing is kept: `cache`)."""
    root = cache.folder()
    return None if root is None else root / "autotune.json"


def _stored() -> dict[str, dict[str, Any]]:
    path = cache_file()
    if path is None or not path.exists():
        return {}
    try:
        found = json.loads(path.read_text())
    except (OSError, ValueError):  # a broken file is timed anew, not an error
        return {}
    return found if isinstance(found, dict) else {}


def _store(key: str, pick: dict[str, Any]) -> None:
    path = cache_file()
    if path is not None:
        cache.write_whole(path, json.dumps({**_stored(), key: pick}, indent=1,
                                           sort_keys=True))


def _where(args: tuple) -> str:
    """The device and adapter the arguments are on (picks differ between adapters)."""
    for value in args:
        if isinstance(value, Tensor):
            backend = value.device.plain().backend
            gpu = getattr(backend, "gpu", None)
            adapter = gpu.runtime.info.name if gpu is not None else ""
            return f"{value.device.plain().name}:{adapter}"
    return "none"


def _signature(args: tuple, kwargs: dict[str, Any]) -> str:
    def one(value: Any) -> str:
        if isinstance(value, Tensor):
            return f"{value.dtype.name}{list(value.shape)}"
        return repr(value)
    return ",".join([*map(one, args), *(f"{k}={one(v)}" for k, v in sorted(kwargs.items()))])


def seconds(fn: Callable[[], Any]) -> float:
    """The best of `RUNS` timed calls of `fn`, each waited for (its result read)."""
    best = float("inf")
    for _ in range(RUNS):
        start = time.perf_counter()
        _wait(fn())
        best = min(best, time.perf_counter() - start)
    return best


def _wait(result: Any) -> None:
    """Read one element of each tensor in `result`: a GPU's work is done by then."""
    for t in result if isinstance(result, tuple) else (result,):
        if isinstance(t, Tensor) and t.numel():
            t.reshape(-1)[0].item()


class Tuned:
    """A function whose keyword constants `choices` are picked by timing, per argument
    signature and device (see the module's docstring); `picks` holds those made."""

    def __init__(self, fn: Callable[..., Any], choices: dict[str, list[Any]]):
        functools.update_wrapper(self, fn)
        self.fn = fn
        self.choices = choices
        self.picks: dict[str, dict[str, Any]] = {}

    def configurations(self) -> list[dict[str, Any]]:
        """Every combination of the choices."""
        names = list(self.choices)
        return [dict(zip(names, values)) for values in
                itertools.product(*(self.choices[n] for n in names))]

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        clash = set(kwargs) & set(self.choices)
        if clash:
            raise KernelError(f"{self.fn.__name__}: {', '.join(sorted(clash))} is picked by "
                              "autotune; do not pass it")
        key = f"{self.fn.__module__}.{self.fn.__qualname__}|{_where(args)}|" \
              f"{_signature(args, kwargs)}"
        pick = self.picks.get(key) or _stored().get(key)
        if pick is None or not any(pick == c for c in self.configurations()):
            pick = self.tune(args, kwargs)
            _store(key, pick)
        self.picks[key] = pick
        return self.fn(*args, **kwargs, **pick)

    def tune(self, args: tuple, kwargs: dict[str, Any]) -> dict[str, Any]:
        """The fastest configuration for these arguments."""
        timed = []
        for config in self.configurations():
            def call(config: dict[str, Any] = config) -> Any:
                return self.fn(*args, **kwargs, **config)
            _wait(call())  # untimed: compiles happen here
            timed.append((seconds(call), config))
        return min(timed, key=lambda pair: pair[0])[1]


def autotune(**choices: list[Any]) -> Callable[[Callable[..., Any]], Tuned]:
    """A decorator: ``@autotune(tile=[8, 16, 32])`` times each tile on the first call for an
    argument signature and device, and calls the function with the fastest from then on."""
    if not choices or not all(isinstance(v, (list, tuple)) and v for v in choices.values()):
        raise KernelError("autotune takes each constant's choices as a non-empty list")
    return lambda fn: Tuned(fn, choices)
