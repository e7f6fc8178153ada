"""`pyburn.vision.metrics` on every device against scikit-image (PSNR, SSIM) and numpy
(Dice, IoU); SSIM's gradient against PyTorch's autograd of the same formula; the Learner
metrics over several batches equal the mean per image."""

from __future__ import annotations

import numpy as np
import pytest

import pyburn
from pyburn.train.metrics import StepOutput
from pyburn.vision.metrics import (
    MSSSIM,
    PSNR,
    SSIM,
    Dice,
    IoU,
    dice,
    frechet_distance,
    gram_matrix,
    gram_matrix_loss,
    iou,
    lpips,
    ms_ssim,
    psnr,
    ssim,
)

skimage_metrics = pytest.importorskip("skimage.metrics", reason="scikit-image is the reference")
torch = pytest.importorskip("torch")

RNG = np.random.default_rng(0)
CLEAN = RNG.random((3, 3, 24, 30)).astype(np.float32)
NOISY = np.clip(CLEAN + RNG.normal(0, 0.1, CLEAN.shape), 0, 1).astype(np.float32)


def skimage_ssim(a: np.ndarray, b: np.ndarray) -> float:
    return skimage_metrics.structural_similarity(
        a, b, gaussian_weights=True, sigma=1.5, use_sample_covariance=False, data_range=1.0,
        channel_axis=0)


def test_psnr_and_ssim_match_scikit_image(device):
    a, b = pyburn.tensor(CLEAN, device=device), pyburn.tensor(NOISY, device=device)
    want = [skimage_metrics.peak_signal_noise_ratio(x, y, data_range=1.0)
            for x, y in zip(CLEAN, NOISY)]
    np.testing.assert_allclose(psnr(a, b).numpy(), want, rtol=1e-5)
    np.testing.assert_allclose(ssim(a, b).numpy(), [skimage_ssim(x, y)
                                                    for x, y in zip(CLEAN, NOISY)], atol=1e-5)
    assert psnr(a, a).tolist() == [float("inf")] * 3


def test_dice_and_iou_of_masks(device):
    a, b = RNG.random((4, 9, 7)) > 0.5, RNG.random((4, 9, 7)) > 0.4
    a[3], b[3] = False, False  # both empty: a perfect match
    both, either = (a & b).sum((1, 2)), (a | b).sum((1, 2))
    wanted_dice = np.where(a.sum((1, 2)) + b.sum((1, 2)) == 0, 1.0,
                           2 * both / np.maximum(a.sum((1, 2)) + b.sum((1, 2)), 1))
    wanted_iou = np.where(either == 0, 1.0, both / np.maximum(either, 1))
    ta, tb = pyburn.tensor(a, device=device), pyburn.tensor(b, device=device)
    np.testing.assert_allclose(dice(ta, tb).numpy(), wanted_dice, rtol=1e-6)
    np.testing.assert_allclose(iou(ta, tb).numpy(), wanted_iou, rtol=1e-6)


def torch_ssim(x, y):
    taps = torch.exp(-(torch.arange(11, dtype=x.dtype) - 5) ** 2 / (2 * 1.5 ** 2))
    window = (taps / taps.sum())
    kernel = (window[:, None] * window[None, :]).expand(x.shape[1], 1, 11, 11)

    def blur(t):
        return torch.nn.functional.conv2d(t, kernel, groups=x.shape[1])
    mx, my = blur(x), blur(y)
    xx, yy, xy = blur(x * x) - mx ** 2, blur(y * y) - my ** 2, blur(x * y) - mx * my
    c1, c2 = 0.01 ** 2, 0.03 ** 2
    value = ((2 * mx * my + c1) * (2 * xy + c2)) / ((mx ** 2 + my ** 2 + c1) * (xx + yy + c2))
    return value.mean(dim=(1, 2, 3))


def test_ssims_gradient_matches_torch_autograd(device):
    grad_device = pyburn.device(device).autodiff()
    mine = pyburn.tensor(NOISY, device=grad_device, requires_grad=True)
    ssim(mine, pyburn.tensor(CLEAN, device=grad_device)).sum().backward()
    x = torch.tensor(NOISY.astype(np.float64), requires_grad=True)
    torch_ssim(x, torch.tensor(CLEAN.astype(np.float64))).sum().backward()
    np.testing.assert_allclose(mine.grad.numpy(), x.grad.numpy(), rtol=1e-3, atol=1e-6)


