"""Image quality and segmentation metrics, per image of a batch (N, C, H, W), as tensor ops
(every device, with gradients: SSIM makes a loss), and the same as `Learner` metrics.

- `psnr`: ``10 log10(data_range^2 / MSE)``;
- `ssim`: the structural similarity of Wang et al. (2004) with a Gaussian window (11 taps,
  sigma 1.5), K1 = 0.01, K2 = 0.03, averaged over the positions whose window lies inside
  the image and over the channels: scikit-image's ``structural_similarity`` with
  ``gaussian_weights=True, use_sample_covariance=False``;
- `ms_ssim`: multi-scale SSIM over five scales (Wang et al., 2003), as pytorch-msssim
  computes it (each scale's term clipped at 0; 2 x 2 means between scales, an odd side
  padded);
- `frechet_distance` of two sets of features (FID over Inception's features);
- `lpips` over the caller's feature network (LPIPS's formula);
- `gram_matrix` and `gram_matrix_loss` (style statistics, a loss);
- `dice` and `iou` of masks: ``2 |A n B| / (|A| + |B|)`` and ``|A n B| / |A u B|`` (1 where
  both are empty).

>>> import pyburn
>>> a = pyburn.ones(1, 1, 16, 16, device="flex")
>>> round(ssim(a, a).item(), 6), dice(a > 0, a > 0).tolist()
(1.0, [1.0])
"""

from __future__ import annotations

import math
from abc import ABC, abstractmethod
from collections.abc import Callable, Sequence

from .._tensor import Tensor
from ..errors import ShapeError
from ..nn.functional import avg_pool2d
from ..ops.creation import tensor
from ..ops.linalg import eye
from ..train.metrics.base import Metric, StepOutput, Value, add
from .filters import filter2d, gaussian_kernel1d

#: SSIM's constants
K1, K2 = 0.01, 0.03
WINDOW, SIGMA = 11, 1.5
#: MS-SSIM's weights of its five scales (Wang et al., 2003)
MS_SSIM_WEIGHTS = (0.0448, 0.2856, 0.3001, 0.2363, 0.1333)


def _shape(value: object) -> object:
    return getattr(value, "shape", type(value).__name__)


def _pair(prediction: Tensor, target: Tensor, name: str) -> None:
    if not isinstance(prediction, Tensor) or not isinstance(target, Tensor) or \
            prediction.shape != target.shape or prediction.ndim != 4:
        raise ShapeError(f"{name} takes two batches of images (N, C, H, W) of one shape, got "
                         f"{_shape(prediction)} and {_shape(target)}")


def psnr(prediction: Tensor, target: Tensor, data_range: float = 1.0) -> Tensor:
    """Peak signal-to-noise ratio in dB of each image, (N,) (infinite where they are equal)."""
    _pair(prediction, target, "psnr")
    error = ((prediction.float() - target.float()) ** 2).mean(dim=(1, 2, 3))
    return (data_range * data_range / error).log() * (10 / math.log(10))


def _blur(x: Tensor, taps: Tensor) -> Tensor:
    """x filtered by the separable window, only where the window fits (valid positions)."""
    size = taps.shape[0]
    vertical = filter2d(x, taps.reshape(size, 1), "constant")
    both = filter2d(vertical, taps.reshape(1, size), "constant")
    half = size // 2
    return both[:, :, half:x.shape[2] - half, half:x.shape[3] - half]


def _similarity(x: Tensor, y: Tensor, taps: Tensor,
                data_range: float) -> tuple[Tensor, Tensor]:
    """SSIM and its contrast-structure term, each averaged per image and channel, (N, C)."""
    mx, my = _blur(x, taps), _blur(y, taps)
    xx, yy, xy = _blur(x * x, taps) - mx * mx, _blur(y * y, taps) - my * my, \
        _blur(x * y, taps) - mx * my
    c1, c2 = (K1 * data_range) ** 2, (K2 * data_range) ** 2
    contrast = (xy * 2 + c2) / (xx + yy + c2)
    luminance = (mx * my * 2 + c1) / (mx * mx + my * my + c1)
    return (luminance * contrast).mean(dim=(2, 3)), contrast.mean(dim=(2, 3))


