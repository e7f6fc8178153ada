"""Tokenizer models: a word -> token ids. `BPE` (GPT-2's, Llama's) starts from the word's
characters and applies its merges, the lowest-ranked pair first; `WordPiece` (BERT's) takes
the longest piece of the vocabulary at each position.

>>> bpe = BPE({"a": 0, "b": 1, "ab": 2}, [("a", "b")])
>>> bpe.tokenize("abba")
[2, 1, 0]
"""

from __future__ import annotations

import heapq
from collections.abc import Mapping, Sequence
from typing import Any

from ...errors import FormatError

#: how many words a BPE model remembers the tokens of (Hugging Face's cache holds as many)
CACHE_SIZE = 10_000


class _Vocabulary:
    # what both models share: the token <-> id tables and the unknown token's id
    def __init__(self, vocab: Mapping[str, int], unk_token: str | None):
        self.vocab = dict(vocab)
        self.tokens = {i: token for token, i in self.vocab.items()}
        self.unk_token = unk_token

    def unk_id(self) -> int:
        if self.unk_token not in self.vocab:
            raise FormatError(f"tokenizer.json: the model's unknown token {self.unk_token!r} "
                              "is not in its vocabulary")
        return self.vocab[self.unk_token]


class BPE(_Vocabulary):
    """Byte-pair encoding: `vocab` (token -> id) and `merges` (pairs of tokens, the first
    applied first). A character missing from the vocabulary becomes its UTF-8 bytes as
    ``<0xXX>`` tokens with `byte_fallback` (Llama 2) where those exist, else `unk_token`
    (several in a row fuse into one with `fuse_unk`; with no `unk_token`, it is dropped).
    With `ignore_merges` (Llama 3), a word that is a token of its own is that token.
    `continuing_subword_prefix` and `end_of_word_suffix` mark a word's inner and last
    characters."""

    def __init__(self, vocab: Mapping[str, int], merges: Sequence[tuple[str, str]], *,
                 unk_token: str | None = None, continuing_subword_prefix: str | None = None,
                 end_of_word_suffix: str | None = None, fuse_unk: bool = False,
                 byte_fallback: bool = False, ignore_merges: bool = False):
        super().__init__(vocab, unk_token)
        self.prefix, self.suffix = continuing_subword_prefix or "", end_of_word_suffix or ""
        self.fuse_unk, self.byte_fallback, self.ignore_merges = \
            fuse_unk, byte_fallback, ignore_merges
        #: (left id, right id) -> (rank, merged id)
        self.merges: dict[tuple[int, int], tuple[int, int]] = {}
        for rank, (left, right) in enumerate(merges):
            merged = left + right[len(self.prefix):]
            missing = [t for t in (left, right, merged) if t not in self.vocab]
            if missing:
                raise FormatError(f"tokenizer.json: the BPE merge {left!r} + {right!r} needs "
                                  f"{missing[0]!r}, which is not in the vocabulary")
            self.merges[self.vocab[left], self.vocab[right]] = (rank, self.vocab[merged])
        self._cache: dict[str, list[int]] = {}

    @classmethod
    def from_spec(cls, spec: Mapping[str, Any]) -> BPE:
        """The model of a tokenizer.json's ``"model"`` object; merges are ``"a b"`` strings
        (older files) or ``["a", "b"]`` pairs. ``dropout`` (a training-time regulariser) is
        ignored: encoding is deterministic."""
        merges = []
        for merge in spec["merges"]:
            pair = merge.split(" ") if isinstance(merge, str) else merge
            if len(pair) != 2:
                raise FormatError(f"tokenizer.json: a BPE merge is two tokens, not {merge!r}")
            merges.append((pair[0], pair[1]))
        return cls(spec["vocab"], merges, unk_token=spec.get("unk_token"),
                   continuing_subword_prefix=spec.get("continuing_subword_prefix"),
                   end_of_word_suffix=spec.get("end_of_word_suffix"),
                   fuse_unk=spec.get("fuse_unk", False),
                   byte_fallback=spec.get("byte_fallback", False),
                   ignore_merges=spec.get("ignore_merges", False))

    def tokenize(self, word: str) -> list[int]:
        """The ids of `word`'s tokens."""
        if self.ignore_merges and word in self.vocab:
            return [self.vocab[word]]
        ids = self._cache.get(word)
        if ids is None:
            ids = self._merge(self._symbols(word))
            if len(self._cache) < CACHE_SIZE:
                self._cache[word] = ids
        return list(ids)

    def _symbols(self, word: str) -> list[int]:
        # the word's characters as ids, before any merge
        ids: list[int] = []
        unknown = False  # an unknown token waits to be written (it may fuse with the next)
        for at, char in enumerate(word):
            piece = (self.prefix if at else "") + char + \
                (self.suffix if at == len(word) - 1 else "")
            if piece in self.vocab:
                if unknown:
                    ids.append(self.unk_id())
                    unknown = False
                ids.append(self.vocab[piece])
                continue
            if self.byte_fallback:
                found = [self.vocab.get(f"<0x{byte:02X}>") for byte in piece.encode("utf-8")]
                if None not in found:
                    # like Hugging Face's, a waiting unknown token is written after these
                    ids.extend(i for i in found if i is not None)
                    continue
            if self.unk_token is not None:
                if unknown and not self.fuse_unk:
                    ids.append(self.unk_id())
                unknown = True
        if unknown:
            ids.append(self.unk_id())
        return ids

    def _merge(self, ids: list[int]) -> list[int]:
        # Hugging Face's order: a heap of (rank, position) of the pairs that merge; merging
        # one makes new pairs with its neighbours; an entry whose pair has changed since
        # is skipped when its merged id is no longer what the current pair makes
        count = len(ids)
        after, before = list(range(1, count + 1)), list(range(-1, count - 1))
        alive = [True] * count
        heap: list[tuple[int, int, int]] = []
        for at, pair in enumerate(zip(ids, ids[1:])):
            if pair in self.merges:
                rank, new = self.merges[pair]
                heap.append((rank, at, new))
        heapq.heapify(heap)
        while heap:
            _, at, new = heapq.heappop(heap)
            right = after[at]
            if not alive[at] or right >= count:
                continue
            found = self.merges.get((ids[at], ids[right]))
            if found is None or found[1] != new:
                continue
            ids[at], alive[right] = new, False
            after[at] = after[right]
            if after[at] < count:
                before[after[at]] = at
            left = before[at]
            if left >= 0 and (found := self.merges.get((ids[left], new))):
                heapq.heappush(heap, (found[0], left, found[1]))
            if after[at] < count and (found := self.merges.get((new, ids[after[at]]))):
                heapq.heappush(heap, (found[0], at, found[1]))
        return [i for i, keep in zip(ids, alive) if keep]


