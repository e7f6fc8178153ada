"""Graph passes run on every loaded model before anything executes.

`prepare` checks a model and rewrites it into the form the runner and the code generator
both consume: model-local functions inlined, nodes in topological order, every input defined,
every operator known (all the unsupported ones named in one error), Identity and inference
Dropout removed, nodes nobody reads dropped, and every value's dtype and shape inferred
into ``value_info`` (`pyburn.onnx.infer`). Constant folding happens later, in the runner,
because it needs a device to compute on.
"""

from __future__ import annotations

import copy
import heapq
import struct
from collections.abc import Iterable, Iterator

from ..errors import FormatError
from . import ir
from .infer import annotate
from .ir import subgraphs, with_subgraphs
from .ops import lookup

#: The newest ai.onnx opset pyburn knows (onnx 1.22's).
MAX_OPSET = 27
#: Ops that draw random numbers: never folded at load time, never run twice for one call.
RANDOM_OPS = frozenset({"RandomNormal", "RandomNormalLike", "RandomUniform",
                        "RandomUniformLike", "Bernoulli", "Multinomial"})


class UnsupportedOperatorError(FormatError, NotImplementedError):
    """A model uses operators (or attributes) that pyburn does not implement; the message
    lists every one of them, found before anything runs."""


def prepare(model: ir.Model) -> ir.Model:
    """`model` checked and simplified, ready to run or print (the input is not modified)."""
    _check_opsets(model.opsets)
    model = copy.copy(model)
    model.graph = _inline_functions(model.graph, model)
    check_supported(model.graph, model.opsets)
    model.graph = rewrite(simplify(sort_graph(normalize(model.graph), ()), model.opsets))
    model.graph = annotate(model.graph, model.opsets)
    return model


def normalize(graph: ir.Graph) -> ir.Graph:
    """Give operators what only the graph knows, from declared types: the number of outputs
    of a Split with no sizes (opsets before 18 split into as many parts as it has outputs),
    QuantizeLinear's output type (its zero point's declared type, which may be narrower than
    the dtype holding it), and CastLike's target type (rewritten as Cast). Subgraphs too."""
    declared = {v.name: v.dtype for v in graph.inputs if v.dtype}
    declared.update({k: v.dtype for k, v in graph.initializers.items()})
    declared.update({k: v.dtype for k, v in graph.value_info.items() if v.dtype})
    nodes = []
    for node in graph.nodes:
        node = with_subgraphs(node, normalize)
        if (node.op_type == "Split" and node.domain in ("", "ai.onnx")
                and "split" not in node.attrs and "num_outputs" not in node.attrs
                and (len(node.inputs) < 2 or not node.inputs[1])):
            node = copy.copy(node)
            node.attrs = {**node.attrs, "num_outputs": len(node.outputs)}
        elif (node.op_type == "QuantizeLinear" and node.domain in ("", "ai.onnx")
              and not node.attrs.get("output_dtype") and len(node.inputs) > 2
              and declared.get(node.inputs[2]) in ir.DTYPE_CODES):
            node = copy.copy(node)
            node.attrs = {**node.attrs,
                          "output_dtype": ir.DTYPE_CODES[declared[node.inputs[2]]]}
        elif (node.op_type == "BitwiseNot" and node.domain in ("", "ai.onnx")
              and declared.get(node.inputs[0]) in _UNSIGNED_BITS):
            # unsigned types held in a wider signed dtype: flip only their own bits
            bits = _UNSIGNED_BITS[declared[node.inputs[0]]]
            mask = f"__pyburn_mask_{bits}"
            graph = copy.copy(graph)
            graph.initializers = {**graph.initializers, mask: ir.TensorData(
                mask, "int64", (), struct.pack("<q", (1 << bits) - 1))}
            node = ir.Node("BitwiseXor", [node.inputs[0], mask], node.outputs, {}, node.name)
        elif (node.op_type == "CastLike" and node.domain in ("", "ai.onnx")
              and len(node.inputs) == 2 and declared.get(node.inputs[1]) in ir.DTYPE_CODES):
            node = ir.Node("Cast", node.inputs[:1], node.outputs,
                           {"to": ir.DTYPE_CODES[declared[node.inputs[1]]],
                            **({"saturate": node.attrs["saturate"]}
                               if "saturate" in node.attrs else {})}, node.name)
        nodes.append(node)
    return _with_nodes(graph, nodes)


