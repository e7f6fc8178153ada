"""A restricted unpickler: the pickle virtual machine, written from the opcode specification
(protocols 0 to 5, as documented in CPython's ``pickletools``), in which nothing outside an
allow-list can ever be constructed or called.

Python's ``pickle.load`` imports the module a GLOBAL opcode names and calls whatever REDUCE
asks for; that is how a pickle runs ``os.system``. This machine imports nothing. A global is
looked up with the caller's ``find_global(module, name)``, which returns a `Global` from its
allow-list or raises `pyburn.FormatError`; the only things ever called are those `Global`
objects (REDUCE, NEWOBJ, NEWOBJ_EX, OBJ, INST), and the only objects that take state (BUILD)
are `Buildable` ones the allow-list made. Everything else a pickle can build is plain data:
None, bools, ints, floats, str, bytes, bytearray, tuple, list, dict, set, frozenset.

Every problem becomes a FormatError that names the opcode and where it is: an unknown
opcode, data ending early (`PickleTruncated`), a stack underflow, an unhashable dict key, a
memo index never stored. Tuples and frozensets may nest at most `MAX_NESTING` deep, because
hashing a deeper one recurses in C and could overflow the WebAssembly stack in Pyodide.
"""

from __future__ import annotations

import codecs
import struct
from collections.abc import Callable
from typing import Any

from ...errors import FormatError

#: the deepest nesting of tuples and frozensets a pickle may build (PyTorch's need 3)
MAX_NESTING = 100
#: the highest pickle protocol (Python 3.8+ writes 5; PyTorch writes 2)
HIGHEST_PROTOCOL = 5

# The opcodes, from the specification: name -> byte.
OPCODES = {
    "MARK": b"(", "STOP": b".", "POP": b"0", "POP_MARK": b"1", "DUP": b"2", "FLOAT": b"F",
    "INT": b"I", "BININT": b"J", "BININT1": b"K", "LONG": b"L", "BININT2": b"M", "NONE": b"N",
    "PERSID": b"P", "BINPERSID": b"Q", "REDUCE": b"R", "STRING": b"S", "BINSTRING": b"T",
    "SHORT_BINSTRING": b"U", "UNICODE": b"V", "BINUNICODE": b"X", "APPEND": b"a",
    "BUILD": b"b", "GLOBAL": b"c", "DICT": b"d", "EMPTY_DICT": b"}", "APPENDS": b"e",
    "GET": b"g", "BINGET": b"h", "INST": b"i", "LONG_BINGET": b"j", "LIST": b"l",
    "EMPTY_LIST": b"]", "OBJ": b"o", "PUT": b"p", "BINPUT": b"q", "LONG_BINPUT": b"r",
    "SETITEM": b"s", "TUPLE": b"t", "EMPTY_TUPLE": b")", "SETITEMS": b"u", "BINFLOAT": b"G",
    # protocol 2
    "PROTO": b"\x80", "NEWOBJ": b"\x81", "EXT1": b"\x82", "EXT2": b"\x83", "EXT4": b"\x84",
    "TUPLE1": b"\x85", "TUPLE2": b"\x86", "TUPLE3": b"\x87", "NEWTRUE": b"\x88",
    "NEWFALSE": b"\x89", "LONG1": b"\x8a", "LONG4": b"\x8b",
    # protocol 3
    "BINBYTES": b"B", "SHORT_BINBYTES": b"C",
    # protocol 4
    "SHORT_BINUNICODE": b"\x8c", "BINUNICODE8": b"\x8d", "BINBYTES8": b"\x8e",
    "EMPTY_SET": b"\x8f", "ADDITEMS": b"\x90", "FROZENSET": b"\x91", "NEWOBJ_EX": b"\x92",
    "STACK_GLOBAL": b"\x93", "MEMOIZE": b"\x94", "FRAME": b"\x95",
    # protocol 5
    "BYTEARRAY8": b"\x96", "NEXT_BUFFER": b"\x97", "READONLY_BUFFER": b"\x98",
}
OPCODE_NAMES = {code[0]: name for name, code in OPCODES.items()}
_BIG_DOUBLE = struct.Struct(">d")  # BINFLOAT is big-endian