def ssim(prediction: Tensor, target: Tensor, data_range: float = 1.0,
         window_size: int = WINDOW, sigma: float = SIGMA) -> Tensor:
    """The mean structural similarity of each image pair, (N,), in [-1, 1]."""
    _pair(prediction, target, "ssim")
    if min(prediction.shape[2:]) < window_size:
        raise ShapeError(f"ssim's {window_size}-pixel window does not fit images of "
                         f"{prediction.shape[2]} x {prediction.shape[3]}")
    taps = tensor(gaussian_kernel1d(window_size, sigma), device=prediction.device)
    similarity, _ = _similarity(prediction.float(), target.float(), taps, data_range)
    return similarity.mean(dim=1)


def ms_ssim(prediction: Tensor, target: Tensor, data_range: float = 1.0,
            weights: tuple[float, ...] = MS_SSIM_WEIGHTS, window_size: int = WINDOW,
            sigma: float = SIGMA) -> Tensor:
    """Multi-scale SSIM (Wang, Simoncelli and Bovik, 2003) of each image pair, (N,): the
    contrast-structure terms of the first scales and the SSIM of the last, each clipped at
    0 and raised to its weight, the images halved (2 x 2 means) between scales."""
    _pair(prediction, target, "ms_ssim")
    smallest = (window_size - 1) * 2 ** (len(weights) - 1)
    if min(prediction.shape[2:]) <= smallest:
        raise ShapeError(f"ms_ssim's {len(weights)} scales need images larger than "
                         f"{smallest} pixels a side, got {prediction.shape[2]} x "
                         f"{prediction.shape[3]}")
    taps = tensor(gaussian_kernel1d(window_size, sigma), device=prediction.device)
    x, y = prediction.float(), target.float()
    total = None
    for level, weight in enumerate(weights):
        similarity, contrast = _similarity(x, y, taps, data_range)
        last = level == len(weights) - 1
        term = (similarity if last else contrast).relu() ** weight
        total = term if total is None else total * term
        if not last:
            padding = (x.shape[2] % 2, x.shape[3] % 2)
            x, y = avg_pool2d(x, 2, padding=padding), avg_pool2d(y, 2, padding=padding)
    assert total is not None
    return total.mean(dim=1)


#: the least squared length LPIPS takes the root of
TINY = 1e-30
#: most Newton-Schulz steps of a matrix square root (it converges quadratically once near)
ROOT_STEPS = 60


def _sqrt_psd(a: Tensor) -> Tensor:
    """The square root of a symmetric positive semi-definite matrix (D, D), by the coupled
    Newton-Schulz iteration on it scaled to norm 1: matrix products only, so every device.
    It stops once ``I - Z Y`` stops shrinking: on a singular matrix Z grows without bound
    along the null space, and the steps after convergence would only add its errors."""
    size = a.shape[0]
    scale = (a * a).sum().sqrt() + 1e-12
    identity = eye(size, device=a.device, dtype=a.dtype)
    y, z = a / scale, identity
    best = None
    for _ in range(ROOT_STEPS):
        t = (identity * 3 - z @ y) * 0.5
        y_next, z_next = y @ t, t @ z
        residual = ((identity - z_next @ y_next) ** 2).sum().item()
        if best is not None and not residual < best:
            break
        best, y, z = residual, y_next, z_next
    return y * scale.sqrt()


def _moments(features: Tensor) -> tuple[Tensor, Tensor]:
    """Mean (D,) and unbiased covariance (D, D) of features (N, D)."""
    mean = features.mean(dim=0)
    centred = features - mean
    return mean, centred.mT @ centred / (features.shape[0] - 1)