#: unsigned ONNX types that pyburn holds in a wider dtype, and their width in bits
_UNSIGNED_BITS = {"uint16": 16, "uint32": 32, "uint4": 4, "uint2": 2}


def _check_opsets(opsets: dict[str, int]) -> None:
    default = opsets.get("", opsets.get("ai.onnx"))
    if default is not None and not 1 <= default <= MAX_OPSET:
        raise FormatError(f"the model imports ai.onnx opset {default}; pyburn knows opsets "
                          f"1 to {MAX_OPSET}")


def walk(graph: ir.Graph) -> Iterator[ir.Node]:
    """Every node of `graph` and of its subgraphs, depth first."""
    for node in graph.nodes:
        yield node
        for sub in subgraphs(node):
            yield from walk(sub)


def check_supported(graph: ir.Graph, opsets: dict[str, int]) -> None:
    """Raise `UnsupportedOperatorError` naming every operator and attribute in `graph`
    (subgraphs included) that pyburn cannot run at the model's opsets."""
    missing: dict[str, int] = {}
    attrs: dict[str, set[str]] = {}
    for node in walk(graph):
        domain = "" if node.domain == "ai.onnx" else node.domain
        spec = lookup(node.op_type, opsets.get(domain, opsets.get("ai.onnx", 1)), domain)
        label = f"{domain}.{node.op_type}" if domain else node.op_type
        if spec is None:
            missing[label] = missing.get(label, 0) + 1
            continue
        unknown = set(node.attrs) - spec.attributes
        if unknown:
            attrs.setdefault(label, set()).update(unknown)
    if not missing and not attrs:
        return
    parts = []
    if missing:
        listed = ", ".join(f"{op} (x{n})" if n > 1 else op for op, n in sorted(missing.items()))
        parts.append(f"operators pyburn does not implement: {listed}")
    if attrs:
        listed = "; ".join(f"{op}: {', '.join(sorted(names))}"
                           for op, names in sorted(attrs.items()))
        parts.append(f"attributes pyburn does not implement: {listed}")
    raise UnsupportedOperatorError("cannot run this model: " + "; ".join(parts) +
                                   " (docs/onnx.md lists what is supported)")


def free_inputs(graph: ir.Graph) -> set[str]:
    """Names `graph`'s nodes (and subgraphs) read that the graph itself does not define:
    what a subgraph takes from its enclosing scopes."""
    defined = {v.name for v in graph.inputs} | set(graph.initializers)
    used: set[str] = set()
    for node in graph.nodes:
        used.update(name for name in node.inputs if name)
        for sub in subgraphs(node):
            used |= free_inputs(sub)
        defined.update(node.outputs)
    used.update(v.name for v in graph.outputs)
    return used - defined


def sort_graph(graph: ir.Graph, outer: Iterable[str]) -> ir.Graph:
    """`graph` with its nodes in topological order (the file's order where it already is
    one), subgraphs sorted too. Raises `FormatError` for an input nobody defines, a value
    defined twice, or a cycle."""
    outer = set(outer)
    available = outer | {v.name for v in graph.inputs} | set(graph.initializers) | {""}
    producer: dict[str, int] = {}
    for i, node in enumerate(graph.nodes):
        for name in node.outputs:
            if not name:
                continue
            if name in producer or name in graph.initializers:
                raise FormatError(f"{node.label()} defines {name!r}, which is already defined")
            producer[name] = i
    needs: list[set[int]] = []
    for node in graph.nodes:
        reads = [n for n in node.inputs if n]
        for sub in subgraphs(node):
            reads += sorted(free_inputs(sub))
        deps = set()
        for name in reads:
            if name in producer:
                deps.add(producer[name])
            elif name not in available:
                raise FormatError(f"{node.label()} reads {name!r}, which no graph input, "
                                  f"initializer or node defines")
        needs.append(deps)
    order = _topological(needs, graph)
    for out in graph.outputs:
        if out.name not in producer and out.name not in available:
            raise FormatError(f"graph output {out.name!r} is not defined by any node, input "
                              f"or initializer")
    scope = available | set(producer)  # what a subgraph may read from this graph
    nodes = [with_subgraphs(graph.nodes[i], lambda sub: sort_graph(sub, scope)) for i in order]
    return _with_nodes(graph, nodes)


