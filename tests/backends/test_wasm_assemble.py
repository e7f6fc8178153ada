"""pyburn's WebAssembly assembler against wabt's (npm ``wabt``, under Node): the same module
text gives the same bytes, for every instruction of the opcode tables and for the
immediates' edge cases; and text it cannot take is an AssemblyError that says why."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

from pyburn.backends.wasm.assemble import AssemblyError, Function, Module
from pyburn.backends.wasm.opcodes import CORE, MISC, SIMD

ROOT = Path(__file__).resolve().parents[2]
WABT = ROOT / "node_modules" / "wabt"

#: assembles each module text of the JSON list on stdin, printing their bytes in hex
_ASSEMBLE = """
import wabtInit from "wabt";
const wabt = await wabtInit();
let input = "";
for await (const chunk of process.stdin) input += chunk;
const out = JSON.parse(input).map((text, k) => {
  const module = wabt.parseWat(`m${k}.wat`, text, {simd: true});
  module.resolveNames();
  return Buffer.from(module.toBinary({}).buffer).toString("hex");
});
console.log(JSON.stringify(out));
"""


def wabt(modules: list[Module]) -> list[bytes]:
    """What wabt makes of the modules' text (node and npm's wabt, which make test installs,
    are the reference: without them this fails, it does not skip)."""
    if shutil.which("node") is None or not WABT.is_dir():
        pytest.fail("the reference assembler is missing: node and npm's wabt (npm ci)")
    done = subprocess.run(["node", "--input-type=module", "-e", _ASSEMBLE], cwd=ROOT,
                          input=json.dumps([m.text() for m in modules]), text=True,
                          capture_output=True, timeout=60, check=True)
    return [bytes.fromhex(h) for h in json.loads(done.stdout)]


#: a sample of each kind of immediate (wabt assembles bodies without checking their types)
_SAMPLES = {"": "", "local": "$b", "global": "0", "func": "$f", "memarg": "offset=12",
            "i32": "-5", "i64": "1234567890123", "f32": "1.5", "f64": "-0.25",
            "lane": "3", "lanes16": " ".join(str(k) for k in range(16)),
            "memlane": "offset=4 2",
            "v128": "i32x4 1 -2 3 2147483647", "memory": "", "memory2": ""}


def _instruction(name: str, kind: str) -> str:
    if kind == "label":
        return f"block $out {name} $out end"
    if kind == "block":
        return f"{name} $inner end"
    if name in ("else", "end"):
        return ""  # (each comes with its block)
    return f"{name} {_SAMPLES[kind]}"


def test_every_instruction_assembles_as_wabt_assembles_it():
    tables = {**CORE, **MISC, **SIMD}
    body = "\n".join(_instruction(name, kind) for name, (_, kind) in tables.items()
                     if name not in ("global.get", "global.set"))  # (no globals: none used)
    module = Module([Function("f", (("a", "i32"), ("b", "v128")), body,
                              locals=(("x", "f32"), ("y", "f32"), ("z", "i32")))])
    assert module.binary() == wabt([module])[0]


def test_immediates_at_their_edges_assemble_as_wabt_assembles_them():
    ints = [0, 63, 64, -64, -65, 8191, -8192, 2**31 - 1, -(2**31), 0xFFFFFFFF]
    floats = ["inf", "-inf", "nan", "-0.0", "3.4028234663852886e38", "1e-45"]
    body = "\n".join([*(f"i32.const {v}" for v in ints), "i64.const -9223372036854775808",
                      *(f"f32.const {v} f64.const {v}" for v in floats),
                      "v128.const f32x4 1.5 -2 inf 0", "v128.const i8x16 " +
                      " ".join(str(v) for v in range(-8, 8)),
                      "block $a loop $b block $c br $b br $a br_if $c end end end",
                      "v128.load offset=65536 align=4", "f32.load align=1"])
    module = Module([Function("g", (), body, results=("i32",)),
                     Function("h", (("p", "i32"),), "local.get $p call $g drop",
                              export=False)], pages=3)
    assert module.binary() == wabt([module])[0]


@pytest.mark.parametrize("body, message", [
    ("i32.frobnicate", "unknown instruction 'i32.frobnicate'"),
    ("local.get $missing", r"no local \$missing"),
    ("br $nowhere", r"no enclosing block \$nowhere"),
    ("block $a", "left open"),
    ("end", "end without a block"),
    ("i32.const", "needs an immediate"),
])
def test_text_it_cannot_take_says_why(body, message):
    with pytest.raises(AssemblyError, match=message):
        Module([Function("k", (("a", "i32"),), body)]).binary()
