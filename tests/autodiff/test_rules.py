"""The backward rules (pyburn/autodiff/rules.py and the op table's `grad` column), checked
through the table of cases in cases.py: gradients and Hessian-vector products against
PyTorch, gradients against finite differences, and no bookkeeping where none is needed.

Where PyTorch is absent (inside Pyodide) PyTorch's results come from the golden file that the
desktop run writes (``conformance.helpers.GOLDEN``), under the test's id without its device."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest
from conformance.helpers import GOLDEN, golden_key

import pyburn
from pyburn import tape
from pyburn.autodiff.rules import RULES
from pyburn.ops import capability
from pyburn.ops.elementwise import BINARY, UNARY

from .cases import CASES, FLOAT_RESULT_DOMAINS
from .helpers import (
    Case,
    PyburnLib,
    Result,
    TorchLib,
    as_list,
    assert_results_match,
    evaluate,
    gradcheck,
    input_values,
)

IDS = [c.name for c in CASES]
FD_CASES = [c for c in CASES if c.fd]


@pytest.fixture(scope="module")
def torch_lib() -> TorchLib | None:
    """PyTorch CPU, the reference; None where it is not installed (the golden file's
    results stand in)."""
    try:
        return TorchLib()
    except ImportError:
        return None


def reference(request: pytest.FixtureRequest, torch_lib: TorchLib | None, c: Case, dtype: str,
              second_order: bool = False) -> Result:
    """PyTorch's result for case `c`, recorded in the golden file; read from it where PyTorch
    is absent."""
    key = golden_key(request.node)
    if torch_lib is None:
        return Result(**GOLDEN.recall(key))
    found = evaluate(c, torch_lib, dtype, second_order)
    GOLDEN.remember(key, dataclasses.asdict(found))
    return found


def test_case_names_are_unique():
    assert len(set(IDS)) == len(IDS)


@pytest.mark.parametrize("c", CASES, ids=IDS)
def test_gradient_matches_torch(request, dev, dtype, torch_lib, c: Case):
    """Outputs and first-order gradients (``backward()`` into ``.grad``)."""
    c.require(dev)
    got = evaluate(c, PyburnLib(dev, getattr(pyburn, dtype)), dtype)
    assert_results_match(c, got, reference(request, torch_lib, c, dtype), dtype)


HVP_CASES = [c for c in CASES if c.hvp]


@pytest.mark.parametrize("c", HVP_CASES, ids=[c.name for c in HVP_CASES])
def test_second_order_matches_torch(request, dev, dtype, torch_lib, c: Case):
    """Hessian-vector products: ``grad(create_graph=True)``, then the gradient of g . v. Every
    backward rule is itself made of recorded ops, so this differentiates each rule."""
    c.require(dev)
    got = evaluate(c, PyburnLib(dev, getattr(pyburn, dtype)), dtype, second_order=True)
    assert_results_match(c, got, reference(request, torch_lib, c, dtype, second_order=True),
                         dtype)


@pytest.mark.parametrize("c", FD_CASES, ids=[c.name for c in FD_CASES])
def test_gradient_matches_finite_differences(dev, float64, c: Case):
    c.require(dev)
    lib = PyburnLib(dev, pyburn.float64)
    values = input_values(c, "float64")

    def fn(*leaves: pyburn.Tensor) -> Any:
        given = iter(leaves)
        args = [next(given) if inp.grad else lib.const(v) for v, inp in zip(values, c.inputs)]
        return c.fn(lib, *args)

    gradcheck(fn, [v for v, inp in zip(values, c.inputs) if inp.grad], dev, seed=c.name)


@pytest.fixture
def nodes_made(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The rule of every graph node recorded while the test runs (leaves' nodes excepted)."""
    made: list[str] = []

    class Counted(tape.Node):
        __slots__ = ()

        def __init__(self, rule: str, *args: Any):
            made.append(rule)
            super().__init__(rule, *args)

    monkeypatch.setattr(tape, "Node", Counted)
    return made


@pytest.mark.parametrize("c", CASES, ids=IDS)
def test_inference_records_nothing(dev, nodes_made, c: Case):
    """On an autodiff device, inputs that require no grad leave no node anywhere, and
    neither do inputs that do require grad under no_grad."""
    c.require(dev)
    lib = PyburnLib(dev, pyburn.float32)
    values = input_values(c, "float32")
    plain = as_list(c.fn(lib, *(lib.const(v) for v in values)))
    assert nodes_made == []
    assert all(o._node is None and not o.requires_grad for o in plain)
    leaves = [lib.leaf(v, inp.grad) for v, inp in zip(values, c.inputs)]
    with pyburn.no_grad():
        quiet = as_list(c.fn(lib, *leaves))
    assert nodes_made == []
    assert all(o._node is None and not o.requires_grad for o in quiet)


def test_cases_reach_every_rule(dev, nodes_made):
    """The table exercises every backward rule that a float result can reach on the device.
    `move` and `checkpoint` are checked in test_tape.py and test_api.py, `custom` (a
    function with its own backward) in tests/kernel/test_op.py, `quant_linear` (the packed
    quantized product) in test_quantized.py; `conv_weight` and
    `nll_loss_grad` are only ever made by a backward pass, which the second-order cases run;
    the rules of an optional capability exist only where the device has it."""
    lib = PyburnLib(dev, pyburn.float32)
    for c in CASES:
        if not c.runs_on(dev):
            continue
        leaves = [lib.leaf(v, inp.grad) for v, inp in zip(input_values(c, "float32"),
                                                          c.inputs)]
        c.fn(lib, *leaves)
    never_float = {op.rule for op in (*UNARY.values(), *BINARY.values())
                   if op.domain not in FLOAT_RESULT_DOMAINS}
    lacking = {op for op, c in capability.CAPABILITY_OF.items() if c.name not in dev.caps}
    if not {"float64", "float16"} & dev.caps:  # no float dtype to cast float32 to
        lacking.add("cast")
    wanted = set(RULES) - never_float - lacking - {"move", "custom", "quant_linear",
                                                   "conv_weight", "nll_loss_grad"}
    assert sorted(wanted - set(nodes_made)) == []
