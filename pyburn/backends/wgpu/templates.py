"""WGSL kernel templates: the files of ``pyburn/shaders/`` with their placeholders filled in.

The syntax is small on purpose (docs/shaders.md describes it with examples):

- ``{{name}}`` is replaced by the text passed as `name`. Every placeholder must get a value
  and every value must be used: a typo is an error here, not a shader that fails to compile.
- ``functions.wgsl`` is the helper library. A rendered kernel that calls a helper (its name
  starts with ``pb_``) gets that helper's definition appended, with the helpers it calls in
  turn; nothing else, so each pipeline compiles only what it uses.
- A kernel reads element ``i`` of its storage buffer ``<buffer>``, in the compute type, as
  ``pb_load_<buffer>(i)``: the library's one loader, ``pb_load_{{buffer}}``, filled in for that
  buffer with the types of its declaration (`Kind.load`). Kernels define no loaders of their
  own.
- ``enable f16;`` is put first when the text uses the ``f16`` type, and ``enable
  subgroups;`` when it calls a subgroup built-in or reads a subgroup position.

The files are package data, read with ``importlib.resources`` (desktop and Pyodide alike).
"""

from __future__ import annotations

import functools
import re
from importlib import resources

from ...errors import PyburnError
from .kinds import KINDS

_PLACEHOLDER = re.compile(r"\{\{(\w+)\}\}")
_HELPER_CALL = re.compile(r"\bpb_\w+")
_F16 = re.compile(r"\bf16\b")
_SUBGROUPS = re.compile(r"\bsubgroup[A-Z]\w*\(|@builtin\(subgroup_")
_COMMENT = re.compile(r"//[^\n]*")
_LOOP = re.compile(r"\b(?:for|while|loop)\b")
_STORAGE = re.compile(r"var<storage,\s*\w+>\s*(\w+)\s*:\s*array<(\w+)>")
#: the library's loader, a template filled in per buffer (its name included)
_LOADER = "pb_load_{{buffer}}"
#: a kind by its stored type (uint8 and bool share u32, which both load as it is)
_BY_STORAGE = {kind.storage: kind for kind in KINDS.values()}

#: the most iterations one loop of a helper runs (pb_pow_i32 and pb_pow_u32: 32, pb_erf: 41;
#: pb_strided: the rank); what a kernel that calls helpers inside its own loop counts per
#: helper loop against llvmpipe's loop limit (see `launch.MAX_LOOP`)
HELPER_LOOP = 64


class TemplateError(PyburnError):
    """A template asked for a value it was not given, or was given one it does not use."""


@functools.cache
def source(name: str) -> str:
    """The text of ``pyburn/shaders/<name>.wgsl``."""
    return resources.files("pyburn").joinpath("shaders", f"{name}.wgsl").read_text()


@functools.cache
def _helpers() -> dict[str, str]:
    """The helper library split into its functions: name -> definition (with the comment
    lines just above it). A definition runs from a line starting ``fn pb_`` to the next line
    that is a lone ``}``."""
    found: dict[str, str] = {}
    comment: list[str] = []
    current: list[str] | None = None
    name = ""
    for line in source("functions").splitlines():
        if current is not None:
            current.append(line)
            if line == "}":
                found[name] = "\n".join(current)
                current = None
        elif line.startswith("fn pb_"):
            name = line[3:line.index("(")]
            current = [*comment, line]
            comment = []
        else:
            comment = [*comment, line] if line.startswith("//") else []
    return found


def _loops_in(name: str, seen: frozenset[str] = frozenset()) -> int:
    """Loops in helper `name`, with those of the helpers it calls."""
    text = _COMMENT.sub("", _helpers()[name])
    called = set(_HELPER_CALL.findall(text)) & set(_helpers())
    return len(_LOOP.findall(text)) + sum(_loops_in(other, seen | {name})
                                          for other in called - seen - {name})


def _loaders(text: str) -> dict[str, str]:
    """The library's loader made for each storage buffer `text` declares (of a kind's stored
    type), by the name a kernel calls it by: ``pb_load_<buffer>`` -> definition."""
    made: dict[str, str] = {}
    for buffer, element in _STORAGE.findall(text):
        kind = _BY_STORAGE.get(element)
        if kind is not None:
            values = {"buffer": buffer, "T": kind.compute, "load": kind.load("v")}
            made[fill(_LOADER, {"buffer": buffer})] = fill(_helpers()[_LOADER], values)
    return made


def helper_loops(text: str) -> int:
    """How many helper loops the helper calls in `text` enter, counted per call: a kernel
    running `text` in a loop of its own adds up to ``HELPER_LOOP + 2`` iterations per helper
    loop to each of its own (llvmpipe counts nested iterations)."""
    return sum(_loops_in(name) for name in _HELPER_CALL.findall(text) if name in _helpers())


def fill(text: str, values: dict[str, str], strict: bool = True) -> str:
    """Replace every ``{{name}}`` in `text` by ``values[name]``. Every placeholder needs a
    value; `strict` also requires every value to be used (kernels; an op expression may
    not mention its type)."""
    used: set[str] = set()

    def value(match: re.Match) -> str:
        key = match.group(1)
        if key not in values:
            raise TemplateError(f"the template needs a value for {{{{{key}}}}}")
        used.add(key)
        return str(values[key])

    filled = _PLACEHOLDER.sub(value, text)
    unused = set(values) - used
    if strict and unused:
        raise TemplateError(f"the template has no placeholder for {', '.join(sorted(unused))}")
    return filled


def link(text: str) -> str:
    """`text` with the helper functions it calls appended (its buffers' loaders among
    them), and ``enable f16;`` and ``enable subgroups;`` where needed."""
    helpers = {**_helpers(), **_loaders(text)}
    needed: list[str] = []
    pending = [text]
    while pending:
        for name in _HELPER_CALL.findall(pending.pop()):
            if name in helpers and name not in needed:
                needed.append(name)
                pending.append(helpers[name])
    parts = [text, *(helpers[name] for name in sorted(needed))]
    linked = "\n\n".join(parts)
    code = _COMMENT.sub("", linked)
    enables = [f"enable {name};\n" for name, pattern in (("f16", _F16), ("subgroups", _SUBGROUPS))
               if pattern.search(code)]
    return "".join(enables) + ("\n" if enables else "") + linked


@functools.lru_cache(maxsize=2048)
def _render(name: str, items: tuple[tuple[str, str], ...]) -> str:
    return link(fill(source(name), dict(items)))


def render(name: str, **values: str | int) -> str:
    """The kernel ``pyburn/shaders/<name>.wgsl`` with `values` filled in and its helpers
    linked: the final text that the pipeline cache is keyed by.

    >>> "fn main" in render("map", workgroup=64, unroll=1, out_type="f32", inputs="", at="",
    ...                     uniforms="", loads="", value="1.0")
    True
    """
    return _render(name, tuple(sorted((k, str(v)) for k, v in values.items())))