@pytest.mark.parametrize("metric", [PSNR(), SSIM(), Dice(threshold=0.5)],
                         ids=["psnr", "ssim", "dice"])
def test_learner_metrics_are_means_over_every_image(metric):
    batches = [(NOISY[:2], CLEAN[:2]), (NOISY[2:], CLEAN[2:])]
    metric.reset()
    for outputs, targets in batches:
        out = pyburn.tensor(outputs, device="cpu")
        target = pyburn.tensor(targets > 0.5 if metric.name == "dice" else targets,
                               device="cpu")
        metric.update(StepOutput(out, target, pyburn.tensor(0.0, device="cpu"),
                                 len(outputs), "valid"))
    per_image = {"psnr": lambda x, y: skimage_metrics.peak_signal_noise_ratio(y, x,
                                                                             data_range=1.0),
                 "ssim": lambda x, y: skimage_ssim(x, y),
                 "dice": lambda x, y: 2 * ((x > 0.5) & (y > 0.5)).sum() /
                 ((x > 0.5).sum() + (y > 0.5).sum())}[metric.name]
    want = np.mean([per_image(x, y) for x, y in zip(NOISY, CLEAN)])
    assert metric.compute() == pytest.approx(want, rel=1e-5)
    assert metric.higher_is_better


def test_unlike_shapes_and_small_images_are_refused():
    with pytest.raises(pyburn.PyburnError, match="one shape"):
        psnr(pyburn.zeros(1, 1, 4, 4, device="flex"), pyburn.zeros(1, 1, 4, 5, device="flex"))
    with pytest.raises(pyburn.PyburnError, match="window"):
        ssim(pyburn.zeros(1, 1, 8, 8, device="flex"), pyburn.zeros(1, 1, 8, 8, device="flex"))


def test_ms_ssim_matches_pytorch_msssim(device):
    reference = pytest.importorskip("pytorch_msssim", reason="pytorch-msssim is the reference")
    rng = np.random.default_rng(1)
    clean = rng.random((1, 2, 168, 165)).astype(np.float32)  # odd and even sides
    noisy = np.clip(clean + rng.normal(0, 0.1, clean.shape), 0, 1).astype(np.float32)
    got = ms_ssim(pyburn.tensor(noisy, device=device), pyburn.tensor(clean, device=device))
    want = reference.ms_ssim(torch.tensor(noisy), torch.tensor(clean), data_range=1.0,
                             size_average=False).numpy()
    np.testing.assert_allclose(got.numpy(), want, atol=1e-5)
    with pytest.raises(pyburn.PyburnError, match="scales"):
        ms_ssim(pyburn.zeros(1, 1, 100, 200, device=device),
                pyburn.zeros(1, 1, 100, 200, device=device))


@pytest.mark.parametrize("n, m, dims", [(64, 50, 8), (20, 25, 32)], ids=["full", "rank-deficient"])
def test_frechet_distance_matches_scipys_matrix_root(device, n, m, dims):
    linalg = pytest.importorskip("scipy.linalg")
    rng = np.random.default_rng(dims)
    a = rng.standard_normal((n, dims)).astype(np.float32)
    b = (rng.standard_normal((m, dims)) * 1.3 + 0.4).astype(np.float32)
    s1, s2 = np.cov(a.astype(np.float64), rowvar=False), np.cov(b.astype(np.float64), rowvar=False)
    want = ((a.mean(0) - b.mean(0)) ** 2).sum() + np.trace(
        s1 + s2 - 2 * linalg.sqrtm(s1 @ s2).real)
    got = frechet_distance(pyburn.tensor(a, device=device), pyburn.tensor(b, device=device))
    assert got.item() == pytest.approx(want, rel=1e-4)
    with pytest.raises(pyburn.PyburnError, match=r"\(N, D\)"):
        frechet_distance(pyburn.tensor(a, device=device), pyburn.tensor(b[:, :3], device=device))


