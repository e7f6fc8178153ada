"""Each metric against a float64 numpy computation written here from its definition, over
several batches on every device, and through a state_dict round trip."""

from __future__ import annotations

import numpy as np
import pytest

import pyburn
from pyburn.train.metrics import (
    Accuracy,
    ConfusionMatrix,
    CpuMemory,
    F1Score,
    ItemsPerSecond,
    LearningRate,
    Loss,
    Precision,
    Recall,
    StepOutput,
    TopKAccuracy,
    format_number,
    resident_memory,
)

CLASSES = 5


def batches(device, sizes=(7, 16, 3), seed=0, ignore=False):
    """Random logits and targets, as numpy arrays and as StepOutputs on `device`."""
    rng = np.random.default_rng(seed)
    out = []
    for n in sizes:
        logits = rng.standard_normal((n, CLASSES)).astype(np.float32)
        targets = rng.integers(0, CLASSES, n).astype(np.int32)
        if ignore:
            targets[rng.random(n) < 0.3] = -100
        loss = np.float32(rng.random())
        step = StepOutput(pyburn.tensor(logits, device=device),
                          pyburn.tensor(targets, device=device),
                          pyburn.tensor(loss, device=device), n, "train")
        out.append((logits, targets, loss, step))
    return out


def run(metric, data):
    metric.reset()
    for *_, step in data:
        metric.update(step)
    return metric.compute()


def confusion(data):
    matrix = np.zeros((CLASSES, CLASSES), dtype=np.int64)
    for logits, targets, _, _ in data:
        keep = (targets >= 0) & (targets < CLASSES)
        np.add.at(matrix, (targets[keep], logits.argmax(1)[keep]), 1)
    return matrix


def macro(matrix, score):
    tp = np.diag(matrix).astype(np.float64)
    fp = matrix.sum(0) - tp
    fn = matrix.sum(1) - tp
    present = (tp + fp + fn) > 0
    num, den = score(tp, fp, fn)
    per_class = np.divide(num, den, out=np.zeros_like(num), where=den > 0)
    return per_class[present].mean()


def test_loss_is_the_mean_over_items(device):
    data = batches(device)
    total = sum(np.float64(loss) * len(t) for _, t, loss, _ in data)
    assert run(Loss(), data) == pytest.approx(total / sum(len(t) for _, t, _, _ in data),
                                               rel=1e-6)


def test_accuracy(device):
    data = batches(device)
    hits = sum(int((logits.argmax(1) == t).sum()) for logits, t, _, _ in data)
    assert run(Accuracy(), data) == hits / sum(len(t) for _, t, _, _ in data)


@pytest.mark.parametrize("k", [1, 2, 3])
def test_top_k_accuracy(device, k):
    data = batches(device)
    hits = 0
    for logits, t, _, _ in data:
        top = np.argsort(-logits, axis=1, kind="stable")[:, :k]
        hits += int((top == t[:, None]).any(1).sum())
    metric = TopKAccuracy(k)
    assert metric.name == f"top{k}_accuracy"
    assert run(metric, data) == hits / sum(len(t) for _, t, _, _ in data)


def test_accuracy_takes_probability_targets(device):
    logits = pyburn.tensor([[2.0, 0.0], [0.0, 1.0], [3.0, 1.0]], device=device)
    one_hot = pyburn.tensor([[1.0, 0.0], [1.0, 0.0], [1.0, 0.0]], device=device)
    metric = Accuracy()
    metric.update(StepOutput(logits, one_hot, pyburn.tensor(0.0, device=device), 3, "train"))
    assert metric.compute() == 2 / 3


@pytest.mark.parametrize("ignore", [False, True])
def test_confusion_matrix_skips_out_of_range_targets(device, ignore):
    data = batches(device, ignore=ignore)
    assert run(ConfusionMatrix(CLASSES), data) == confusion(data).tolist()


@pytest.mark.parametrize("ignore", [False, True])
def test_macro_precision_recall_f1(device, ignore):
    data = batches(device, sizes=(9, 4, 12), seed=3, ignore=ignore)
    matrix = confusion(data)
    assert run(Precision(CLASSES), data) == pytest.approx(
        macro(matrix, lambda tp, fp, fn: (tp, tp + fp)), abs=1e-12)
    assert run(Recall(CLASSES), data) == pytest.approx(
        macro(matrix, lambda tp, fp, fn: (tp, tp + fn)), abs=1e-12)
    assert run(F1Score(CLASSES), data) == pytest.approx(
        macro(matrix, lambda tp, fp, fn: (2 * tp, 2 * tp + fp + fn)), abs=1e-12)


