"""Loss modules against PyTorch: options, weight buffers in the state_dict, forward and
gradients."""

from __future__ import annotations

import pytest

import pyburn
from pyburn import nn

from .twins import check_twin, inputs_for, np, torch

RNG = np.random.default_rng(7)
LOGITS = RNG.normal(size=(4, 3)).astype(np.float32)
CLASSES = np.array([0, 2, 1, 2])
PROBS = RNG.uniform(0.05, 0.95, (4, 3)).astype(np.float32)
TARGET01 = RNG.integers(0, 2, (4, 3)).astype(np.float32)
PRED, TRUE = inputs_for("regression", (3, 4), (3, 4))
SIGNS = np.array([1.0, -1.0, 1.0], np.float32)
WEIGHT = np.array([0.5, 2.0, 1.0], np.float32)


def _weight(lib, device):
    return (pyburn.tensor(WEIGHT, device=device) if lib is nn
            else torch.tensor(WEIGHT))


CASES = {
    "L1Loss": ({}, [PRED, TRUE]),
    "MSELoss-sum": ({"reduction": "sum"}, [PRED, TRUE]),
    "HuberLoss": ({"delta": 0.5}, [PRED, TRUE]),
    "SmoothL1Loss": ({"beta": 0.7, "reduction": "none"}, [PRED, TRUE]),
    "KLDivLoss": ({"reduction": "batchmean"}, [np.log(PROBS), PROBS]),
    "KLDivLoss-log": ({"log_target": True, "reduction": "sum"},
                      [np.log(PROBS), np.log(PROBS[::-1].copy())]),
    "NLLLoss": ({"ignore_index": 1}, [np.log(PROBS), CLASSES]),
    "CrossEntropyLoss": ({"label_smoothing": 0.2}, [LOGITS, CLASSES]),
    "CrossEntropyLoss-probs": ({}, [LOGITS, PROBS / PROBS.sum(1, keepdims=True)]),
    "BCELoss": ({}, [PROBS, TARGET01]),
    "BCEWithLogitsLoss": ({"reduction": "sum"}, [LOGITS, TARGET01]),
    "PoissonNLLLoss": ({"full": True}, [PRED, np.abs(TRUE)]),
    "GaussianNLLLoss": ({}, [PRED, TRUE, np.abs(PRED) + 0.1]),
    "CosineEmbeddingLoss": ({"margin": 0.1}, [PRED, TRUE, SIGNS]),
    "MarginRankingLoss": ({"margin": 0.2}, [PRED[:, 0].copy(), TRUE[:, 0].copy(), SIGNS]),
    "HingeEmbeddingLoss": ({}, [PRED, np.sign(TRUE)]),
    "TripletMarginLoss": ({"swap": True}, [PRED, TRUE, PRED[::-1].copy()]),
}
WEIGHTED = ["NLLLoss", "CrossEntropyLoss", "BCELoss", "BCEWithLogitsLoss"]


@pytest.mark.parametrize("case", CASES)
def test_loss_matches_pytorch(device, case):
    name = case.split("-")[0]
    kwargs, inputs = CASES[case]
    check_twin(device, getattr(nn, name)(**kwargs), getattr(torch.nn, name)(**kwargs), inputs)


@pytest.mark.parametrize("name", WEIGHTED)
def test_weighted_loss_matches_pytorch(device, name):
    inputs = {"NLLLoss": [np.log(PROBS), CLASSES], "CrossEntropyLoss": [LOGITS, CLASSES],
              "BCELoss": [PROBS, TARGET01], "BCEWithLogitsLoss": [LOGITS, TARGET01]}[name]
    ours = getattr(nn, name)(weight=_weight(nn, device))
    theirs = getattr(torch.nn, name)(weight=_weight(torch.nn, device))
    assert list(ours.state_dict()) == ["weight"]
    check_twin(device, ours, theirs, inputs)


def test_pos_weight_buffer(device):
    ours = nn.BCEWithLogitsLoss(pos_weight=pyburn.tensor(WEIGHT, device=device))
    theirs = torch.nn.BCEWithLogitsLoss(pos_weight=torch.tensor(WEIGHT))
    assert list(ours.state_dict()) == ["pos_weight"]
    check_twin(device, ours, theirs, [LOGITS, TARGET01])


def test_ctc_loss_matches_pytorch(device):
    log_probs = np.log(np.random.default_rng(3).dirichlet(np.ones(4), (6, 2))).astype(np.float32)
    targets = np.array([[1, 2], [3, 3]])
    # PyTorch's CTC backward assumes log_probs came from log_softmax (see the functional
    # tests, which check gradients through it): values only here
    check_twin(device, nn.CTCLoss(), torch.nn.CTCLoss(),
               [log_probs, targets, [6, 5], [2, 2]], grad=False)


def test_reduction_is_checked():
    with pytest.raises(pyburn.ArgumentError, match="reduction"):
        nn.MSELoss(reduction="avg")
    with pytest.raises(pyburn.ArgumentError, match="reduction"):
        nn.L1Loss(reduction="batchmean")
    assert nn.KLDivLoss(reduction="batchmean").reduction == "batchmean"
