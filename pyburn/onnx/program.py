"""A graph ready to run: `Program`, its nodes bound to their operator functions, and the
compiled form it executes.

Binding (`Program`) looks each node's implementation up once, converts its attributes and
compiles its subgraphs. Compiling (`_Plan`, built on the first run and again after the
steps change) goes further, so that a run does as little per node as possible: every value
gets a register (an index into a list) instead of a name looked up in a dict, each step
becomes a tuple of its function, its argument registers, its bound keyword arguments and
its result registers, and each intermediate value is dropped right after its last reader,
so that memory is handed back (and reused, warm in the cache) while the graph runs.
"""

from __future__ import annotations

from collections import ChainMap
from collections.abc import Callable, Iterator, Mapping, MutableMapping
from dataclasses import dataclass
from typing import Any

from .._tensor import Tensor
from ..devices import Device
from ..errors import ArgumentError, FormatError, PyburnError
from . import ir
from .ops import lookup, outputs
from .passes import free_inputs, is_foldable
from .registry import OpSpec
from .tensors import to_tensor


class OperatorError(PyburnError, RuntimeError):
    """An operator failed while running a model; the message names the node."""


class GuardFailed(Exception):
    """Raised by a check step (`specialize`) when a value's shape is not the one a
    specialized program was built for; the caller runs the general program instead."""


@dataclass
class Step:
    """One node bound to its implementation."""

    node: ir.Node
    spec: OpSpec
    #: attributes as the function receives them, except subgraphs (bound per run)
    attrs: dict[str, Any]
    #: attribute name -> compiled subgraph
    bodies: dict[str, Program]


