"""The Philox reference generator against the published known-answer vectors."""

from __future__ import annotations

import pytest

from pyburn.random import Generator, philox_block, random_words


def _counter(words: tuple[int, int, int, int]) -> int:
    return sum(w << (32 * i) for i, w in enumerate(words))


@pytest.mark.parametrize(("counter", "key", "expected"), [
    ((0, 0, 0, 0), (0, 0), (0x6627E8D5, 0xE169C58D, 0xBC57AC4C, 0x9B00DBD8)),
    ((0xFFFFFFFF,) * 4, (0xFFFFFFFF, 0xFFFFFFFF),
     (0x408F276D, 0x41C83B0E, 0xA20BC7C6, 0x6D5451FD)),
    ((0x243F6A88, 0x85A308D3, 0x13198A2E, 0x03707344), (0xA4093822, 0x299F31D0),
     (0xD16CFE09, 0x94FDCCEB, 0x5001E420, 0x24126EA1)),
])
def test_philox_known_answers(counter, key, expected):
    assert philox_block(_counter(counter), key[0] | key[1] << 32) == expected


@pytest.mark.parametrize(("n", "offset"), [(0, 0), (1, 0), (5, 3), (17, 6), (8, 4)])
def test_random_words_are_a_window_of_one_stream(n, offset):
    stream = random_words(offset + n + 8, seed=1234, offset=0)
    assert random_words(n, seed=1234, offset=offset) == stream[offset:offset + n]


def test_generator_takes_consecutive_words_and_restores_state():
    gen = Generator(7)
    assert gen.take(10) == (7, 0)
    state = gen.get_state()
    assert gen.take(3) == (7, 10)
    gen.set_state(state)
    assert gen.take(3) == (7, 10)
    gen.manual_seed(2**64 + 5)
    assert gen.get_state() == {"seed": 5, "offset": 0}
