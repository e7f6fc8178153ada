"""The classify page's model, trained when the site is built (`site/build.py` keeps it in
build/zoo/ and trains again only when this file changes): the zoo's ResNet-18 at a quarter of
its width (stem 16 channels, 0.7 M parameters), from random weights, on 32 x 32 images of
`pyburn.data.ShapesDataset` (a circle, a square, a triangle or a star, filled or outlined, in
random colours), a fresh batch each step, on the cpu device. About 99 % right on held-out
generated shapes, in about half a minute on 2 cores.

MobileNetV2 (width 0.35) and SqueezeNet 1.1 were tried first: at 32 x 32 neither learns this
task in such a budget (MobileNetV2 about 30 % after 300 steps and 48 % after 1,000, PyTorch's
twin included; SqueezeNet's last ReLU dies and it stays at chance), while ResNet-18 at width
16 reaches about 98 % in 300 steps and 99 % in 400.

The images are preprocessed as the model's registry entry says (`recipe`: ImageNet's mean
and standard deviation per channel); the entry's resize and crop are for photos and do not
apply to images made at the model's size.
"""

from __future__ import annotations

import time
from dataclasses import replace
from pathlib import Path

import pyburn
import pyburn.nn.functional as F
from pyburn import models, store
from pyburn.data.shapes import CLASSES, ShapesDataset
from pyburn.optim import AdamW
from pyburn.optim.lr_scheduler import CosineAnnealingLR

#: the zoo's name, and the configuration `pyburn.models.create` is given
MODEL = "resnet18"
CONFIG = {"num_classes": len(CLASSES), "width": 16}
#: the file the page loads
WEIGHTS = "shapes-resnet18.safetensors"
#: the images' side, in pixels
SIZE = 32
STEPS, BATCH, LR = 400, 64, 3e-3
#: the seeds of the training and the held-out images (the page draws its samples from a third)
TRAIN_SEED, TEST_SEED = 1, 2
TEST_IMAGES = 1000


def recipe(model: pyburn.nn.Module) -> models.Preprocessing:
    """The preprocessing of `model`'s registry entry less its resize and crop (the page's
    Python and the end-to-end test do the same)."""
    return replace(model.entry.preprocessing, resize=None, crop=None)


def accuracy(model: pyburn.nn.Module, data: ShapesDataset) -> float:
    """The share of `data`'s images whose most likely class is their label."""
    images, labels = data.get_batch(range(len(data)))
    with pyburn.no_grad():
        scores = model(recipe(model)(images))
    return (scores.argmax(-1) == labels).float().mean().item()


def train(folder: Path) -> None:
    """Train the model and save it to `folder` / `WEIGHTS`, with what the page shows (its
    configuration, classes, data and held-out accuracy) as metadata."""
    started = time.perf_counter()
    pyburn.manual_seed(0)
    device = pyburn.device("cpu").autodiff()
    model = models.create(MODEL, device=device, **CONFIG).train()
    optimizer = AdamW(model.parameters(), lr=LR, weight_decay=1e-4)
    schedule = CosineAnnealingLR(optimizer, T_max=STEPS)
    data = ShapesDataset(STEPS * BATCH, size=SIZE, seed=TRAIN_SEED, device=device)
    preprocess = recipe(model)
    for step in range(STEPS):
        images, labels = data.get_batch(range(step * BATCH, (step + 1) * BATCH))
        loss = F.cross_entropy(model(preprocess(images)), labels)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        schedule.step()
    model.eval()
    held_out = accuracy(model, ShapesDataset(TEST_IMAGES, size=SIZE, seed=TEST_SEED,
                                             device=device))
    seconds = time.perf_counter() - started
    store.save(model, folder / WEIGHTS, metadata={
        "model": MODEL, "config": CONFIG, "parameters": model.num_params(),
        "labels": list(CLASSES), "image_size": SIZE,
        "data": "pyburn.data.ShapesDataset", "train_images": STEPS * BATCH,
        "train_seed": TRAIN_SEED, "test_images": TEST_IMAGES, "test_seed": TEST_SEED,
        "test_accuracy": held_out, "steps": STEPS, "seconds": round(seconds, 1)})
    print(f"classify page: {MODEL} (width {CONFIG['width']}) trained on {STEPS * BATCH:,} "
          f"generated shapes in {seconds:.0f} s, {100 * held_out:.1f}% right on "
          f"{TEST_IMAGES:,} held-out ones")
