"""The quantized products ``pyburn bench web`` times in a page (`in_page.quant_products`),
run here on the desktop's wasm device: their outputs pass the benchmark's check against
onnxruntime on the ONNX files it serves to onnxruntime-web, and the check refuses wrong ones.
"""

from __future__ import annotations

import asyncio

import pytest

from pyburn import ResultMismatch
from pyburn.bench import quant
from pyburn.bench.suite import unavailable
from pyburn.bench.web import DYNAMIC_TOLERANCE, _check_quant
from pyburn.bench.web.in_page import quant_products

np = pytest.importorskip("numpy")
ort = pytest.importorskip("onnxruntime")
pytest.importorskip("onnx")
M, SIZE = 4, 32


@pytest.fixture(scope="module")
def outputs(tmp_path_factory):
    """(pyburn's side, onnxruntime's side) as the benchmark's page and peer page give them."""
    if reason := unavailable("wasm"):
        pytest.skip(reason)
    ours = asyncio.run(quant_products(M, SIZE, 1, 0.0))
    w, _, q = quant.int8_weight(np, SIZE)
    paths = quant.write_models(w, q, str(tmp_path_factory.mktemp("models")))
    x = quant.float_input(M, SIZE).numpy(np)
    feeds = {"float": {"x": x}, "dynamic": {"x": x},
             "integer": {"a": np.array(ours["a"], np.uint8),
                         "az": np.array(ours["a_zero"], np.uint8)}}
    theirs = {name: {"output": ort.InferenceSession(paths[name], providers=[
        "CPUExecutionProvider"]).run(None, feeds[name])[0].ravel().tolist()} for name in feeds}
    return ours, theirs, q


def test_quant_products_agree_with_onnxruntime(outputs):
    ours, theirs, q = outputs
    assert set(ours["times"]) == {"dynamic", "integer", "weight_only", "float32"}
    assert all(t > 0 for times in ours["times"].values() for t in times)
    a = np.array(ours["a"], np.int64)
    assert a.min() >= 0 and a.max() <= 255
    np.testing.assert_array_equal(np.array(ours["integer"]), (a - ours["a_zero"]) @ q.T)
    _check_quant(np, ours, theirs)


@pytest.mark.parametrize("wrong", ["integer", "dynamic"])
def test_the_check_refuses_a_wrong_result(outputs, wrong):
    ours, theirs, _ = outputs
    bad = {name: {"output": list(side["output"])} for name, side in theirs.items()}
    peak = max(abs(v) for v in bad["dynamic"]["output"])
    bad[wrong]["output"][0] += 1 if wrong == "integer" else 10 * DYNAMIC_TOLERANCE * peak
    with pytest.raises(ResultMismatch, match=wrong):
        _check_quant(np, ours, bad)