def _topological(needs: list[set[int]], graph: ir.Graph) -> list[int]:
    # Kahn's algorithm with a heap on the file position, so an already-sorted graph keeps
    # its order and the result is deterministic
    users: list[list[int]] = [[] for _ in needs]
    waiting = [len(deps) for deps in needs]
    for i, deps in enumerate(needs):
        for d in deps:
            users[d].append(i)
    ready = [i for i, w in enumerate(waiting) if w == 0]
    heapq.heapify(ready)
    order = []
    while ready:
        i = heapq.heappop(ready)
        order.append(i)
        for u in users[i]:
            waiting[u] -= 1
            if waiting[u] == 0:
                heapq.heappush(ready, u)
    if len(order) < len(needs):
        stuck = [graph.nodes[i].label() for i, w in enumerate(waiting) if w > 0][:5]
        raise FormatError(f"the graph has a cycle through {', '.join(stuck)}")
    return order


def _with_nodes(graph: ir.Graph, nodes: list[ir.Node]) -> ir.Graph:
    out = copy.copy(graph)
    out.nodes = nodes
    return out


def simplify(graph: ir.Graph, opsets: dict[str, int]) -> ir.Graph:
    """Remove Identity nodes and Dropout nodes that cannot be training, then nodes whose
    results nobody reads (subgraphs too)."""
    # names that subgraphs read from this scope keep their producers (renaming inside a
    # subgraph would have to respect its own shadowing names)
    keep = {v.name for v in graph.outputs}
    for node in graph.nodes:
        for sub in subgraphs(node):
            keep |= free_inputs(sub)
    rename: dict[str, str] = {}
    nodes = []
    for node in graph.nodes:
        node = copy.copy(node)
        node.inputs = [rename.get(n, n) for n in node.inputs]
        if _is_passthrough(node) and node.outputs[0] not in keep:
            rename[node.outputs[0]] = node.inputs[0]
            continue
        nodes.append(with_subgraphs(node, lambda sub: simplify(sub, opsets)))
    return _drop_unused(_with_nodes(graph, nodes))


def _is_passthrough(node: ir.Node) -> bool:
    if node.domain not in ("", "ai.onnx") or not node.inputs or not node.inputs[0]:
        return False
    if node.op_type == "Identity":
        return True
    if node.op_type != "Dropout":
        return False
    # a mask output, or a training_mode input, can make Dropout observable
    no_mask = len(node.outputs) < 2 or not node.outputs[1]
    no_training = len(node.inputs) < 3 or not node.inputs[2]
    return no_mask and no_training


def _drop_unused(graph: ir.Graph) -> ir.Graph:
    needed = {v.name for v in graph.outputs}
    kept = []
    for node in reversed(graph.nodes):
        if not any(name in needed for name in node.outputs if name):
            continue
        kept.append(node)
        needed.update(n for n in node.inputs if n)
        for sub in subgraphs(node):
            needed |= free_inputs(sub)
    initializers = {k: v for k, v in graph.initializers.items()
                    if k in needed or k in {i.name for i in graph.inputs}}
    out = _with_nodes(graph, kept[::-1])
    out.initializers = initializers
    return out


def is_foldable(node: ir.Node) -> bool:
    """Whether `node` may be computed once at load time when all its inputs are constants."""
    return node.op_type not in RANDOM_OPS and not any(True for _ in subgraphs(node))


def _inline_functions(graph: ir.Graph, model: ir.Model) -> ir.Graph:
    """`graph` with calls of the model's own functions (FunctionProto) replaced by their
    bodies, recursively, names prefixed per call so they stay unique."""
    if not model.functions:
        return graph
    counter = [0]

    def expand(g: ir.Graph, depth: int) -> ir.Graph:
        nodes: list[ir.Node] = []
        for node in g.nodes:
            fn = model.functions.get((node.domain, node.op_type))
            if fn is None:
                nodes.append(with_subgraphs(node, lambda sub: expand(sub, depth)))
                continue
            if depth > 32:
                raise FormatError(f"{node.label()}: model functions nest deeper than 32 "
                                  f"levels (recursive?)")
            counter[0] += 1
            body = expand(_instantiate(fn, node, f"__{node.op_type}{counter[0]}_"), depth + 1)
            nodes.extend(body.nodes)
        return _with_nodes(g, nodes)

    return expand(graph, 0)


