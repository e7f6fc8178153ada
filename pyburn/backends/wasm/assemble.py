"""A WebAssembly assembler in pure Python, for the kernels pyburn writes and generates: a
`Module` of `Function`s whose bodies are WebAssembly text in the flat form (one
instruction after another, as the text format allows: ``local.get $x f32x4.abs``), made
into the binary format that ``WebAssembly.Module`` compiles, with no tool to install and
at run time too (in a browser, for the kernels fusion generates).

What the bodies may say: the instructions of `opcodes` with their immediates (``$names``
or indices for locals, labels and functions; ``offset=`` and ``align=`` for memory;
``v128.const f32x4 1 2 3 4``), ``block``/``loop``/``if`` with an optional ``$label`` and no
result type, and ``;;`` comments. Every module imports one memory, ``env.mem``: the
backend's. `Module.text` gives the same module as WebAssembly text, which the tests
assemble with wabt and compare byte for byte.
"""

from __future__ import annotations

import math
import re
import struct
from dataclasses import dataclass, field

from ...errors import PyburnError
from .opcodes import CORE, MISC, NATURAL_ALIGN, SIMD, VALUE_TYPES


class AssemblyError(PyburnError, ValueError):
    """Kernel text that this assembler does not take (a bug in pyburn, not user input)."""


@dataclass(frozen=True)
class Function:
    """A function: its parameters and locals (name, value type), results, and body."""

    name: str
    params: tuple[tuple[str, str], ...]
    body: str
    results: tuple[str, ...] = ()
    locals: tuple[tuple[str, str], ...] = ()
    export: bool = True

    @property
    def signature(self) -> tuple[tuple[str, ...], tuple[str, ...]]:
        return tuple(kind for _, kind in self.params), self.results


@dataclass
class Module:
    """Functions over the imported memory ``env.mem`` (at least `pages` of 64 KiB)."""

    functions: list[Function] = field(default_factory=list)
    pages: int = 1

    def binary(self) -> bytes:
        """The module in the binary format."""
        signatures = list(dict.fromkeys(f.signature for f in self.functions))
        indices = {f.name: k for k, f in enumerate(self.functions)}
        types = [b"\x60" + _vector([_type(t) for t in params]) +
                 _vector([_type(t) for t in results]) for params, results in signatures]
        memory = _name("env") + _name("mem") + b"\x02\x00" + _unsigned(self.pages)
        declared = [_unsigned(signatures.index(f.signature)) for f in self.functions]
        exports = [_name(f.name) + b"\x00" + _unsigned(indices[f.name])
                   for f in self.functions if f.export]
        bodies = [_sized(_code(f, indices)) for f in self.functions]
        sections = [(1, types), (2, [memory]), (3, declared), (7, exports), (10, bodies)]
        return b"\x00asm\x01\x00\x00\x00" + b"".join(
            _section(kind, _vector(items)) for kind, items in sections if items)

    def text(self) -> str:
        """The module in the text format."""
        lines = [f'(module (import "env" "mem" (memory {self.pages}))']
        for f in self.functions:
            head = [f"(func ${f.name}"]
            if f.export:
                head.append(f'(export "{f.name}")')
            head += [f"(param ${name} {kind})" for name, kind in f.params]
            head += [f"(result {kind})" for kind in f.results]
            head += [f"(local ${name} {kind})" for name, kind in f.locals]
            lines += ["  " + " ".join(head), *("    " + line for line in
                                                f.body.strip().splitlines()), "  )"]
        return "\n".join([*lines, ")"]) + "\n"


# ---- the binary format's pieces ---------------------------------------------------------------

def _unsigned(value: int) -> bytes:
    """LEB128 of an unsigned integer."""
    out = bytearray()
    while True:
        byte, value = value & 0x7F, value >> 7
        out.append(byte | (0x80 if value else 0))
        if not value:
            return bytes(out)


def _signed(value: int) -> bytes:
    """LEB128 of a signed integer."""
    out = bytearray()
    while True:
        byte, value = value & 0x7F, value >> 7
        done = (value == 0 and not byte & 0x40) or (value == -1 and byte & 0x40)
        out.append(byte | (0 if done else 0x80))
        if done:
            return bytes(out)


def _vector(items: list[bytes]) -> bytes:
    return _unsigned(len(items)) + b"".join(items)


def _name(text: str) -> bytes:
    return _vector([bytes([b]) for b in text.encode()])


def _sized(content: bytes) -> bytes:
    return _unsigned(len(content)) + content


def _section(kind: int, content: bytes) -> bytes:
    return bytes([kind]) + _sized(content)


def _type(name: str) -> bytes:
    if name not in VALUE_TYPES:
        raise AssemblyError(f"no value type {name!r} (one of {', '.join(VALUE_TYPES)})")
    return bytes([VALUE_TYPES[name]])


# ---- function bodies ---------------------------------------------------------------------------

_COMMENT = re.compile(r";;[^\n]*")
_LANES = {"i8x16": (16, "<b", "<B"), "i16x8": (8, "<h", "<H"), "i32x4": (4, "<i", "<I"),
          "i64x2": (2, "<q", "<Q"), "f32x4": (4, "<f", ""), "f64x2": (2, "<d", "")}


