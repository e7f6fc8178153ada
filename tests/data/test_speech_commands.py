"""SpeechCommands from a tiny copy of the published layout, WAV files written by
scipy.io.wavfile, against scipy.io.wavfile.read of the same files / 32768; with and without
numpy installed."""

from __future__ import annotations

import json

import numpy as np
import pytest
from scipy.io import wavfile
from test_no_numpy import run_without_numpy  # tests/ is on sys.path under pytest

import pyburn
from pyburn.data.datasets import DatasetUnavailableError, SpeechCommands

# relative path -> number of samples; "_background_noise_" is not a word, "Up" sorts first
FILES = {"yes/b_nohash_0.wav": 7, "yes/a_nohash_1.wav": 5, "yes/a_nohash_0.wav": 0,
         "Up/c_nohash_0.wav": 4, "no/a_nohash_0.wav": 6, "no/d_nohash_0.wav": 3,
         "_background_noise_/noise.wav": 9}
VALIDATION = ["yes/a_nohash_1.wav", "no/d_nohash_0.wav"]
TESTING = ["Up/c_nohash_0.wav", "yes/b_nohash_0.wav", "no/gone_nohash_0.wav"]


def write_dataset(root):
    """The files of FILES (random int16 samples, the extremes included) and the two lists."""
    rng = np.random.default_rng(5)
    for name, n in FILES.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        samples = rng.integers(-32768, 32768, size=n).astype(np.int16)
        samples[:2] = [-32768, 32767][:n]
        wavfile.write(root / name, 16000, samples)
    (root / "validation_list.txt").write_text("\n".join(VALIDATION) + "\n")
    (root / "testing_list.txt").write_text("\r\n".join(TESTING) + "\r\n")


@pytest.mark.parametrize(("subset", "names"), [
    ("training", ["no/a_nohash_0.wav", "yes/a_nohash_0.wav"]),
    ("validation", ["no/d_nohash_0.wav", "yes/a_nohash_1.wav"]),
    ("testing", ["Up/c_nohash_0.wav", "yes/b_nohash_0.wav"]),
])
def test_subsets_and_waveforms_match_scipy(tmp_path, subset, names):
    write_dataset(tmp_path)
    ds = SpeechCommands(tmp_path, subset, device="flex")
    assert ds.classes == ["Up", "no", "yes"]
    assert ds.paths == [tmp_path / name for name in names]
    assert ds.targets == [ds.classes.index(name.split("/")[0]) for name in names]
    assert len(ds) == len(names)
    for i, name in enumerate(names):
        rate, samples = wavfile.read(tmp_path / name)
        waveform, label = ds[i]
        assert rate == 16000 and waveform.dtype is pyburn.float32
        assert waveform.shape == (1, FILES[name]) and label == ds.targets[i]
        np.testing.assert_array_equal(waveform.numpy(), samples[None, :] / 32768)
    with pytest.raises(pyburn.IndexOutOfRange):
        ds[len(ds)]


def test_extremes_and_repr(tmp_path):
    write_dataset(tmp_path)
    ds = SpeechCommands(tmp_path, "validation")
    assert ds[1][0].tolist()[0][:2] == [-1.0, 32767 / 32768]
    assert repr(ds) == (f"SpeechCommands(root={str(tmp_path)!r}, validation, 2 files, "
                        "3 classes)")


def test_other_wav_formats_are_refused(tmp_path):
    write_dataset(tmp_path)
    ds = SpeechCommands(tmp_path, "testing")
    wavfile.write(tmp_path / "Up/c_nohash_0.wav", 16000, np.zeros((4, 2), np.int16))
    with pytest.raises(pyburn.FormatError, match=r"c_nohash_0\.wav holds 2 channel\(s\) of "
                                                 r"16-bit samples at 16000 Hz"):
        ds[0]
    wavfile.write(tmp_path / "Up/c_nohash_0.wav", 16000, np.zeros(4, np.uint8))
    with pytest.raises(pyburn.FormatError, match="1 channel.* of 8-bit samples"):
        ds[0]
    wavfile.write(tmp_path / "Up/c_nohash_0.wav", 8000, np.zeros(4, np.int16))
    with pytest.raises(pyburn.FormatError, match="at 8000 Hz"):
        ds[0]
    wavfile.write(tmp_path / "Up/c_nohash_0.wav", 16000, np.zeros(4, np.float32))
    with pytest.raises(pyburn.FormatError, match=r"c_nohash_0\.wav is not a PCM WAV file"):
        ds[0]
    whole = (tmp_path / "yes/b_nohash_0.wav").read_bytes()
    (tmp_path / "yes/b_nohash_0.wav").write_bytes(whole[:-3])
    with pytest.raises(pyburn.FormatError, match="cut short: its header says 7 samples, it "
                                                 "holds 5"):
        ds[1]


def test_missing_root_and_bad_subset(tmp_path, monkeypatch):
    monkeypatch.setenv("PYBURN_DATA", str(tmp_path))
    root = tmp_path / "SpeechCommands"
    with pytest.raises(DatasetUnavailableError,
                       match=rf"{root} \(validation_list\.txt, testing_list\.txt missing\)"):
        SpeechCommands()
    write_dataset(root)
    assert SpeechCommands().root == root
    with pytest.raises(pyburn.ArgumentError, match="got 'train'"):
        SpeechCommands(subset="train")


def test_reads_the_same_without_numpy(tmp_path):
    write_dataset(tmp_path)
    result = run_without_numpy(f"""
        import json, sys
        from pyburn.data.datasets import SpeechCommands

        ds = SpeechCommands({str(tmp_path)!r}, "training", device="flex")
        print(json.dumps({{"items": [[w.tolist(), label] for w, label in ds],
                          "numpy_loaded": "numpy" in sys.modules}}))
    """)
    assert result.returncode == 0, result.stderr
    out = json.loads(result.stdout)
    assert out["numpy_loaded"] is False
    ds = SpeechCommands(tmp_path, "training", device="flex")
    assert out["items"] == [[w.tolist(), label] for w, label in ds]