class Global:
    """A name on an allow-list that a pickle may refer to, and, when `call` is given, call
    (REDUCE and the object-creating opcodes give it the pickled arguments)."""

    def __init__(self, module: str, name: str, call: Callable[..., Any] | None = None):
        self.module = module
        self.name = name
        self._call = call

    @property
    def qualname(self) -> str:
        """``module.name``, as error messages give it."""
        return f"{self.module}.{self.name}"

    def construct(self, args: tuple) -> Any:
        """What calling this global with `args` builds; FormatError when it cannot be
        called."""
        if self._call is None:
            raise FormatError(f"{self.qualname} is allowed as a name, but not as something "
                              f"to call")
        return self._call(*args)

    def __repr__(self) -> str:
        return f"<allowed global {self.qualname}>"


class Buildable:
    """Base of the objects the BUILD opcode may give state to (allow-listed containers)."""

    def setstate(self, state: Any) -> None:
        """Take the pickled `state` (what ``__setstate__`` would receive)."""
        raise NotImplementedError


class PickleTruncated(FormatError):
    """The data ended before the pickle's STOP opcode."""


# Exceptions that pickled data can provoke inside an opcode (int() of junk, an unhashable
# dict key, a constructor given the wrong arguments); each becomes a FormatError.
_DATA_ERRORS = (TypeError, ValueError, KeyError, IndexError, OverflowError, RecursionError,
                AttributeError, UnicodeError, ArithmeticError)


def describe(value: Any) -> str:
    """A short description of a pickled value for messages (never its repr: a repr of
    nested data can be huge, or recurse deeply)."""
    if isinstance(value, Global):
        return value.qualname
    return f"a {type(value).__name__}"