def test_lpips_is_the_formula_over_the_callers_network(device):
    """The LPIPS project's computation (normalize_tensor, squared differences, the 1 x 1
    linear layer, spatial average, sum over layers) in PyTorch, over the same small
    network: two conv layers with ReLU, random weights."""
    rng = np.random.default_rng(5)
    w1, w2 = (rng.standard_normal(s).astype(np.float32) * 0.3 for s in ((4, 3, 3, 3),
                                                                       (6, 4, 3, 3)))
    linear = [rng.random(4).astype(np.float32), rng.random(6).astype(np.float32)]
    grad_device = pyburn.device(device).autodiff()
    import pyburn.nn.functional as F

    def ours(x):
        first = F.relu(F.conv2d(x, pyburn.tensor(w1, device=grad_device), padding=1))
        return [first, F.relu(F.conv2d(first, pyburn.tensor(w2, device=grad_device), stride=2))]

    def theirs(x):
        conv = torch.nn.functional.conv2d
        first = torch.relu(conv(x, torch.tensor(w1, dtype=x.dtype), padding=1))
        return [first, torch.relu(conv(first, torch.tensor(w2, dtype=x.dtype), stride=2))]

    x = pyburn.tensor(NOISY[:, :, :16, :16], device=grad_device, requires_grad=True)
    got = lpips(x, pyburn.tensor(CLEAN[:, :, :16, :16], device=grad_device), ours,
                [pyburn.tensor(w, device=grad_device) for w in linear])
    got.sum().backward()
    tx = torch.tensor(NOISY[:, :, :16, :16].astype(np.float64), requires_grad=True)
    total = 0
    for a, b, w in zip(theirs(tx), theirs(torch.tensor(CLEAN[:, :, :16, :16].astype(np.float64))),
                       linear):
        a = a / (a.pow(2).sum(1, keepdim=True).sqrt() + 1e-10)
        b = b / (b.pow(2).sum(1, keepdim=True).sqrt() + 1e-10)
        lin = torch.nn.functional.conv2d((a - b) ** 2, torch.tensor(w.astype(np.float64))
                                         .reshape(1, -1, 1, 1))
        total = total + lin.mean(dim=(2, 3)).reshape(-1)
    total.sum().backward()
    np.testing.assert_allclose(got.numpy(), total.detach().numpy(), rtol=1e-4)
    np.testing.assert_allclose(x.grad.numpy(), tx.grad.numpy(), rtol=1e-3, atol=1e-6)


def test_gram_matrix_and_its_loss_match_torch(device):
    grad_device = pyburn.device(device).autodiff()
    a = pyburn.tensor(NOISY, device=grad_device, requires_grad=True)
    gram_matrix_loss(a, pyburn.tensor(CLEAN, device=grad_device)).backward()
    x = torch.tensor(NOISY.astype(np.float64), requires_grad=True)

    def gram(t):
        flat = t.reshape(t.shape[0], t.shape[1], -1)
        return flat @ flat.transpose(1, 2) / flat.shape[1] / flat.shape[2]
    loss = ((gram(x) - gram(torch.tensor(CLEAN.astype(np.float64)))) ** 2).mean()
    loss.backward()
    np.testing.assert_allclose(gram_matrix(pyburn.tensor(NOISY, device=device)).numpy(),
                               gram(torch.tensor(NOISY)).numpy(), rtol=1e-5)
    np.testing.assert_allclose(a.grad.numpy(), x.grad.numpy(), rtol=1e-3, atol=1e-9)


@pytest.mark.parametrize("metric", [MSSSIM(), IoU(threshold=0.5)], ids=["ms_ssim", "iou"])
def test_more_learner_metrics_are_means_over_every_image(metric):
    rng = np.random.default_rng(4)
    clean = rng.random((3, 1, 168, 168)).astype(np.float32)
    noisy = np.clip(clean + rng.normal(0, 0.1, clean.shape), 0, 1).astype(np.float32)
    metric.reset()
    for part in (slice(0, 2), slice(2, 3)):
        out = pyburn.tensor(noisy[part], device="cpu")
        target = clean[part] > 0.5 if metric.name == "iou" else clean[part]
        metric.update(StepOutput(out, pyburn.tensor(target, device="cpu"),
                                 pyburn.tensor(0.0, device="cpu"), 1, "valid"))
    a, b = pyburn.tensor(noisy, device="cpu"), pyburn.tensor(clean, device="cpu")
    per_image = ms_ssim(a, b) if metric.name == "ms_ssim" else iou(a > 0.5, b > 0.5)
    assert metric.compute() == pytest.approx(float(np.mean(per_image.numpy())), rel=1e-5)
