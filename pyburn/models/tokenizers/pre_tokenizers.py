"""Pre-tokenizers: the normalized text -> words, which the model then tokenizes one by one.
GPT-2's files split with a pattern and write each word's UTF-8 bytes as characters
(``ByteLevel``); Llama 3's split with their own pattern first (``Split``); Llama 2's replace
spaces by "▁" (``Metaspace``); BERT's split on spaces and punctuation
(``BertPreTokenizer``).

A piece of text travels with a flag saying whether it starts the input, for Metaspace's
``prepend_scheme: "first"``, which marks only the first word of the input.

>>> run = build({"type": "ByteLevel", "add_prefix_space": False})
>>> [text for text, _ in run([("Hello world!", True)])]
['Hello', 'Ġworld', '!']
"""

from __future__ import annotations

import re
from collections.abc import Callable

from ...errors import FormatError
from .components import Spec, sequence
from .components import build as build_component
from .unicode import WHITE_SPACE, compile_pattern, is_punctuation, pattern_of, to_byte_level

#: a piece of text and whether it starts the input
Piece = tuple[str, bool]
PreTokenizer = Callable[[list[Piece]], list[Piece]]
Span = tuple[int, int]

#: GPT-2's split, which the ByteLevel pre-tokenizer applies with ``use_regex``
GPT2_PATTERN = r"'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+"


def _merged_with_previous(spans: list[tuple[int, int, bool]]) -> list[Span]:
    out: list[Span] = []
    previous = False
    for start, end, match in spans:
        if match and not previous and out:
            out[-1] = (out[-1][0], end)
        else:
            out.append((start, end))
        previous = match
    return out


def _merged_with_next(spans: list[tuple[int, int, bool]]) -> list[Span]:
    # the mirror image of merging with the previous piece: run that on the spans reversed
    # (and negated, so that they still run from start to end)
    flipped = _merged_with_previous([(-end, -start, match) for start, end, match
                                     in reversed(spans)])
    return [(-end, -start) for start, end in reversed(flipped)]


def _contiguous(spans: list[tuple[int, int, bool]]) -> list[Span]:
    out: list[Span] = []
    previous = False
    for start, end, match in spans:
        if match == previous and out:
            out[-1] = (out[-1][0], end)
        else:
            out.append((start, end))
        previous = match
    return out


#: what happens to the matches of a split's pattern (tokenizers' SplitDelimiterBehavior)
BEHAVIORS: dict[str, Callable[[list[tuple[int, int, bool]]], list[Span]]] = {
    "Removed": lambda spans: [(start, end) for start, end, match in spans if not match],
    "Isolated": lambda spans: [(start, end) for start, end, _ in spans],
    "MergedWithPrevious": _merged_with_previous,
    "MergedWithNext": _merged_with_next,
    "Contiguous": _contiguous,
}


def split_spans(text: str, pattern: re.Pattern[str], behavior: str,
                invert: bool = False) -> list[Span]:
    """Where `text` splits at the matches of `pattern`: the matches and the text between
    them cover `text` (with `invert`, the text between them counts as the matches), and
    `behavior` (a key of `BEHAVIORS`) says what becomes of the matches."""
    spans: list[tuple[int, int, bool]] = []
    previous = 0
    for match in pattern.finditer(text):
        start, end = match.span()
        if start != previous:
            spans.append((previous, start, invert))
        spans.append((start, end, not invert))
        previous = end
    if previous != len(text) or not text:
        spans.append((previous, len(text), invert))
    return BEHAVIORS[behavior](spans)


def _pieces(text: str, at_start: bool, spans: list[Span]) -> list[Piece]:
    return [(text[start:end], at_start and start == 0) for start, end in spans]


def _each(split: Callable[[str, bool], list[Piece]]) -> PreTokenizer:
    # a pre-tokenizer that splits every piece on its own; empty pieces are dropped
    return lambda pieces: [piece for text, at_start in pieces
                           for piece in split(text, at_start) if piece[0]]


def _split(spec: Spec) -> PreTokenizer:
    pattern, behavior = pattern_of(spec["pattern"]), spec["behavior"]
    invert = spec.get("invert", False)
    if behavior not in BEHAVIORS:
        raise FormatError(f"tokenizer.json: a Split pre-tokenizer's behavior is one of "
                          f"{', '.join(BEHAVIORS)}, not {behavior!r}")
    return _each(lambda text, at_start: _pieces(
        text, at_start, split_spans(text, pattern, behavior, invert)))


def _byte_level(spec: Spec) -> PreTokenizer:
    prefix = spec.get("add_prefix_space", True)
    pattern = compile_pattern(GPT2_PATTERN) if spec.get("use_regex", True) else None

    def split(text: str, at_start: bool) -> list[Piece]:
        if prefix and not text.startswith(" "):
            text = " " + text
        words = ([(text, at_start)] if pattern is None
                 else _pieces(text, at_start, split_spans(text, pattern, "Isolated")))
        return [(to_byte_level(word), first) for word, first in words]
    return _each(split)


def prepend_scheme(spec: Spec) -> str:
    """A Metaspace component's ``prepend_scheme`` ("always", "first" or "never"), from the
    older ``add_prefix_space`` flag where the file predates it."""
    if spec.get("add_prefix_space") is False:
        return "never"
    return str(spec.get("prepend_scheme") or "always")


def _metaspace(spec: Spec) -> PreTokenizer:
    replacement, scheme = spec.get("replacement", "▁"), prepend_scheme(spec)
    marker = re.compile(re.escape(replacement)) if spec.get("split", True) else None

    def split(text: str, at_start: bool) -> list[Piece]:
        text = text.replace(" ", replacement)
        if (scheme == "always" or scheme == "first" and at_start) \
                and not text.startswith(replacement):
            text = replacement + text
        if marker is None:
            return [(text, at_start)]
        return _pieces(text, at_start, split_spans(text, marker, "MergedWithNext"))
    return _each(split)


def _bert_split(text: str, at_start: bool) -> list[Piece]:
    # words end at white space (dropped) and at punctuation (a word of its own)
    pieces: list[Piece] = []
    word = 0
    for at, char in enumerate(text):
        if char in WHITE_SPACE or is_punctuation(char):
            pieces.append((text[word:at], at_start and word == 0))
            if char not in WHITE_SPACE:
                pieces.append((char, at_start and at == 0))
            word = at + 1
    pieces.append((text[word:], at_start and word == 0))
    return pieces


BUILDERS: dict[str, Callable[[Spec], PreTokenizer]] = {
    "ByteLevel": _byte_level,
    "Metaspace": _metaspace,
    "Split": _split,
    "BertPreTokenizer": lambda spec: _each(_bert_split),
}
BUILDERS["Sequence"] = sequence("pretokenizers", BUILDERS, "pre-tokenizer")


def build(spec: Spec | None) -> PreTokenizer | None:
    """The pre-tokenizer of a tokenizer.json (None for null)."""
    return build_component(spec, BUILDERS, "pre-tokenizer")
