"""Capture on the wasm device: the kernels a function launches, recorded once and run again
on new input values, as a CUDA graph is. A forward pass of a small model is dozens of
kernels, each a call from Python into the engine (about 10 us through Pyodide's proxies)
after the tensor layer's own Python; its replay is one call (on the page's engine, one
JavaScript function that runs every recorded step), and only the kernels' time is left.

>>> import pyburn
>>> from pyburn.backends.wasm.capture import capture
>>> x = pyburn.tensor([[1.0, -2.0, 3.0]], device="wasm")     # doctest: +SKIP
>>> double_relu = capture(lambda t: (t * 2).relu(), x)        # doctest: +SKIP
>>> double_relu(pyburn.tensor([[-1.0, 4.0, 0.5]], device="wasm")).tolist()  # doctest: +SKIP
[[0.0, 8.0, 1.0]]

What a replay runs is what the function did at capture: the same kernels on the same
buffers, with the new inputs copied into the capture's. So the function must launch the
same kernels whatever its inputs' values (no value read back while it runs: that raises
`CaptureError`), and the tensors it reads besides its inputs (a model's weights) must stay
where they were: keep them alive, and capture again after replacing them (``load_state_dict``
does). Every buffer allocated while the function runs, and every buffer given back to the
pool meanwhile (what a pending computation read, say), is held by the capture until it is
dropped, so nothing else is handed one that a replay writes or reads. A replay's results
are copies, new tensors each time.

What does not depend on the inputs is computed once, at capture, and left out of the replay:
a call into the backend none of whose tensors came from an input (the transpose of a
linear layer's weight, a batch norm's ``sqrt(var + eps)``, a constant made from numbers)
runs unrecorded, and its result stays in its buffer as a constant of every replay, as a
frozen TorchScript module or onnxruntime's constant folding would have it. That is sound
because the backend protocol never writes into a tensor it is given: a result depends on
the call's tensors alone.
"""

from __future__ import annotations

import weakref
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any, cast

from ..._tensor import Tensor, wrap
from ...devices import Device
from ...tape import no_grad
from ..fusion.lazy import Handle
from .backend import WasmBackend, WasmTensor
from .engine import CaptureError, Engine, Step


class Captured:
    """A function's kernels on the wasm device, recorded for inputs of given shapes and
    dtypes; called with tensors like those, it returns what the function returned (a tensor
    or a tuple of them), computed by one replay."""

    def __init__(self, device: Any, plain: WasmBackend, inputs: list[WasmTensor],
                 outputs: list[WasmTensor], steps: list[Step], held: list,
                 single: bool):
        self.device = device
        self._plain = plain
        self._inputs = inputs
        self._outputs = outputs
        self._single = single
        self.steps = len(steps)
        self._replay = plain.engine.replayer(steps, [_span(x) for x in inputs],
                                             [_span(x) for x in outputs])
        # the buffers the capture keeps: its storages, and those it kept out of the pool
        weakref.finalize(self, plain.pool.give_back, held)

    def __repr__(self) -> str:
        shapes = ", ".join(f"{x.dtype.name}{list(x.shape)}" for x in self._inputs)
        return f"Captured({shapes} -> {len(self._outputs)} output(s), {self.steps} steps)"

    def __call__(self, *inputs: Tensor) -> Tensor | tuple[Tensor, ...]:
        """The function's results for `inputs`, by one replay of its kernels (which copies the
        inputs in and the results out, in the same call)."""
        if len(inputs) != len(self._inputs):
            raise CaptureError(f"captured with {len(self._inputs)} input(s), called with "
                               f"{len(inputs)}")
        backend = self.device.backend
        sources = []
        for k, (given, slot) in enumerate(zip(inputs, self._inputs)):
            if not isinstance(given, Tensor) or given.device.plain() != self.device:
                raise CaptureError(f"input {k}: expected a tensor on {self.device}, got "
                                   f"{given!r:.80}")
            if given.shape != slot.shape or given.dtype is not slot.dtype:
                raise CaptureError(f"input {k}: captured for {slot.dtype.name}"
                                   f"{list(slot.shape)}, got {given.dtype.name}"
                                   f"{list(given.shape)}")
            sources.append(self._plain.contiguous(backend.ready(given._h)))
        targets = [self._plain.empty(out.shape, out.dtype) for out in self._outputs]
        self._replay(*(x.address for x in sources), *(t.address for t in targets))
        results = tuple(wrap(t, t.shape, t.dtype, self.device) for t in targets)
        return results[0] if self._single else results

    def raw(self, *data: bytes | bytearray | memoryview) -> tuple[bytes, ...]:
        """The function's results as bytes (each one's elements, C order, little-endian) for
        inputs given the same way: no tensor is made on either side, the quickest way from
        a page's typed array to its answer (one write per input, the replay, one read per
        result)."""
        sizes = [nbytes for _, nbytes in map(_span, self._inputs)]
        if len(data) != len(sizes) or any(len(memoryview(d).cast("B")) != n
                                          for d, n in zip(data, sizes)):
            given = [len(memoryview(d).cast("B")) for d in data]
            raise CaptureError(f"captured for inputs of {sizes} bytes, given {given}")
        engine = self._plain.engine
        with engine.lock:
            for slot, d in zip(self._inputs, data):
                engine.write(slot.address, d)
            self._replay(*(x.address for x in self._inputs), *(o.address for o in self._outputs))
            return tuple(engine.read(*_span(out)) for out in self._outputs)