def _instantiate(fn: ir.Function, call: ir.Node, prefix: str) -> ir.Graph:
    """The body of function `fn` for one call: formal inputs/outputs bound to the call's
    names, other names prefixed, attribute references resolved."""
    bind = dict(zip(fn.inputs, call.inputs))
    bind.update(zip(fn.outputs, call.outputs))
    values = {**fn.attribute_defaults, **call.attrs}

    def name(n: str) -> str:
        if not n:
            return n
        return bind.get(n, prefix + n)

    nodes = []
    for node in fn.nodes:
        attrs = {}
        for key, value in node.attrs.items():
            if isinstance(value, ir.AttributeRef):
                if value.ref in values:
                    attrs[key] = values[value.ref]
            else:
                attrs[key] = value
        nodes.append(ir.Node(node.op_type, [name(n) for n in node.inputs],
                             [name(n) for n in node.outputs], attrs, node.name, node.domain))
    return ir.Graph(nodes, [], [])


def rewrite(graph: ir.Graph) -> ir.Graph:
    """Local rewrites that leave results unchanged: MatMul by a constant matrix followed by
    Add of a constant vector becomes one ``pyburn.Linear`` (a layer in generated code);
    Transpose of a Transpose becomes one Transpose, and one with the identity order goes;
    Reshape of a Reshape keeps only the last (when its target has no 0 entries)."""
    readers: dict[str, int] = {v.name: 1 for v in graph.outputs}
    for node in graph.nodes:
        for name in node.inputs:
            readers[name] = readers.get(name, 0) + 1
        for sub in subgraphs(node):
            for name in free_inputs(sub):
                readers[name] = readers.get(name, 0) + 1
    producer = {out: node for node in graph.nodes for out in node.outputs}
    inits = graph.initializers
    replaced: dict[int, ir.Node | None] = {}  # id(node) -> its replacement (None: removed)

    def single(name: str) -> ir.Node | None:
        # the node that makes `name`, when nothing else reads `name`
        node = producer.get(name)
        if node is None or readers.get(name, 0) != 1 or id(node) in replaced:
            return None
        return node

    for node in graph.nodes:
        if node.domain not in ("", "ai.onnx") or id(node) in replaced:
            continue
        if node.op_type == "Add":
            for k in (0, 1):
                mm = single(node.inputs[k])
                bias = inits.get(node.inputs[1 - k])
                if mm is None or mm.op_type != "MatMul" or bias is None:
                    continue
                weight = inits.get(mm.inputs[1])
                if (weight is not None and len(weight.dims) == 2 and bias.dims
                        == (weight.dims[1],) and weight.dtype == bias.dtype
                        and weight.dtype.startswith("float")):
                    replaced[id(mm)] = None
                    replaced[id(node)] = ir.Node("Linear", [mm.inputs[0], mm.inputs[1],
                                                            node.inputs[1 - k]],
                                                 node.outputs, {}, node.name, "pyburn")
                    break
        elif node.op_type == "Transpose":
            original = node
            inner = single(node.inputs[0])
            perm = node.attrs.get("perm")
            if inner is not None and inner.op_type == "Transpose" and perm \
                    and inner.attrs.get("perm") and len(perm) == len(inner.attrs["perm"]):
                first = inner.attrs["perm"]
                replaced[id(inner)] = None
                merged = ir.Node("Transpose", inner.inputs, node.outputs,
                                 {"perm": [first[p] for p in perm]}, node.name)
                replaced[id(original)] = merged
                node = merged
            if node.attrs.get("perm") == list(range(len(node.attrs.get("perm") or []))) \
                    and node.outputs[0] not in {v.name for v in graph.outputs}:
                replaced[id(original)] = ir.Node("Identity", node.inputs, node.outputs)
        elif node.op_type == "Reshape" and len(node.inputs) > 1:
            inner = single(node.inputs[0])
            target = inits.get(node.inputs[1])
            if (inner is not None and inner.op_type == "Reshape" and target is not None
                    and target.dtype == "int64" and 0 not in _int64s(target)
                    and not node.attrs.get("allowzero")):
                replaced[id(inner)] = None
                replaced[id(node)] = ir.Node("Reshape", [inner.inputs[0], node.inputs[1]],
                                             node.outputs, dict(node.attrs), node.name)
    if not replaced:
        return graph
    nodes = [replaced.get(id(n), n) for n in graph.nodes]
    return simplify(_with_nodes(graph, [n for n in nodes if n is not None]), {})


def _int64s(data: ir.TensorData) -> list[int]:
    raw = bytes(data.data())  # type: ignore[arg-type]
    return list(struct.unpack(f"<{len(raw) // 8}q", raw))
