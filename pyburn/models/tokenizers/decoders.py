"""Decoders: tokens -> text pieces, which decoding joins. GPT-2's and Llama 3's files turn
byte-level characters back into bytes (``ByteLevel``); Llama 2's turn "▁" back into spaces
(``Replace`` or ``Metaspace``), ``<0xXX>`` tokens into their bytes (``ByteFallback``), join
everything (``Fuse``) and drop the first space (``Strip``); BERT's glue "##" pieces to the
word before them (``WordPiece``). Bytes that are not UTF-8 decode to U+FFFD, as in Hugging
Face's.

>>> run = build({"type": "Sequence", "decoders": [
...     {"type": "Replace", "pattern": {"String": "▁"}, "content": " "},
...     {"type": "ByteFallback"}, {"type": "Fuse"},
...     {"type": "Strip", "content": " ", "start": 1, "stop": 0}]})
>>> "".join(run(["▁Hello", "▁", "<0xE2>", "<0x9C>", "<0x93>"]))
'Hello ✓'
"""

from __future__ import annotations

import string
from collections.abc import Callable

from .components import Spec, sequence
from .components import build as build_component
from .pre_tokenizers import prepend_scheme
from .unicode import CHAR_TO_BYTE, pattern_of

Decoder = Callable[[list[str]], list[str]]


def _byte_level(spec: Spec) -> Decoder:
    def token_bytes(token: str) -> bytes:
        # a token that is not all byte-level characters (an added token) is its own UTF-8
        if all(char in CHAR_TO_BYTE for char in token):
            return bytes(CHAR_TO_BYTE[char] for char in token)
        return token.encode("utf-8")
    return lambda tokens: [b"".join(map(token_bytes, tokens)).decode("utf-8", "replace")]


def _byte_of(token: str) -> int | None:
    # the byte of a "<0xXX>" token
    if len(token) == 6 and token.startswith("<0x") and token.endswith(">") \
            and all(char in string.hexdigits for char in token[3:5]):
        return int(token[3:5], 16)
    return None


def _byte_fallback(spec: Spec) -> Decoder:
    def run(tokens: list[str]) -> list[str]:
        out: list[str] = []
        pending = bytearray()

        def flush() -> None:
            # a run of byte tokens is its text, or one U+FFFD per byte if it is not UTF-8
            try:
                out.append(pending.decode("utf-8"))
            except UnicodeDecodeError:
                out.extend("\ufffd" * len(pending))
            pending.clear()
        for token in tokens:
            byte = _byte_of(token)
            if byte is not None:
                pending.append(byte)
                continue
            if pending:
                flush()
            out.append(token)
        if pending:
            flush()
        return out
    return run


def _strip(spec: Spec) -> Decoder:
    content, start, stop = spec["content"], spec["start"], spec["stop"]

    def one(token: str) -> str:
        # at most `start` copies of `content` off the front and `stop` off the end
        first = 0
        while first < min(start, len(token)) and token[first] == content:
            first += 1
        last = len(token)
        while len(token) - last < stop and last > first and token[last - 1] == content:
            last -= 1
        return token[first:last]
    return lambda tokens: [one(token) for token in tokens]


def _replace(spec: Spec) -> Decoder:
    pattern, content = pattern_of(spec["pattern"]), spec["content"]
    return lambda tokens: [pattern.sub(lambda _: content, token) for token in tokens]


def _metaspace(spec: Spec) -> Decoder:
    # "▁" is a space, except in the first token when the pre-tokenizer prepends one
    replacement, drop_first = spec.get("replacement", "▁"), prepend_scheme(spec) != "never"
    return lambda tokens: [token.replace(replacement, "" if n == 0 and drop_first else " ")
                           for n, token in enumerate(tokens)]


#: the spaces that BERT's decoding removes (and "do not", which it contracts)
_CLEANUP = ((" .", "."), (" ?", "?"), (" !", "!"), (" ,", ","), (" ' ", "'"), (" n't", "n't"),
            (" 'm", "'m"), (" do not", " don't"), (" 's", "'s"), (" 've", "'ve"),
            (" 're", "'re"))


def _word_piece(spec: Spec) -> Decoder:
    prefix, cleanup = spec.get("prefix", "##"), spec.get("cleanup", True)

    def one(n: int, token: str) -> str:
        if n:
            token = token[len(prefix):] if token.startswith(prefix) else " " + token
        if cleanup:
            for old, new in _CLEANUP:
                token = token.replace(old, new)
        return token
    return lambda tokens: [one(n, token) for n, token in enumerate(tokens)]


BUILDERS: dict[str, Callable[[Spec], Decoder]] = {
    "ByteLevel": _byte_level,
    "ByteFallback": _byte_fallback,
    "Fuse": lambda spec: lambda tokens: ["".join(tokens)],
    "Strip": _strip,
    "Replace": _replace,
    "Metaspace": _metaspace,
    "WordPiece": _word_piece,
}
BUILDERS["Sequence"] = sequence("decoders", BUILDERS, "decoder")


def build(spec: Spec | None) -> Decoder | None:
    """The decoder of a tokenizer.json (None for null)."""
    return build_component(spec, BUILDERS, "decoder")