def _code(f: Function, functions: dict[str, int]) -> bytes:
    """A function's code entry: its locals, grouped by type, then its body."""
    groups: list[tuple[int, str]] = []
    for _, kind in f.locals:
        if groups and groups[-1][1] == kind:
            groups[-1] = (groups[-1][0] + 1, kind)
        else:
            groups.append((1, kind))
    names = [name for name, _ in (*f.params, *f.locals)]
    if len(set(names)) != len(names):
        raise AssemblyError(f"{f.name}: a parameter or local is named twice")
    body = _Body(f.name, {name: k for k, name in enumerate(names)}, functions)
    encoded = body.encode(_COMMENT.sub(" ", f.body).split())
    return _vector([_unsigned(n) + _type(kind) for n, kind in groups]) + encoded + b"\x0b"


class _Body:
    """The encoder of one body: its tokens, one instruction and its immediates at a time."""

    def __init__(self, function: str, locals_: dict[str, int], functions: dict[str, int]):
        self.function = function
        self.locals = locals_
        self.functions = functions
        self.labels: list[str | None] = []  # the enclosing blocks, innermost last

    def fail(self, message: str) -> AssemblyError:
        return AssemblyError(f"{self.function}: {message}")

    def encode(self, tokens: list[str]) -> bytes:
        out = bytearray()
        at = 0
        while at < len(tokens):
            name = tokens[at]
            at += 1
            if name in CORE:
                code, immediate = CORE[name]
                out.append(code)
            elif name in MISC:
                code, immediate = MISC[name]
                out += b"\xfc" + _unsigned(code)
            elif name in SIMD:
                code, immediate = SIMD[name]
                out += b"\xfd" + _unsigned(code)
            else:
                raise self.fail(f"unknown instruction {name!r}")
            encoded, at = self.immediate(name, immediate, tokens, at)
            out += encoded
        if self.labels:
            raise self.fail(f"{len(self.labels)} block(s) left open")
        return bytes(out)

    def immediate(self, name: str, kind: str, tokens: list[str], at: int) -> tuple[bytes, int]:
        """The immediates of instruction `name` (of `kind`) from ``tokens[at:]``, and where
        the next instruction starts."""
        def take() -> str:
            if at >= len(tokens):
                raise self.fail(f"{name} needs an immediate")
            return tokens[at]
        if kind == "":
            if name == "end":
                if not self.labels:
                    raise self.fail("end without a block")
                self.labels.pop()
            return b"", at
        if kind == "block":
            label = tokens[at] if at < len(tokens) and tokens[at].startswith("$") else None
            self.labels.append(label)
            return b"\x40", at + (label is not None)
        if kind in ("memarg", "memlane"):
            offset, align = 0, 1 << NATURAL_ALIGN[name]
            while at < len(tokens) and tokens[at].startswith(("offset=", "align=")):
                key, number = tokens[at].split("=")
                offset, align = (int(number, 0), align) if key == "offset" else \
                    (offset, int(number, 0))
                at += 1
            memarg = _unsigned(align.bit_length() - 1) + _unsigned(offset)
            if kind == "memlane":
                return memarg + bytes([int(tokens[at], 0)]), at + 1
            return memarg, at
        if kind == "memory":
            return b"\x00", at
        if kind == "memory2":
            return b"\x00\x00", at
        token = take()
        if kind == "local":
            return _unsigned(self.index(token, self.locals, "local")), at + 1
        if kind == "func":
            return _unsigned(self.index(token, self.functions, "function")), at + 1
        if kind == "label":
            return _unsigned(self.depth(token)), at + 1
        if kind in ("i32", "i64"):
            value = int(token, 0)
            bits = 32 if kind == "i32" else 64
            value = (value + (1 << (bits - 1))) % (1 << bits) - (1 << (bits - 1))
            return _signed(value), at + 1
        if kind in ("f32", "f64"):
            return struct.pack("<f" if kind == "f32" else "<d", _float(token)), at + 1
        if kind == "lane":
            return bytes([int(token, 0)]), at + 1
        if kind == "lanes16":
            return bytes(int(t, 0) for t in tokens[at:at + 16]), at + 16
        if kind == "v128":
            count, signed, unsigned = _LANES[token]
            lanes = tokens[at + 1:at + 1 + count]
            packed = b""
            for lane in lanes:
                if signed.endswith(("f", "d")):
                    packed += struct.pack(signed, _float(lane))
                else:
                    value = int(lane, 0)
                    packed += struct.pack(signed if value < 0 else unsigned, value)
            return packed, at + 1 + count
        raise self.fail(f"no immediate of kind {kind!r}")  # a table entry without a rule

    def index(self, token: str, names: dict[str, int], what: str) -> int:
        if token.startswith("$"):
            if token[1:] not in names:
                raise self.fail(f"no {what} {token}")
            return names[token[1:]]
        return int(token, 0)

    def depth(self, token: str) -> int:
        if not token.startswith("$"):
            return int(token, 0)
        for depth, label in enumerate(reversed(self.labels)):
            if label == token:
                return depth
        raise self.fail(f"no enclosing block {token}")


def _float(token: str) -> float:
    """A float literal of the text format: decimal, ``inf``, ``-inf`` or ``nan``."""
    sign = -1.0 if token.startswith("-") else 1.0
    body = token.lstrip("+-")
    if body == "inf":
        return sign * math.inf
    if body == "nan":
        return math.copysign(math.nan, sign)
    return float(token)