def test_macro_average_leaves_out_absent_classes_and_counts_zero_division_as_zero(device):
    # targets 0, 0, 1; predictions 0, 1, 1 (class 2 never occurs); class 3 predicted only
    logits = pyburn.tensor([[9.0, 0, 0, 0], [0, 9.0, 0, 0], [0, 0, 0, 9.0]], device=device)
    targets = pyburn.tensor([0, 0, 1], device=device)
    step = StepOutput(logits, targets, pyburn.tensor(0.0, device=device), 3, "train")
    results = {}
    for cls in (Precision, Recall, F1Score):
        metric = cls(4)
        metric.update(step)
        results[cls.name] = metric.compute()
    # class 0: tp 1 fp 0 fn 1; class 1: tp 0 fp 1 fn 1; class 3: tp 0 fp 1 fn 0
    assert results["precision"] == pytest.approx((1 + 0 + 0) / 3)
    assert results["recall"] == pytest.approx((0.5 + 0 + 0) / 3)
    assert results["f1"] == pytest.approx((2 / 3 + 0 + 0) / 3)


def test_metrics_are_none_before_any_batch():
    for metric in (Loss(), Accuracy(), TopKAccuracy(2), ConfusionMatrix(3), F1Score(3),
                   LearningRate(), ItemsPerSecond()):
        assert metric.compute() is None


def test_accumulators_stay_on_the_device(device):
    data = batches(device)
    for metric in (Loss(), Accuracy(), ConfusionMatrix(CLASSES)):
        run(metric, data)
        for value in metric.state_dict().values():
            if isinstance(value, pyburn.Tensor):
                assert value.device is device


def test_state_dict_round_trip_continues_the_same_sums(device):
    data = batches(device, sizes=(5, 8, 6, 7))
    for make in (Loss, Accuracy, lambda: TopKAccuracy(2), lambda: F1Score(CLASSES)):
        whole = run(make(), data)
        first = make()
        for *_, step in data[:2]:
            first.update(step)
        second = make()
        second.load_state_dict(first.state_dict())
        for *_, step in data[2:]:
            second.update(step)
        assert second.compute() == whole


def test_learning_rate_reads_the_first_group(device):
    class Opt:
        param_groups = [{"lr": 0.125}, {"lr": 1.0}]

    metric = LearningRate()
    metric.update(StepOutput(None, None, pyburn.tensor(0.0, device=device), 1, "train", Opt()))
    assert metric.compute() == 0.125
    assert metric.splits == ("train",)


def test_items_per_second_counts_items(device):
    metric = ItemsPerSecond()
    for *_, step in batches(device):
        metric.update(step)
    assert metric.items == 26 and metric.seconds > 0
    assert metric.compute() == pytest.approx(26 / metric.seconds)


def test_cpu_memory_reads_the_resident_size():
    found = resident_memory()
    if found is None:
        pytest.skip("this platform does not report memory")
    with open("/proc/self/status") as status:
        vm_rss_kib = next(int(line.split()[1]) for line in status if line.startswith("VmRSS"))
    assert abs(found / 1024 - vm_rss_kib) < 64 * 1024  # within 64 MiB: it moves while we look
    assert CpuMemory().compute() == pytest.approx(found / 2**20, rel=0.5)


def test_cpu_memory_without_a_source(monkeypatch):
    import builtins

    from pyburn.train.metrics import system

    real_open, real_import = builtins.open, builtins.__import__

    def no_proc(path, *args, **kwargs):
        if str(path).startswith("/proc"):
            raise FileNotFoundError(path)
        return real_open(path, *args, **kwargs)

    def no_resource(name, *args, **kwargs):
        if name == "resource":
            raise ImportError(name)
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "open", no_proc)
    monkeypatch.setattr(builtins, "__import__", no_resource)
    assert system.resident_memory() is None
    assert CpuMemory().compute() is None


def test_format_number():
    assert format_number(0.123456) == "0.1235"
    assert format_number(123456.7) == "123,457"
    assert format_number(None) == "-"
    assert format_number(7) == "7"


def test_shape_errors_name_the_shapes(device):
    metric = Accuracy()
    step = StepOutput(pyburn.zeros(4, 3, device=device), pyburn.zeros(5, dtype="int32",
                                                                      device=device),
                      pyburn.tensor(0.0, device=device), 4, "train")
    with pytest.raises(pyburn.ShapeError, match=r"\(5,\).*\(4, 3\)"):
        metric.update(step)