def frechet_distance(features_a: Tensor, features_b: Tensor) -> Tensor:
    """The Fréchet distance between Gaussians fitted to two sets of features (N, D) and
    (M, D): ``|mu_a - mu_b|^2 + Tr(S_a + S_b - 2 (S_a S_b)^(1/2))``. FID is this over
    Inception-v3's pooled features of real and generated images; pyburn ships no Inception
    weights, so the features come from the caller's model."""
    if not isinstance(features_a, Tensor) or not isinstance(features_b, Tensor) or \
            features_a.ndim != 2 or features_b.ndim != 2 or \
            features_a.shape[1] != features_b.shape[1] or min(features_a.shape[0],
                                                              features_b.shape[0]) < 2:
        raise ShapeError(f"frechet_distance takes two sets of features (N, D) and (M, D), at "
                         f"least 2 each, got {_shape(features_a)} and {_shape(features_b)}")
    mean_a, cov_a = _moments(features_a.float())
    mean_b, cov_b = _moments(features_b.float())
    root_a = _sqrt_psd(cov_a)
    # Tr((S_a S_b)^(1/2)) = Tr((S_a^(1/2) S_b S_a^(1/2))^(1/2)): a symmetric matrix's root
    middle = _sqrt_psd(root_a @ cov_b @ root_a)
    trace = (cov_a + cov_b - middle * 2) * eye(cov_a.shape[0], device=cov_a.device)
    return ((mean_a - mean_b) ** 2).sum() + trace.sum()


def lpips(prediction: Tensor, target: Tensor, features: Callable[[Tensor], Sequence[Tensor]],
          weights: Sequence[Tensor] | None = None, eps: float = 1e-10) -> Tensor:
    """The learned perceptual distance of Zhang et al. (2018) of each image pair, (N,), over
    the caller's network: `features(images)` gives a list of feature maps (N, C_l, H_l, W_l);
    each is scaled to unit length along its channels, the two images' maps are subtracted
    and squared, weighted per channel by `weights[l]` (C_l,) (None: 1), summed over channels,
    averaged over positions, and summed over layers. With AlexNet's or VGG's features and
    the LPIPS project's weights this is LPIPS; pyburn ships neither (no model hub here)."""
    _pair(prediction, target, "lpips")
    ours, theirs = features(prediction), features(target)
    if len(ours) != len(theirs) or (weights is not None and len(weights) != len(ours)):
        raise ShapeError(f"lpips: {len(ours)} feature maps, {len(theirs)} for the targets and "
                         f"{'no' if weights is None else len(weights)} weights")
    total = None
    for layer, (a, b) in enumerate(zip(ours, theirs)):
        # (a zero vector's length clamped first: its root would send NaN into gradients)
        a = a / ((a * a).sum(dim=1, keepdim=True).clamp(min=TINY).sqrt() + eps)
        b = b / ((b * b).sum(dim=1, keepdim=True).clamp(min=TINY).sqrt() + eps)
        difference = (a - b) ** 2
        if weights is not None:
            difference = difference * weights[layer].reshape(1, -1, 1, 1)
        term = difference.sum(dim=1).mean(dim=(1, 2))
        total = term if total is None else total + term
    if total is None:
        raise ShapeError("lpips: the network gave no feature map")
    return total


def _overlap(prediction: Tensor, target: Tensor, name: str) -> tuple[Tensor, Tensor, Tensor]:
    if not isinstance(prediction, Tensor) or not isinstance(target, Tensor) or \
            prediction.shape != target.shape or prediction.ndim < 2:
        raise ShapeError(f"{name} takes two batches of masks (N, ...) of one shape, got "
                         f"{_shape(prediction)} and {_shape(target)}")
    a = prediction.reshape(prediction.shape[0], -1).float()
    b = target.reshape(target.shape[0], -1).float()
    return (a * b).sum(dim=1), a.sum(dim=1), b.sum(dim=1)


def dice(prediction: Tensor, target: Tensor) -> Tensor:
    """The Dice coefficient of each pair of masks (nonzero is inside), (N,)."""
    both, a, b = _overlap(prediction, target, "dice")
    total = a + b
    return (both * 2 + (total == 0).float()) / (total + (total == 0).float())