class Unpickler:
    """Runs one pickle from `data`, resolving globals with `find_global` and persistent IDs
    with `persistent_load`.

    `origin` says where `data` comes from in error messages; `base`, when given, is the file
    offset of ``data[0]``, so that messages give file offsets.
    """

    def __init__(self, data: bytes, *, find_global: Callable[[str, str], Any],
                 persistent_load: Callable[[Any], Any], origin: str, base: int | None = None):
        self.data = data
        self.find_global = find_global
        self.persistent_load = persistent_load
        self.origin = origin
        self.base = base
        self.pos = 0
        self.stack: list[Any] = []
        self.metastack: list[list[Any]] = []
        self.memo: dict[int, Any] = {}
        # id -> (nesting depth, the object kept alive so its id is never reused)
        self.depths: dict[int, tuple[int, Any]] = {}

    def where(self, at: int) -> str:
        """A position in `data` as messages give it."""
        if self.base is not None:
            return f"file offset {self.base + at}"
        return f"byte {at} of {self.origin}"

    def load(self, start: int = 0) -> tuple[Any, int]:
        """Run the pickle that starts at `start`; returns the object it builds and the
        position just after its STOP opcode."""
        self.pos = start
        self.stack, self.metastack, self.memo, self.depths = [], [], {}, {}
        data, size = self.data, len(self.data)
        at = start
        try:
            while True:
                at = self.pos
                if at >= size:
                    raise PickleTruncated(f"{self.origin} ends before its STOP opcode: the "
                                          f"file is truncated or corrupt")
                handler = _DISPATCH.get(data[at])
                if handler is None:
                    raise FormatError(f"unknown pickle opcode 0x{data[at]:02x} at "
                                      f"{self.where(at)}: not a pickle, or a corrupt one")
                self.pos = at + 1
                if handler(self):
                    return self._pop(), self.pos
        except PickleTruncated:
            raise
        except FormatError as exc:
            raise FormatError(f"{exc} ({self._opcode(at)})") from None
        except _DATA_ERRORS as exc:
            text = str(exc)
            text = text if len(text) <= 200 else text[:200] + "..."
            raise FormatError(f"malformed pickle: {type(exc).__name__}: {text} "
                              f"({self._opcode(at)})") from None

    def _opcode(self, at: int) -> str:
        name = OPCODE_NAMES.get(self.data[at], "?") if at < len(self.data) else "?"
        return f"pickle opcode {name} at {self.where(at)}"

    # ---- reading the data ------------------------------------------------------------------
    def _read(self, n: int) -> bytes:
        end = self.pos + n
        if n < 0:
            raise FormatError(f"negative length {n}")
        if end > len(self.data):
            raise PickleTruncated(f"{self.origin} ends in the middle of an opcode's argument "
                                  f"({n} bytes wanted at {self.where(self.pos)}): the file is "
                                  f"truncated or corrupt")
        chunk = self.data[self.pos:end]
        self.pos = end
        return chunk

    def _uint(self, n: int) -> int:
        return int.from_bytes(self._read(n), "little")

    def _int(self, n: int) -> int:
        return int.from_bytes(self._read(n), "little", signed=True)

    def _readline(self) -> bytes:
        end = self.data.find(b"\n", self.pos)
        if end < 0:
            raise PickleTruncated(f"{self.origin} ends in the middle of a text argument: the "
                                  f"file is truncated or corrupt")
        line = self.data[self.pos:end]
        self.pos = end + 1
        return line

    # ---- the stack -------------------------------------------------------------------------
    def _pop(self) -> Any:
        if not self.stack:
            raise FormatError("stack underflow: the pickle takes more than it put")
        return self.stack.pop()

    def _top(self) -> Any:
        if not self.stack:
            raise FormatError("stack underflow: the pickle uses a value it never put")
        return self.stack[-1]

    def _pop_mark(self) -> list[Any]:
        if not self.metastack:
            raise FormatError("the pickle closes a MARK it never opened")
        items = self.stack
        self.stack = self.metastack.pop()
        return items

    def _nested(self, kind: type, items: Any) -> Any:
        """A tuple or frozenset of `items`, refusing nesting deeper than MAX_NESTING."""
        depth = 1
        for item in items:
            if type(item) is tuple or type(item) is frozenset:
                inner = self.depths.get(id(item))
                depth = max(depth, (inner[0] if inner else 1) + 1)
        if depth > MAX_NESTING:
            raise FormatError(f"tuples or frozensets nest deeper than {MAX_NESTING} levels")
        value = kind(items)
        self.depths[id(value)] = (depth, value)
        return value

    def _call(self, target: Any, args: Any, opcode: str) -> Any:
        if not isinstance(target, Global):
            raise FormatError(f"{opcode} calls {describe(target)}; only allow-listed globals "
                              f"can be called")
        if type(args) is not tuple:
            raise FormatError(f"{opcode} passes {describe(args)} as the arguments of "
                              f"{target.qualname}, not a tuple")
        return target.construct(args)

    def _global(self, module: Any, name: Any) -> Any:
        if not isinstance(module, str) or not isinstance(name, str):
            raise FormatError(f"a global's module and name are strings, got {describe(module)}"
                              f" and {describe(name)}")
        return self.find_global(module, name)

    def _text_global(self) -> Any:
        module = self._readline().decode("utf-8")
        return self._global(module, self._readline().decode("utf-8"))

    def _set_items(self, target: Any, items: list[Any]) -> None:
        if not isinstance(target, dict):
            raise FormatError(f"SETITEM(S) stores into {describe(target)}, not a dict")
        if len(items) % 2:
            raise FormatError("SETITEMS has an odd number of keys and values")
        for i in range(0, len(items), 2):
            target[items[i]] = items[i + 1]

    def _list_target(self) -> list[Any]:
        target = self._top()
        if type(target) is not list:
            raise FormatError(f"APPEND(S) adds to {describe(target)}, not a list")
        return target

    # ---- opcodes: each returns True only for STOP -------------------------------------------
    def _op_MARK(self) -> None:
        self.metastack.append(self.stack)
        self.stack = []

    def _op_STOP(self) -> bool:
        return True

    def _op_POP(self) -> None:
        self._pop()

    def _op_POP_MARK(self) -> None:
        self._pop_mark()

    def _op_DUP(self) -> None:
        self.stack.append(self._top())

    def _op_FLOAT(self) -> None:
        self.stack.append(float(self._readline()))

    def _op_BINFLOAT(self) -> None:
        self.stack.append(_BIG_DOUBLE.unpack(self._read(8))[0])

    def _op_INT(self) -> None:
        line = self._readline()
        self.stack.append(True if line == b"01" else False if line == b"00" else int(line))

    def _op_BININT(self) -> None:
        self.stack.append(self._int(4))

    def _op_BININT1(self) -> None:
        self.stack.append(self._uint(1))

    def _op_BININT2(self) -> None:
        self.stack.append(self._uint(2))

    def _op_LONG(self) -> None:
        line = self._readline()
        self.stack.append(int(line[:-1] if line.endswith(b"L") else line))

    def _op_LONG1(self) -> None:
        self.stack.append(int.from_bytes(self._read(self._uint(1)), "little", signed=True))

    def _op_LONG4(self) -> None:
        self.stack.append(int.from_bytes(self._read(self._int(4)), "little", signed=True))

    def _op_NONE(self) -> None:
        self.stack.append(None)

    def _op_NEWTRUE(self) -> None:
        self.stack.append(True)

    def _op_NEWFALSE(self) -> None:
        self.stack.append(False)

    def _op_STRING(self) -> None:
        line = self._readline().rstrip(b"\r")
        if len(line) < 2 or line[0] != line[-1] or line[:1] not in (b"'", b'"'):
            raise FormatError("a STRING argument is not quoted")
        self.stack.append(codecs.escape_decode(line[1:-1])[0].decode("utf-8"))

    def _op_BINSTRING(self) -> None:
        self.stack.append(self._read(self._int(4)).decode("utf-8"))

    def _op_SHORT_BINSTRING(self) -> None:
        self.stack.append(self._read(self._uint(1)).decode("utf-8"))

    def _op_BINBYTES(self) -> None:
        self.stack.append(self._read(self._uint(4)))

    def _op_SHORT_BINBYTES(self) -> None:
        self.stack.append(self._read(self._uint(1)))

    def _op_BINBYTES8(self) -> None:
        self.stack.append(self._read(self._uint(8)))

    def _op_BYTEARRAY8(self) -> None:
        self.stack.append(bytearray(self._read(self._uint(8))))

    def _op_UNICODE(self) -> None:
        self.stack.append(self._readline().decode("raw-unicode-escape"))

    def _op_SHORT_BINUNICODE(self) -> None:
        self.stack.append(self._read(self._uint(1)).decode("utf-8", "surrogatepass"))

    def _op_BINUNICODE(self) -> None:
        self.stack.append(self._read(self._uint(4)).decode("utf-8", "surrogatepass"))

    def _op_BINUNICODE8(self) -> None:
        self.stack.append(self._read(self._uint(8)).decode("utf-8", "surrogatepass"))

    def _op_EMPTY_TUPLE(self) -> None:
        self.stack.append(())

    def _op_TUPLE(self) -> None:
        value = self._nested(tuple, self._pop_mark())  # pop the mark before pushing
        self.stack.append(value)

    def _op_TUPLE1(self) -> None:
        self.stack.append(self._nested(tuple, [self._pop()]))

    def _op_TUPLE2(self) -> None:
        second = self._pop()
        self.stack.append(self._nested(tuple, [self._pop(), second]))

    def _op_TUPLE3(self) -> None:
        third, second = self._pop(), self._pop()
        self.stack.append(self._nested(tuple, [self._pop(), second, third]))

    def _op_EMPTY_LIST(self) -> None:
        self.stack.append([])

    def _op_LIST(self) -> None:
        items = self._pop_mark()
        self.stack.append(items)

    def _op_APPEND(self) -> None:
        value = self._pop()
        self._list_target().append(value)

    def _op_APPENDS(self) -> None:
        items = self._pop_mark()
        self._list_target().extend(items)

    def _op_EMPTY_DICT(self) -> None:
        self.stack.append({})

    def _op_DICT(self) -> None:
        target: dict[Any, Any] = {}
        self._set_items(target, self._pop_mark())
        self.stack.append(target)

    def _op_SETITEM(self) -> None:
        value, key = self._pop(), self._pop()
        self._set_items(self._top(), [key, value])

    def _op_SETITEMS(self) -> None:
        items = self._pop_mark()
        self._set_items(self._top(), items)

    def _op_EMPTY_SET(self) -> None:
        self.stack.append(set())

    def _op_ADDITEMS(self) -> None:
        items = self._pop_mark()
        target = self._top()
        if type(target) is not set:
            raise FormatError(f"ADDITEMS adds to {describe(target)}, not a set")
        target.update(items)

    def _op_FROZENSET(self) -> None:
        value = self._nested(frozenset, self._pop_mark())
        self.stack.append(value)

    def _op_GLOBAL(self) -> None:
        self.stack.append(self._text_global())

    def _op_STACK_GLOBAL(self) -> None:
        name, module = self._pop(), self._pop()
        self.stack.append(self._global(module, name))

    def _op_REDUCE(self) -> None:
        args, func = self._pop(), self._pop()
        self.stack.append(self._call(func, args, "REDUCE"))

    def _op_NEWOBJ(self) -> None:
        args, cls = self._pop(), self._pop()
        self.stack.append(self._call(cls, args, "NEWOBJ"))

    def _op_NEWOBJ_EX(self) -> None:
        kwargs, args, cls = self._pop(), self._pop(), self._pop()
        if kwargs != {}:
            raise FormatError(f"NEWOBJ_EX passes keyword arguments to {describe(cls)}")
        self.stack.append(self._call(cls, args, "NEWOBJ_EX"))

    def _op_INST(self) -> None:
        cls = self._text_global()
        value = self._call(cls, tuple(self._pop_mark()), "INST")
        self.stack.append(value)

    def _op_OBJ(self) -> None:
        items = self._pop_mark()
        if not items:
            raise FormatError("OBJ has no class to call")
        value = self._call(items[0], tuple(items[1:]), "OBJ")
        self.stack.append(value)

    def _op_BUILD(self) -> None:
        state = self._pop()
        target = self._top()
        if not isinstance(target, Buildable):
            raise FormatError(f"BUILD gives state to {describe(target)}, which takes none")
        target.setstate(state)

    def _op_PERSID(self) -> None:
        self.stack.append(self.persistent_load(self._readline().decode("ascii")))

    def _op_BINPERSID(self) -> None:
        self.stack.append(self.persistent_load(self._pop()))

    def _get(self, index: int) -> None:
        if index not in self.memo:
            raise FormatError(f"the pickle reads memo entry {index}, which it never stored")
        self.stack.append(self.memo[index])

    def _op_GET(self) -> None:
        self._get(int(self._readline()))

    def _op_BINGET(self) -> None:
        self._get(self._uint(1))

    def _op_LONG_BINGET(self) -> None:
        self._get(self._uint(4))

    def _op_PUT(self) -> None:
        self.memo[int(self._readline())] = self._top()

    def _op_BINPUT(self) -> None:
        self.memo[self._uint(1)] = self._top()

    def _op_LONG_BINPUT(self) -> None:
        self.memo[self._uint(4)] = self._top()

    def _op_MEMOIZE(self) -> None:
        self.memo[len(self.memo)] = self._top()

    def _op_PROTO(self) -> None:
        version = self._uint(1)
        if version > HIGHEST_PROTOCOL:
            raise FormatError(f"unsupported pickle protocol {version}")

    def _op_FRAME(self) -> None:
        size = self._uint(8)
        if self.pos + size > len(self.data):
            raise PickleTruncated(f"{self.origin} declares a frame of {size} bytes that runs "
                                  f"past its end: the file is truncated or corrupt")

    def _extension(self) -> None:
        raise FormatError("the pickle uses the copyreg extension registry, which names "
                          "arbitrary globals; it is not supported")

    _op_EXT1 = _op_EXT2 = _op_EXT4 = _extension

    def _out_of_band(self) -> None:
        raise FormatError("the pickle uses out-of-band buffers (protocol 5), which a file "
                          "cannot carry")

    _op_NEXT_BUFFER = _op_READONLY_BUFFER = _out_of_band


_DISPATCH: dict[int, Callable[[Unpickler], Any]] = {
    code[0]: getattr(Unpickler, f"_op_{name}") for name, code in OPCODES.items()}