class WordPiece(_Vocabulary):
    """BERT's model: the longest token of `vocab` that starts the word, then the longest
    that continues it (those carry `continuing_subword_prefix`, "##"), and so on; a word
    that cannot be covered, or longer than `max_input_chars_per_word`, is `unk_token`."""

    def __init__(self, vocab: Mapping[str, int], *, unk_token: str = "[UNK]",
                 continuing_subword_prefix: str = "##", max_input_chars_per_word: int = 100):
        super().__init__(vocab, unk_token)
        self.prefix, self.max_chars = continuing_subword_prefix, max_input_chars_per_word

    @classmethod
    def from_spec(cls, spec: Mapping[str, Any]) -> WordPiece:
        """The model of a tokenizer.json's ``"model"`` object."""
        return cls(spec["vocab"], unk_token=spec.get("unk_token", "[UNK]"),
                   continuing_subword_prefix=spec.get("continuing_subword_prefix", "##"),
                   max_input_chars_per_word=spec.get("max_input_chars_per_word", 100))

    def tokenize(self, word: str) -> list[int]:
        """The ids of `word`'s tokens."""
        if len(word) > self.max_chars:
            return [self.unk_id()]
        ids: list[int] = []
        start = 0
        while start < len(word):
            for end in range(len(word), start, -1):
                piece = (self.prefix if start else "") + word[start:end]
                if piece in self.vocab:
                    ids.append(self.vocab[piece])
                    start = end
                    break
            else:
                return [self.unk_id()]
        return ids


#: the models a tokenizer.json may name
MODELS: dict[str, type[BPE] | type[WordPiece]] = {"BPE": BPE, "WordPiece": WordPiece}


def build(spec: Mapping[str, Any]) -> BPE | WordPiece:
    """The model of a tokenizer.json; `FormatError` naming it when pyburn lacks it."""
    kind = spec.get("type")
    if kind not in MODELS:
        raise FormatError(f"tokenizer.json: the model {kind!r} is not supported by pyburn "
                          f"(supported: {', '.join(MODELS)})")
    return MODELS[kind].from_spec(spec)