def iou(prediction: Tensor, target: Tensor) -> Tensor:
    """The intersection over union (Jaccard index) of each pair of masks, (N,)."""
    both, a, b = _overlap(prediction, target, "iou")
    union = a + b - both
    return (both + (union == 0).float()) / (union + (union == 0).float())


class _PerImage(Metric, ABC):
    """The mean over every image of the epoch of a per-image function of (outputs,
    targets)."""

    higher_is_better = True
    state_names = ("total", "count")

    def __init__(self) -> None:
        self.reset()

    def reset(self) -> None:
        """Start a new mean."""
        self.total: Tensor | None = None
        self.count = 0

    @abstractmethod
    def per_image(self, outputs: Tensor, targets: Tensor) -> Tensor:
        """The metric of each image of the batch, (N,)."""

    def update(self, step: StepOutput) -> None:
        """Add the batch's images."""
        values = self.per_image(step.outputs, step.targets)
        self.total = add(self.total, values.sum())
        self.count += values.shape[0]

    def compute(self) -> Value:
        """The mean per image (None before the first batch)."""
        if self.total is None or not self.count:
            return None
        return self.total.item() / self.count


class PSNR(_PerImage):
    """Mean PSNR in dB over the images (outputs and targets (N, C, H, W))."""

    name = "psnr"

    def __init__(self, data_range: float = 1.0):
        self.data_range = data_range
        super().__init__()

    def per_image(self, outputs: Tensor, targets: Tensor) -> Tensor:
        return psnr(outputs, targets, self.data_range)


class SSIM(_PerImage):
    """Mean SSIM over the images (outputs and targets (N, C, H, W))."""

    name = "ssim"

    def __init__(self, data_range: float = 1.0):
        self.data_range = data_range
        super().__init__()

    def per_image(self, outputs: Tensor, targets: Tensor) -> Tensor:
        return ssim(outputs, targets, self.data_range)


class MSSSIM(_PerImage):
    """Mean MS-SSIM over the images (outputs and targets (N, C, H, W), more than 160 pixels a
    side)."""

    name = "ms_ssim"

    def __init__(self, data_range: float = 1.0):
        self.data_range = data_range
        super().__init__()

    def per_image(self, outputs: Tensor, targets: Tensor) -> Tensor:
        return ms_ssim(outputs, targets, self.data_range)


class IoU(_PerImage):
    """Mean intersection over union over the masks: outputs are scores or probabilities,
    inside where above `threshold`; targets are masks."""

    name = "iou"

    def __init__(self, threshold: float = 0.5):
        self.threshold = threshold
        super().__init__()

    def per_image(self, outputs: Tensor, targets: Tensor) -> Tensor:
        return iou(outputs > self.threshold, targets)


def gram_matrix(features: Tensor) -> Tensor:
    """The channels' inner products of feature maps (N, C, H, W), divided by C * H * W:
    (N, C, C), the style statistics of Gatys et al. (2016)."""
    if not isinstance(features, Tensor) or features.ndim != 4:
        raise ShapeError(f"gram_matrix takes feature maps (N, C, H, W), got {_shape(features)}")
    count, channels, height, width = features.shape
    flat = features.reshape(count, channels, height * width)
    return flat @ flat.mT / (channels * height * width)


def gram_matrix_loss(prediction: Tensor, target: Tensor) -> Tensor:
    """The mean squared difference of two batches' Gram matrices (burn-train's
    GramMatrixLoss, neural style transfer's style loss): a scalar."""
    return ((gram_matrix(prediction) - gram_matrix(target)) ** 2).mean()


class Dice(_PerImage):
    """Mean Dice coefficient over the masks: outputs are scores or probabilities, inside
    where above `threshold`; targets are masks."""

    name = "dice"

    def __init__(self, threshold: float = 0.5):
        self.threshold = threshold
        super().__init__()

    def per_image(self, outputs: Tensor, targets: Tensor) -> Tensor:
        return dice(outputs > self.threshold, targets)
