"""Added tokens: the special tokens (``<s>``, ``[CLS]``, ``<|begin_of_text|>``) and the
tokens added after training, which a tokenizer finds in the text before anything else
and which the model never splits.

Tokens with ``normalized: false`` are found in the raw text; the text between them is
normalized, and then the tokens with ``normalized: true`` (compared in their normalized
form) are found in it. Where several tokens match, the leftmost wins, then the longest.
``single_word`` tokens match only between non-word characters; ``lstrip`` and ``rstrip``
take the white space on their left or right with them.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from .unicode import WHITE_SPACE, is_word_char

#: a piece of text (and whether it starts the input) or the id of an added token found
Segment = tuple[str, bool] | int


@dataclass(frozen=True)
class AddedToken:
    """One entry of a tokenizer.json's ``added_tokens``."""

    id: int
    content: str
    single_word: bool = False
    lstrip: bool = False
    rstrip: bool = False
    normalized: bool = True
    special: bool = False

    @classmethod
    def from_spec(cls, spec: Mapping[str, Any]) -> AddedToken:
        """The token of one JSON object of ``added_tokens``."""
        return cls(**{name: spec[name] for name in cls.__dataclass_fields__ if name in spec})


class _Matcher:
    # finds the tokens of one kind (raw or normalized) in a text
    def __init__(self, tokens: Mapping[str, AddedToken]):
        self.tokens = tokens
        # an alternation tries its branches in order: longest first gives leftmost-longest
        contents = sorted(tokens, key=len, reverse=True)
        self.pattern = re.compile("|".join(map(re.escape, contents))) if contents else None

    def split(self, text: str) -> Iterator[tuple[int, int, AddedToken | None]]:
        # (start, end, token or None for the text between tokens), covering `text`
        done = 0
        for match in self.pattern.finditer(text) if self.pattern else ():
            start, end = match.span()
            token = self.tokens[match.group()]
            if token.single_word and (start and is_word_char(text[start - 1])
                                      or end < len(text) and is_word_char(text[end])):
                continue
            if token.lstrip:
                while start > done and text[start - 1] in WHITE_SPACE:
                    start -= 1
            if token.rstrip:
                while end < len(text) and text[end] in WHITE_SPACE:
                    end += 1
            if done < start:
                yield done, start, None
            yield start, end, token
            done = end
        if done < len(text):
            yield done, len(text), None


class AddedVocabulary:
    """The added `tokens` of a tokenizer, matched as the module says; `normalize` is the
    tokenizer's normalizer (None: none)."""

    def __init__(self, tokens: Sequence[AddedToken], normalize: Callable[[str], str] | None):
        self.tokens = list(tokens)
        self.normalize = normalize or (lambda text: text)
        #: the contents of the special tokens, which decoding may skip
        self.special = {token.content for token in tokens if token.special}
        raw = {t.content: t for t in tokens if not t.normalized and t.content}
        normalized: dict[str, AddedToken] = {}
        for token in tokens:
            content = self.normalize(token.content) if token.normalized else ""
            if content:
                normalized.setdefault(content, token)
        self._raw, self._normalized = _Matcher(raw), _Matcher(normalized)

    def segments(self, text: str) -> Iterator[Segment]:
        """`text` as the ids of the added tokens found in it and the normalized pieces of
        text between them."""
        for start, end, token in self._raw.split(text):
            if token is not None:
                yield token.id
                continue
            piece = self.normalize(text[start:end])
            for inner_start, inner_end, inner in self._normalized.split(piece):
                yield inner.id if inner is not None else \
                    (piece[inner_start:inner_end], start == 0 and inner_start == 0)
