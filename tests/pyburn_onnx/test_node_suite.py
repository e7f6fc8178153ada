"""Every case of the ONNX backend node test suite, on cpu and wgpu: each passes, or fails for
a reason written in `node_suite_known` (a case listed there that starts passing fails this
test too, so the table stays true). docs/onnx.md reports the pass rates."""

from __future__ import annotations

import os
import re

import pytest

import pyburn
from pyburn.backends import wgpu

from . import node_cases, node_suite
from .node_suite_known import KNOWN_FAILURES, UNSUPPORTED_OPERATORS, expected, listed

CASES = [os.path.basename(c) for c in node_cases.cases()]
DEVICES = ["cpu"] + (["wgpu"] if wgpu.unavailable_reason() is None else [])


def missing_operators(reason: str) -> list[str]:
    """The operator names an UnsupportedOperatorError message lists."""
    listed = re.search(r"implement: ([^;]*?)(?: \(docs|;|$)", reason)
    return [re.sub(r" \(x\d+\)$", "", op.strip()) for op in listed.group(1).split(",")] \
        if listed else []


@pytest.mark.parametrize("dev", DEVICES)
@pytest.mark.parametrize("case", CASES)
def test_node_case(case, dev):
    pyburn.manual_seed(0)  # a random case draws the same whatever ran before it on the worker
    outcome = node_suite.run_case(os.path.join(node_cases.SUITE, case), pyburn.device(dev))
    reason = expected(KNOWN_FAILURES, case, dev, outcome.reason)
    if outcome.status == "pass":
        stale = listed(KNOWN_FAILURES, case, dev)
        assert not stale, f"{case} passes now: remove it from node_suite_known ({stale})"
    elif outcome.status == "unsupported":
        unexplained = [op for op in missing_operators(outcome.reason)
                       if op not in UNSUPPORTED_OPERATORS]
        assert not unexplained and missing_operators(outcome.reason), outcome.reason
        pytest.skip("; ".join(f"{op}: {UNSUPPORTED_OPERATORS[op]}"
                              for op in missing_operators(outcome.reason)))
    else:
        assert reason is not None, f"{outcome.status}: {outcome.reason}"
        pytest.xfail(reason)
