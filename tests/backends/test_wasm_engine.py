"""The wasm backend's engines (wasmtime on the desktop, the JavaScript engine under Pyodide):
a module instantiated over the engine's memory works in place on what Python wrote there,
the memory grows, and buffers come back for reuse."""

from __future__ import annotations

import struct

import pytest

from pyburn.backends.wasm import browser, native
from pyburn.backends.wasm.assemble import Function, Module
from pyburn.backends.wasm.engine import PAGE, Engine
from pyburn.backends.wasm.memory import RESERVED, Memory

ENGINES = {"native": native, "browser": browser}
AVAILABLE = [name for name, module in ENGINES.items() if module.unavailable_reason() is None]


@pytest.fixture(params=AVAILABLE)
def engine(request: pytest.FixtureRequest) -> Engine:
    return native.NativeEngine(1) if request.param == "native" else browser.BrowserEngine(1)


SCALE = Module([Function("scale", (("at", "i32"), ("n", "i32"), ("k", "f32")), """
    block $done loop $next
      local.get $n i32.eqz br_if $done
      local.get $at
      local.get $at v128.load local.get $k f32x4.splat f32x4.mul
      v128.store
      local.get $at i32.const 16 i32.add local.set $at
      local.get $n i32.const 1 i32.sub local.set $n
      br $next
    end end
    """), Function("size", (), "memory.size", results=("i32",))])


def test_a_kernel_works_in_place_on_what_python_wrote(engine):
    exports = engine.instantiate(SCALE.binary())
    values = [float(v) for v in range(-8, 8)]
    engine.write(64, struct.pack("<16f", *values))
    exports["scale"](64, 4, 0.5)
    assert list(struct.unpack("<16f", engine.read(64, 64))) == [v * 0.5 for v in values]
    assert exports["size"]() * PAGE == engine.size()


def test_memory_grows_and_buffers_are_reused(engine):
    memory = Memory(engine)
    first = memory.create_buffer(10, b"x" * 10)
    assert first >= RESERVED and first % 16 == 0
    big = memory.create_buffer(3 * PAGE)  # past the first page: the memory grows
    assert engine.size() >= big + 3 * PAGE
    assert engine.read(first, 10) == b"x" * 10
    memory.free_buffer(first)
    assert memory.create_buffer(16) == first  # the same size class comes back
    memory.write(big, 5, b"abc")
    assert engine.read(big + 5, 3) == b"abc"


def test_every_engine_here_has_simd():
    assert AVAILABLE, [module.unavailable_reason() for module in ENGINES.values()]
