"""`FakeDataset`: random images and labels of the right shape, for trying a model or timing a
pipeline without real data. Item ``i`` is always the same."""

from __future__ import annotations

from collections.abc import Sequence

from .._tensor import Tensor
from ..dtypes import float32
from ..ops.random_tensors import rand
from ..random import Generator
from ..shape import as_shape, numel
from .collate import DeviceLike
from .dataset import Dataset, check_index, check_int
from .shuffle import EPOCH_STRIDE, check_seed, fresh_seed, uniform_ints


class FakeDataset(Dataset[tuple[Tensor, int]]):
    """`length` items ``(image, label)``: the image a float32 tensor of `shape` with values
    uniform in [0, 1), the label an int uniform in ``[0, num_classes)``.

    Item ``i`` depends only on `seed` and ``i``: it reads the Philox stream of `seed` from word
    ``i * 2**32`` on, the image being `pyburn.rand` of the first ``numel(shape)`` words and the
    label `uniform_ints` of the words after them. Items can so be fetched in any order, by
    any thread, and are the same on every backend. With no seed, one is drawn from pyburn's
    default generator (`pyburn.manual_seed` fixes it).

    >>> ds = FakeDataset(4, shape=(2, 2), num_classes=3, device="flex")
    >>> image, label = ds[1]
    >>> image.shape, label in range(3), ds[1][0].tolist() == image.tolist()
    ((2, 2), True, True)
    """

    def __init__(self, length: int, shape: Sequence[int] = (1, 28, 28), num_classes: int = 10,
                 seed: int | None = 0, device: DeviceLike = None):
        self.length = check_int("FakeDataset length", length, 0)
        self.shape = as_shape(shape, "FakeDataset shape")
        self.num_classes = check_int("FakeDataset num_classes", num_classes, 1)
        checked = check_seed(seed, "FakeDataset")
        self.seed = fresh_seed() if checked is None else checked
        self.device = device

    def __len__(self) -> int:
        return self.length

    def __getitem__(self, index: int) -> tuple[Tensor, int]:
        offset = check_index(index, self.length, "FakeDataset") * EPOCH_STRIDE
        generator = Generator(self.seed)
        generator.set_state({"seed": self.seed, "offset": offset})
        image = rand(*self.shape, dtype=float32, device=self.device, generator=generator)
        label = uniform_ints(1, self.num_classes, self.seed, offset + numel(self.shape))[0]
        return image, label

    def __repr__(self) -> str:
        return (f"FakeDataset({self.length}, shape={self.shape}, "
                f"num_classes={self.num_classes}, seed={self.seed})")
