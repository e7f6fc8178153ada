"""pyburn.vision: images and the operations on them (burn-vision's counterpart). So far: PNG
read and write in pure Python (`png`) and JPEG through Pillow (`io`), colour conversions
(`color`), boxes: IoU, GIoU, non-maximum suppression, masks to boxes (`boxes`), filters
(`filters`), Canny's edges (`edges`), morphology (`morphology`), connected components with
their statistics (`components`), image metrics, as functions and as Learner metrics
(`metrics`), detection's mAP (`detection`), warps (`geometry`), regions of interest (`roi`)
and joint augmentations with an inverse (`augment`)."""

from .augment import (
    ColorJitter,
    Compose,
    Normalize,
    RandomAffine,
    RandomErasing,
    RandomHorizontalFlip,
    RandomResizedCrop,
    RandomVerticalFlip,
)
from .boxes import (
    batched_nms,
    box_area,
    box_convert,
    box_iou,
    generalized_box_iou,
    masks_to_boxes,
    nms,
)
from .color import (
    grayscale_to_rgb,
    hsv_to_rgb,
    lab_to_rgb,
    rgb_to_grayscale,
    rgb_to_hsv,
    rgb_to_lab,
    rgb_to_yuv,
    yuv_to_rgb,
)
from .components import ComponentStats, connected_components, connected_components_with_stats
from .detection import MeanAveragePrecision, mean_average_precision
from .edges import canny
from .filters import (
    box_blur,
    filter2d,
    gaussian_blur2d,
    laplacian,
    median_blur,
    sobel,
    spatial_gradient,
)
from .geometry import affine_matrix, warp_affine, warp_perspective
from .io import read_image, save_image, write_image
from .metrics import (
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
from .morphology import (
    black_hat,
    closing,
    dilate,
    erode,
    morphological_gradient,
    opening,
    top_hat,
)
from .png import encode_png, read_png, write_png
from .roi import roi_align, roi_pool

__all__ = ["ColorJitter", "ComponentStats", "Compose", "Dice", "IoU", "MSSSIM",
           "MeanAveragePrecision", "Normalize", "PSNR", "RandomAffine", "RandomErasing",
           "RandomHorizontalFlip", "RandomResizedCrop", "RandomVerticalFlip", "SSIM",
           "affine_matrix", "batched_nms", "black_hat", "box_area", "box_blur", "box_convert",
           "box_iou", "canny", "closing", "connected_components",
           "connected_components_with_stats", "dice", "dilate", "encode_png", "erode", "filter2d",
           "frechet_distance", "gaussian_blur2d", "generalized_box_iou", "gram_matrix",
           "gram_matrix_loss", "grayscale_to_rgb", "hsv_to_rgb", "iou", "lab_to_rgb", "laplacian",
           "lpips", "masks_to_boxes", "mean_average_precision", "median_blur",
           "morphological_gradient", "ms_ssim", "nms", "opening", "psnr", "read_image",
           "read_png", "rgb_to_grayscale", "rgb_to_hsv", "rgb_to_lab", "rgb_to_yuv", "roi_align",
           "roi_pool", "save_image", "sobel", "spatial_gradient", "ssim", "top_hat",
           "warp_affine", "warp_perspective", "write_image", "write_png", "yuv_to_rgb"]
