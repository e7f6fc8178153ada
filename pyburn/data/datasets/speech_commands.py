"""Speech Commands: one-second recordings of spoken words, from the folder of
``speech_commands_v0.02.tar.gz`` (or v0.01; Warden, "Speech Commands: A Dataset for
Limited-Vocabulary Speech Recognition", 2018).

The folder holds one sub-folder per word of 16 kHz mono 16-bit PCM WAV files, a
``_background_noise_`` folder of longer noise recordings (not a word), and the lists
``validation_list.txt`` and ``testing_list.txt``, one path per line, relative to the folder
(``right/0a7c2a8d_nohash_0.wav``). WAV files are decoded with the standard library's `wave`
and `array` modules: no numpy, so it reads the same in Pyodide.
"""

from __future__ import annotations

import wave
from array import array
from pathlib import Path
from typing import ClassVar, Literal

from ..._tensor import Tensor
from ...devices import Device
from ...errors import ArgumentError, FormatError
from ...ops.creation import tensor
from .class_folders import ClassFolders
from .files import PathLike, read_text
from .mnist import DatasetUnavailableError, data_root

Subset = Literal["training", "validation", "testing"]
LISTS = ("validation_list.txt", "testing_list.txt")


class SpeechCommands(ClassFolders[Tensor]):
    """The recordings of one subset of Speech Commands, from the folder `root` (default
    ``$PYBURN_DATA/SpeechCommands``, where the tarball's contents go): ``"validation"`` and
    ``"testing"`` are the files that ``validation_list.txt`` and ``testing_list.txt`` list,
    ``"training"`` every other one (a listed file that is not there is no item).

    Item ``i`` is ``(waveform, label)``: the file's samples as a float32 tensor
    (1, samples) on `device`, the int16 values / 32768, in [-1, 1), and the index of its word
    in `classes`: the word folders (every sub-folder but ``_background_noise_`` and those
    starting with "."), sorted by code point. Files are sorted by their path relative to
    `root`; `paths` and `targets` hold each item's file and label (see `ClassFolders`). A
    file is decoded when its item is asked for: one that is not mono 16-bit PCM WAV at
    16 kHz raises `FormatError` naming it and what it holds.

        ds = SpeechCommands(subset="testing")
        waveform, label = ds[0]             # float32 (1, 16000) for a full second, 0
        ds.classes[label]                   # 'backward'
    """

    #: the sample rate of every recording, in Hz
    sample_rate: ClassVar[int] = 16000
    #: the folder of noise recordings, which is not a word
    noise_folder: ClassVar[str] = "_background_noise_"

    def __init__(self, root: PathLike | None = None, subset: Subset = "training", *,
                 device: Device | str | None = None):
        if subset not in ("training", "validation", "testing"):
            raise ArgumentError(f"SpeechCommands' subset is 'training', 'validation' or "
                                f"'testing', got {subset!r}")
        folder = Path(root) if root is not None else data_root() / "SpeechCommands"
        missing = [name for name in LISTS if not (folder / name).is_file()]
        if missing:
            raise DatasetUnavailableError(
                f"SpeechCommands is not in {folder} ({', '.join(missing)} missing). Get "
                "speech_commands_v0.02.tar.gz (http://download.tensorflow.org/data/"
                f"speech_commands_v0.02.tar.gz) and unpack it into {folder}, so that its word "
                "folders and lists are directly in it.")
        self.subset = subset
        self.device = device
        listed = {name: _listed_paths(folder / name) for name in LISTS}
        # training keeps the files listed nowhere, the others those their list names
        self._keep_listed = subset != "training"
        self._listed = (listed[f"{subset}_list.txt"] if self._keep_listed
                        else listed["validation_list.txt"] | listed["testing_list.txt"])
        super().__init__(folder, ".wav")

    def is_class(self, name: str) -> bool:
        """Whether the sub-folder `name` is a word: all but the noise folder (and hidden
        ones)."""
        return super().is_class(name) and name != self.noise_folder

    def is_item(self, path: Path) -> bool:
        """Whether the file at `path` belongs to the subset, by the lists."""
        return (path.relative_to(self.root).as_posix() in self._listed) == self._keep_listed

    def load(self, path: Path) -> Tensor:
        """The waveform of the WAV file at `path`: float32 (1, samples), int16 / 32768."""
        samples = array("f", _read_pcm16(path, self.sample_rate))
        return tensor(memoryview(samples), shape=(1, len(samples)),
                      device=self.device) / 32768.0

    def __repr__(self) -> str:
        return (f"SpeechCommands(root={str(self.root)!r}, {self.subset}, {len(self)} files, "
                f"{len(self.classes)} classes)")


def _listed_paths(path: Path) -> set[str]:
    """The relative paths a split list names, one a line."""
    return {line.strip() for line in read_text(path, "SpeechCommands").splitlines()
            if line.strip()}


def _read_pcm16(path: Path, sample_rate: int) -> array[int]:
    """The samples of a mono 16-bit PCM WAV file at `sample_rate`, as int16 in an array;
    `FormatError` naming the file for anything else."""
    try:
        with wave.open(str(path), "rb") as wav:
            channels, width = wav.getnchannels(), wav.getsampwidth()
            rate, frames = wav.getframerate(), wav.getnframes()
            if (channels, width, rate) != (1, 2, sample_rate):
                raise FormatError(
                    f"SpeechCommands: {path} holds {channels} channel(s) of {8 * width}-bit "
                    f"samples at {rate} Hz; Speech Commands' files are mono 16-bit PCM at "
                    f"{sample_rate} Hz")
            data = wav.readframes(frames)  # native byte order, as `array` reads it
    except (wave.Error, EOFError) as error:
        raise FormatError(f"SpeechCommands: {path} is not a PCM WAV file ({error})") from None
    if len(data) != 2 * frames:
        raise FormatError(f"SpeechCommands: {path} is cut short: its header says {frames} "
                          f"samples, it holds {len(data) // 2}")
    return array("h", data)
