"""`Tokenizer`: a Hugging Face ``tokenizer.json`` read and run in pure Python.

Encoding runs the file's pipeline in Hugging Face's order: the added tokens are found
first (`added`), the text between them is normalized (`normalizers`), split into words
(`pre_tokenizers`), each word tokenized by the model (`models`: BPE or WordPiece), the
result truncated as the file's ``truncation`` says and the special tokens put around it
(`processors`). Decoding maps ids back to tokens, skips the special ones if asked, and
lets the file's decoder (`decoders`) make the text.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping, Sequence
from typing import Any

from ...errors import ArgumentError, FormatError
from . import decoders, models, normalizers, pre_tokenizers, processors
from .added import AddedToken, AddedVocabulary


class Tokenizer:
    """A tokenizer read from the parsed JSON of a Hugging Face ``tokenizer.json`` (use
    `from_file` or `from_json`): GPT-2's and Llama 3's byte-level BPE, Llama 2's BPE with
    byte fallback, BERT's WordPiece. A component pyburn does not support raises
    `pyburn.FormatError` naming it.

    >>> tok = Tokenizer.from_json({
    ...     "model": {"type": "WordPiece", "vocab": {"[UNK]": 0, "[CLS]": 1, "[SEP]": 2,
    ...               "[PAD]": 3, "hello": 4, "world": 5, "##s": 6, "!": 7}},
    ...     "normalizer": {"type": "BertNormalizer", "lowercase": True},
    ...     "pre_tokenizer": {"type": "BertPreTokenizer"},
    ...     "post_processor": {"type": "BertProcessing", "cls": ["[CLS]", 1],
    ...                        "sep": ["[SEP]", 2]},
    ...     "decoder": {"type": "WordPiece"},
    ...     "added_tokens": [{"id": n, "content": t, "special": True} for n, t in
    ...                      enumerate(["[UNK]", "[CLS]", "[SEP]", "[PAD]"])],
    ...     "padding": {"pad_token": "[PAD]"}})
    >>> tok.encode("Hello worlds!")
    [1, 4, 5, 6, 7, 2]
    >>> tok.decode([1, 4, 5, 6, 7, 2])
    'hello worlds!'
    >>> tok.encode_batch(["hello", "hello world"])
    ([[1, 4, 2, 3], [1, 4, 5, 2]], [[1, 1, 1, 0], [1, 1, 1, 1]])
    """

    def __init__(self, spec: Mapping[str, Any]):
        if not isinstance(spec, Mapping) or not isinstance(spec.get("model"), Mapping):
            raise FormatError("tokenizer.json: the file holds no \"model\" object")
        try:
            #: the model that tokenizes each word (`models.BPE` or `models.WordPiece`)
            self.model = models.build(spec["model"])
            normalize = normalizers.build(spec.get("normalizer"))
            self._pre_tokenize = pre_tokenizers.build(spec.get("pre_tokenizer"))
            self._post_process = processors.build(spec.get("post_processor"))
            self._decode = decoders.build(spec.get("decoder"))
            #: the special and added tokens, found in the text before the model runs
            self.added = AddedVocabulary(
                [AddedToken.from_spec(token) for token in spec.get("added_tokens") or ()],
                normalize)
            truncation, padding = spec.get("truncation") or {}, spec.get("padding") or {}
            #: encoded texts are cut to this many ids, special tokens included (None: no cut)
            self.max_length: int | None = truncation.get("max_length")
            #: the end that `max_length` cuts off: "right" or "left"
            self.truncation_side = str(truncation.get("direction", "Right")).lower()
            #: the token `encode_batch` pads with (the file's padding token; None: none)
            self.pad_token: str | None = padding.get("pad_token")
            #: the end that `encode_batch` pads: "right" or "left"
            self.padding_side = str(padding.get("direction", "Right")).lower()
        except (KeyError, TypeError, AttributeError) as exc:
            raise FormatError(f"tokenizer.json is malformed: {type(exc).__name__}: {exc}") \
                from exc
        self._vocab = {**self.model.vocab, **{t.content: t.id for t in self.added.tokens}}
        self._tokens = {**self.model.tokens, **{t.id: t.content for t in self.added.tokens}}

    @classmethod
    def from_json(cls, source: str | Mapping[str, Any]) -> Tokenizer:
        """The tokenizer of a ``tokenizer.json``'s text, or of that text parsed."""
        if not isinstance(source, str):
            return cls(source)
        try:
            return cls(json.loads(source))
        except json.JSONDecodeError as exc:
            raise FormatError(f"tokenizer.json is not JSON: {exc}") from exc

    @classmethod
    def from_file(cls, path: str | os.PathLike[str]) -> Tokenizer:
        """The tokenizer of the ``tokenizer.json`` file at `path`."""
        with open(path, encoding="utf-8") as file:
            return cls.from_json(file.read())

    @property
    def vocab_size(self) -> int:
        """How many tokens there are, the added ones included (Hugging Face's
        ``get_vocab_size()``)."""
        return len(self._vocab)

    def token_to_id(self, token: str) -> int | None:
        """The id of `token` (None if there is no such token)."""
        return self._vocab.get(token)

    def id_to_token(self, id: int) -> str | None:
        """The token of `id` (None if there is no such id)."""
        return self._tokens.get(id)

    def encode(self, text: str, add_special_tokens: bool = True) -> list[int]:
        """The token ids of `text`, with the special tokens that the file's post-processor
        puts around it unless `add_special_tokens` is False."""
        ids: list[int] = []
        for segment in self.added.segments(text):
            if isinstance(segment, int):
                ids.append(segment)
                continue
            words = [segment] if self._pre_tokenize is None else self._pre_tokenize([segment])
            for word, _ in words:
                ids.extend(self.model.tokenize(word))
        process = self._post_process if add_special_tokens else None
        if self.max_length is not None:
            keep = max(self.max_length - (len(process([])) if process else 0), 0)
            ids = ids[:keep] if self.truncation_side == "right" else ids[max(len(ids) - keep, 0):]
        return process(ids) if process else ids

    def decode(self, ids: Sequence[int], skip_special_tokens: bool = True) -> str:
        """The text of `ids`, without the special tokens if `skip_special_tokens`; ids that
        are no token are skipped."""
        tokens = [token for token in map(self._tokens.get, ids) if token is not None
                  and not (skip_special_tokens and token in self.added.special)]
        return "".join(self._decode(tokens)) if self._decode else " ".join(tokens)

    def encode_batch(self, texts: Sequence[str], padding: bool = True,
                     add_special_tokens: bool = True) -> tuple[list[list[int]], list[list[int]]]:
        """The ids of each text and their attention masks (1 for a token, 0 for padding);
        with `padding`, all as long as the longest, filled with `pad_token` on the
        `padding_side` (`ArgumentError` if the tokenizer has no `pad_token`)."""
        batch = [self.encode(text, add_special_tokens) for text in texts]
        if not padding:
            return batch, [[1] * len(ids) for ids in batch]
        pad_id = None if self.pad_token is None else self.token_to_id(self.pad_token)
        if pad_id is None:
            raise ArgumentError(f"padding needs a pad token of the vocabulary, and pad_token "
                                f"is {self.pad_token!r}: set tokenizer.pad_token to one")
        width = max(map(len, batch), default=0)
        left = self.padding_side == "left"
        ids, masks = [], []
        for row in batch:
            pad = width - len(row)
            ids.append([pad_id] * pad + row if left else row + [pad_id] * pad)
            masks.append([0] * pad + [1] * len(row) if left else [1] * len(row) + [0] * pad)
        return ids, masks