class Program:
    """A graph ready to run on one device: steps in topological order, plus the constants
    it owns (subgraph initializers, Constant nodes folded at load time)."""

    def __init__(self, graph: ir.Graph, opsets: dict[str, int], device: Device) -> None:
        self.graph = graph
        self.device = device
        self.inputs = [v.name for v in graph.inputs]
        self.outputs = [v.name for v in graph.outputs]
        self.steps = [self._bind(node, opsets) for node in graph.nodes]
        self._constants: dict[str, Tensor] | None = None
        self._plan: _Plan | None = None

    def with_steps(self, steps: list[Step]) -> Program:
        """A program for the same graph, running `steps` instead (sharing their subgraphs)."""
        out = object.__new__(Program)
        out.__dict__.update(self.__dict__)
        out.steps = steps
        out._plan = None
        return out

    def constants(self) -> dict[str, Tensor]:
        """The graph's own initializers as tensors (a subgraph's; the main graph's live on
        the module), converted on first use."""
        if self._constants is None:
            self._constants = {name: to_tensor(data, self.device)
                               for name, data in self.graph.initializers.items()}
        return self._constants

    def move(self, device: Device) -> None:
        """Hold this program's own tensors (tensor attributes, subgraph constants) on
        `device` from now on (the module moves its parameters and buffers itself)."""
        self.device = device
        self._constants = None
        for step in self.steps:
            for key, value in step.node.attrs.items():
                if key in step.attrs and not isinstance(value, ir.Graph):
                    step.attrs[key] = _attribute(value, device)
            if "device" in step.spec.given:
                step.attrs["device"] = device
            if "memo" in step.spec.given:  # what it remembers lives on the old device
                step.attrs["memo"] = {}
            for body in step.bodies.values():
                body.move(device)

    def _bind(self, node: ir.Node, opsets: dict[str, int]) -> Step:
        domain = "" if node.domain == "ai.onnx" else node.domain
        spec = lookup(node.op_type, opsets.get(domain, opsets.get("ai.onnx", 1)), domain)
        assert spec is not None  # prepare() has named every unsupported operator
        required, most = spec.arity
        given = node.inputs
        if any(not name for name in given[:required]) or len(given) < required:
            raise FormatError(f"{node.label()} needs its first {required} inputs, got "
                              f"{given}")
        if most is not None and len(given) > most:
            raise FormatError(f"{node.label()} takes at most {most} inputs, got {len(given)}")
        attrs, bodies = {}, {}
        for key, value in node.attrs.items():
            if isinstance(value, ir.Graph):
                bodies[key] = Program(value, opsets, self.device)
            else:
                attrs[key] = _attribute(value, self.device)
        if "device" in spec.given:
            attrs["device"] = self.device
        if "outputs_used" in spec.given:
            used = [i for i, name in enumerate(node.outputs) if name]
            attrs["outputs_used"] = used[-1] + 1 if used else 0
        if "memo" in spec.given:
            attrs["memo"] = {}
        return Step(node, spec, attrs, bodies)

    def fold(self, constants: MutableMapping[str, Any]) -> list[str]:
        """Run, now, every step whose inputs are all in `constants` (and that is
        deterministic), adding its results to `constants` and dropping it from the program.
        Returns the names added."""
        added = []
        kept = []
        for step in self.steps:
            names = [n for n in step.node.inputs if n]
            if is_foldable(step.node) and all(n in constants for n in names):
                for name, value in zip(step.node.outputs, self._call(step, constants)):
                    if name:
                        constants[name] = value
                        added.append(name)
            else:
                kept.append(step)
        self.steps = kept
        self._plan = None
        return added

    def reads(self) -> set[str]:
        """The names the steps (their subgraphs included) and the outputs read."""
        names = set(self.outputs)
        for step in self.steps:
            names.update(n for n in step.node.inputs if n)
            for body in step.bodies.values():
                names |= free_inputs(body.graph)
        return names

    def run(self, env: Mapping[str, Any]) -> list[Any]:
        """The graph's outputs, computed from `env` (inputs, parameters, constants and, for
        a subgraph, every value of the enclosing scopes)."""
        plan = self._plan or self._compile()
        regs: list[Any] = [None] * plan.size
        try:
            for name, r in plan.loads:
                regs[r] = env[name]
        except KeyError as missing:
            raise OperatorError(f"value {missing.args[0]!r} is not defined") from None
        for fn, args, kwargs, outs, dead, step in plan.ops:
            if step.bodies:
                scope = _Scope(plan.slots, regs)
                kwargs = {**kwargs, **{key: _closure(body, scope)
                                       for key, body in step.bodies.items()}}
            try:
                out = fn(*[regs[r] for r in args], **kwargs)
            except GuardFailed:
                raise
            except PyburnError as exc:
                raise type(exc)(f"{step.node.label()}: {exc}") from exc
            except Exception as exc:
                # an operator given values its model should never give it (a malformed file)
                raise OperatorError(f"{step.node.label()} failed: {type(exc).__name__}: "
                                    f"{exc}") from exc
            if outs.__class__ is int:  # one output, the common case
                if out.__class__ is tuple:
                    out = out[0] if out else None
                regs[outs] = out
            else:
                for r, value in zip(outs, outputs(out, len(outs))):
                    regs[r] = value
            for r in dead:
                regs[r] = None
        return [regs[r] for r in plan.outputs]

    def _compile(self) -> _Plan:
        # register 0 stays None: it stands for omitted inputs
        slots: dict[str, int] = {"": 0}
        loads: list[tuple[str, int]] = []
        count = 1  # registers handed out so far

        def read(name: str) -> int:
            nonlocal count
            if name not in slots:  # not computed here: the environment gives it
                slots[name] = count
                loads.append((name, count))
                count += 1
            return slots[name]

        last: dict[int, int] = {}  # register -> index of the last step reading it
        compiled = []
        made: list[tuple[int, int]] = []  # (register, index of the step computing it)
        for k, step in enumerate(self.steps):
            args = tuple(read(n) for n in step.node.inputs)
            for body in step.bodies.values():
                last.update((read(n), k) for n in sorted(free_inputs(body.graph)))
            last.update((r, k) for r in args)
            outs = []
            for name in step.node.outputs:
                # an output nobody reads gets a register too, dropped right away
                if name:
                    slots[name] = count
                made.append((count, k))
                outs.append(count)
                count += 1
            compiled.append((step.spec.fn, args, step.attrs,
                             outs[0] if len(outs) == 1 else tuple(outs), step))
        results = tuple(read(n) for n in self.outputs)
        dead: list[list[int]] = [[] for _ in compiled]
        for r, k in made:
            if r not in results:
                dead[max(last.get(r, k), k)].append(r)
        ops = [(fn, args, kwargs, outs, tuple(gone), step)
               for (fn, args, kwargs, outs, step), gone in zip(compiled, dead)]
        self._plan = _Plan(slots, loads, ops, results, count)
        return self._plan

    def _call(self, step: Step, values: Mapping[str, Any]) -> list[Any]:
        node = step.node
        args = [values[n] if n else None for n in node.inputs]
        kwargs = step.attrs
        if step.bodies:
            kwargs = {**kwargs, **{key: _closure(body, values)
                                   for key, body in step.bodies.items()}}
        try:
            out = step.spec.fn(*args, **kwargs)
        except GuardFailed:
            raise
        except PyburnError as exc:
            raise type(exc)(f"{node.label()}: {exc}") from exc
        except Exception as exc:
            raise OperatorError(f"{node.label()} failed: {type(exc).__name__}: {exc}") from exc
        return list(outputs(out, len(node.outputs)))


