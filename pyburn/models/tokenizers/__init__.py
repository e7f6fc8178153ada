"""Tokenizers for the zoo's text models: `Tokenizer` reads a Hugging Face
``tokenizer.json`` (GPT-2's, Llama 2's and 3's, BERT's) and encodes and decodes text in pure
Python, with the standard library only, so that it runs under Pyodide too.

One module per stage of the pipeline: `added` (special and added tokens), `normalizers`,
`pre_tokenizers`, `models` (BPE, WordPiece), `processors`, `decoders`; `unicode` holds the
character tables they share and translates the files' split patterns for Python's `re`.
"""

from __future__ import annotations

from .tokenizer import Tokenizer

__all__ = ["Tokenizer"]
