"""The code `pyburn onnx convert` writes for every case of the ONNX backend node test suite
gives the runner's results (`parity`), on cpu and on wgpu: each case is converted once and
compared on every device in the same test. Where the runner itself cannot load or run a case
on a device, there is nothing to compare (`test_node_suite` says why); a difference fails
the test unless `node_suite_known.GENERATED_DIFFERENCES` lists it with its reason."""

from __future__ import annotations

import os

import pytest

from pyburn.onnx import UnsupportedOperatorError

from . import node_cases, parity
from .node_suite_known import GENERATED_DIFFERENCES, expected, listed

CASES = [os.path.basename(c) for c in node_cases.cases()]


@pytest.mark.parametrize("case", CASES)
def test_generated_code_gives_the_runners_results(case, tmp_path):
    folder = os.path.join(node_cases.SUITE, case)
    try:
        model_class, weights = parity.generated(os.path.join(folder, "model.onnx"), tmp_path)
    except UnsupportedOperatorError:
        pytest.skip("an operator pyburn lacks (test_node_suite names it)")
    problems, reasons = [], []
    for dev in parity.DEVICES:
        why = parity.case_difference(folder, model_class, weights, dev)
        reason = expected(GENERATED_DIFFERENCES, case, dev, why) if why else None
        if why and reason is None:
            problems.append(f"{dev}: {why}")
        elif why:
            reasons.append(reason)
        elif why == "" and listed(GENERATED_DIFFERENCES, case, dev):
            problems.append(f"{dev}: gives the runner's results now: remove it from "
                            f"GENERATED_DIFFERENCES")
    assert not problems, "; ".join(problems)
    if reasons:
        pytest.xfail("; ".join(reasons))