@dataclass
class _Plan:
    """A program compiled for running (see the module docstring)."""

    #: name -> register
    slots: dict[str, int]
    #: (name, register) of each value the environment gives
    loads: list[tuple[str, int]]
    #: per step: (function, argument registers, keyword arguments, result register (an int
    #: for one result, else a tuple), registers to drop after it, the step)
    ops: list[tuple[Callable[..., Any], tuple[int, ...], dict[str, Any], Any,
                    tuple[int, ...], Step]]
    #: registers of the graph's outputs
    outputs: tuple[int, ...]
    #: the number of registers
    size: int


class _Scope(Mapping[str, Any]):
    """The values of a running program by name: what its subgraphs read from it."""

    def __init__(self, slots: dict[str, int], regs: list[Any]) -> None:
        self.slots = slots
        self.regs = regs

    def __getitem__(self, name: str) -> Any:
        return self.regs[self.slots[name]]

    def __iter__(self) -> Iterator[str]:
        return iter(self.slots)

    def __len__(self) -> int:
        return len(self.slots)


def constant_step(name: str, value: Any) -> Step:
    """A step that gives `value` (a folded value the module cannot hold as a buffer: a
    sequence, an empty optional) as `name`: `folded` called with ``value=value``."""
    node = ir.Node("Constant", [], [name], name=f"folded {name}")
    return Step(node, OpSpec("Constant", 1, folded), {"value": value}, {})


def folded(*, value: Any) -> Any:
    """The function of a `constant_step`: the value it was given."""
    return value


def _attribute(value: Any, device: Device) -> Any:
    """An attribute value as operator functions receive it: tensors on `device`."""
    if isinstance(value, ir.TensorData):
        return to_tensor(value, device)
    if isinstance(value, list) and value and isinstance(value[0], ir.TensorData):
        return [to_tensor(v, device) for v in value]
    return value


def _closure(body: Program, scope: Mapping[str, Any]) -> Callable[..., list[Any]]:
    """A subgraph as the callable its operator receives: ``body(*inputs) -> outputs``."""
    def run(*inputs: Any) -> list[Any]:
        if len(inputs) != len(body.inputs):
            raise ArgumentError(f"a subgraph takes {len(body.inputs)} inputs, got "
                                f"{len(inputs)}")
        local = dict(zip(body.inputs, inputs))
        return body.run(ChainMap(local, body.constants(), scope))  # type: ignore[arg-type]
    return run