def capture(fn: Callable[..., Any], *examples: Tensor) -> Captured:
    """`fn`'s kernels on `examples` (tensors on the wasm device), recorded for replay on
    inputs of the same shapes and dtypes; runs `fn` once, without autodiff."""
    if not examples or not all(isinstance(x, Tensor) for x in examples):
        raise CaptureError("capture takes the function and one example tensor per input")
    device = examples[0].device.plain()
    if device.backend.name != "wasm" or any(x.device.plain() != device for x in examples):
        raise CaptureError(f"capture records the wasm device's kernels; the examples are on "
                           f"{', '.join(sorted({str(x.device) for x in examples}))}")
    backend = device.backend
    plain = cast(WasmBackend, getattr(backend, "inner", backend))
    engine, pool = plain.engine, plain.pool
    held: list = []
    steps: list[Step] = []
    with engine.lock:
        if engine.recording is not None:
            raise CaptureError("a capture is already running")
        # buffers of the capture's own for the inputs, which each replay first fills
        inputs = [_copied(plain, backend.ready(x._h)) for x in examples]
        pool.held, engine.recording = held, steps
        try:
            with no_grad(), _hoisting(device, engine, inputs):
                result = fn(*(wrap(x, x.shape, x.dtype, device) for x in inputs))
                single = isinstance(result, Tensor)
                found = [result] if single else list(result)
                if not all(isinstance(t, Tensor) for t in found):
                    raise CaptureError("the captured function must return a tensor or a "
                                       "tuple of tensors")
                outputs = [plain.contiguous(backend.ready(t._h)) for t in found]
        finally:
            pool.held, engine.recording = None, None
    return Captured(device, plain, inputs, outputs, steps, held, single)


class _Hoisting:
    """A device's backend while a capture runs: each call runs on `backend`, recorded
    where one of its tensors came from the capture's inputs (its results then do too), and
    unrecorded otherwise, its results constants of the replay."""

    def __init__(self, backend: Any, engine: Engine, inputs: list[WasmTensor]):
        self._backend, self._engine = backend, engine
        #: the handles that came from an input, by id (held: an id stays theirs)
        self._varying = {id(x): x for x in inputs}

    def __getattr__(self, name: str) -> Any:
        found = getattr(self._backend, name)
        if not callable(found):
            return found

        def call(*args: Any) -> Any:
            if any(id(h) in self._varying for h in _handles(args)):
                result = found(*args)
                self._varying.update((id(h), h) for h in _handles(result))
                return result
            steps, self._engine.recording = self._engine.recording, None
            try:
                return found(*args)
            finally:
                self._engine.recording = steps
        call.__doc__ = found.__doc__
        return call


@contextmanager
def _hoisting(device: Device, engine: Engine, inputs: list[WasmTensor]) -> Iterator[None]:
    """`device`'s backend (and its autodiff twin's, the same one) a `_Hoisting` meanwhile."""
    backend = device.backend
    twins = (device, device.autodiff())
    hoisting = _Hoisting(backend, engine, inputs)
    for twin in twins:  # a frozen dataclass: the swap is this capture's, undone below
        object.__setattr__(twin, "backend", hoisting)
    try:
        yield
    finally:
        for twin in twins:
            object.__setattr__(twin, "backend", backend)


def _handles(value: Any) -> Iterator[Any]:
    """The tensor handles in a call's arguments or results (tuples and lists searched)."""
    if isinstance(value, (WasmTensor, Handle)):
        yield value
    elif isinstance(value, (tuple, list)):
        for item in value:
            yield from _handles(item)


def _span(x: WasmTensor) -> tuple[int, int]:
    """Where a contiguous tensor's elements are: (address, bytes)."""
    return x.address, x.numel * x.size


def _copied(plain: WasmBackend, x: WasmTensor) -> WasmTensor:
    """A contiguous buffer of the capture's own holding `x`'s elements."""
    out = plain.empty(x.shape, x.dtype)
    plain.copy(out, x)
    return out


__all__ = ["CaptureError", "Captured", "capture"]
