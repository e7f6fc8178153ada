"""pyburn.distributed's collectives on two Ray actors, against numpy (float64), on cpu and
once on flex; and the group's argument checks (no Ray needed)."""

from __future__ import annotations

import uuid

import numpy as np
import pytest

import pyburn
import pyburn.distributed as dist

from .helpers import values


@pytest.mark.parametrize("kind", ["cpu", "flex"])
def test_collectives_on_two_actors(cluster, ranks, kind):
    group = f"test-{uuid.uuid4().hex[:8]}"
    got = cluster.get([r.collectives.remote(i, 2, group, kind) for i, r in enumerate(ranks)],
                      timeout=60)
    x = [np.array(values(r)) for r in range(2)]
    dtype = "float64" if "float64" in pyburn.device(kind).caps else "float32"
    expected = {"sum": x[0] + x[1], "mean": (x[0] + x[1]) / 2, "max": np.maximum(*x),
                "min": np.minimum(*x)}
    for rank, result in enumerate(got):
        for op, want in expected.items():
            value, dt, dev = result[op]
            np.testing.assert_allclose(value, want, rtol=1e-6 if dtype == "float32" else 0)
            assert (dt, dev) == (dtype, kind)
        np.testing.assert_array_equal(result["broadcast"][0], x[1].astype(dtype))
        for gathered, want in zip(result["all_gather"], x):
            np.testing.assert_array_equal(gathered, want.astype(dtype))
        assert result["counts"][0].tolist() == [3] and result["counts"][1] == "int32"
        assert set(result["large"][0].tolist()) == {2.0}
        assert (result["rank"], result["world"]) == (rank, 2)
        for op in expected:  # every rank gets the same bits
            np.testing.assert_array_equal(result[op][0], got[0][op][0])


def test_a_collective_that_a_rank_misses_times_out(cluster, ranks):
    group = f"skip-{uuid.uuid4().hex[:8]}"
    messages = cluster.get([r.skip_all_reduce.remote(i, group, 1.0) for i, r in enumerate(ranks)],
                           timeout=30)
    # #0 is init's barrier
    assert "all_reduce('sum') #1 timed out after 1 s on rank 0" in messages[0]
    assert "rank 1 of 2 did not join" in messages[0]
    assert messages[1] == "no error"


def test_group_arguments_are_checked():
    with pytest.raises(pyburn.PyburnError, match="no process group"):
        dist.rank()
    assert not dist.is_initialized()
    with pytest.raises(pyburn.PyburnError, match="rank must be an int in"):
        dist.ProcessGroup(2, 2)
    with pytest.raises(pyburn.PyburnError, match="timeout must be a positive"):
        dist.ProcessGroup(0, 2, timeout=0)
