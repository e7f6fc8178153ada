"""pyburn's Tokenizer against Hugging Face's `tokenizers`, the reference: tokenizers of
each family are trained here on a small multilingual corpus (GPT-2's byte-level BPE, Llama
2's BPE with byte fallback, both its legacy and its Metaspace form, Llama 3's byte-level BPE
with its own split pattern, BERT's WordPiece), saved as tokenizer.json, read by pyburn, and
must encode a few hundred texts to the same ids and decode ids to the same text."""

from __future__ import annotations

import json
import random
import unicodedata

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pyburn import ArgumentError, FormatError
from pyburn.models import Tokenizer
from pyburn.models.tokenizers import pre_tokenizers as pyburn_pre_tokenizers

tokenizers = pytest.importorskip("tokenizers")

from tokenizers import (  # noqa: E402
    AddedToken,
    Regex,
    decoders,
    models,
    normalizers,
    pre_tokenizers,
    processors,
    trainers,
)

CORPUS = [
    "The quick brown fox jumps over the lazy dog. It's what they'd say, isn't it?",
    "I'll tell you: we've GOT to go, they're LATE and you'm... don't you DARE!",
    "Numbers: 0 1 12 123 1234 12345 3.14159, 2,718 and 1e-9; phone +1 (555) 010-9999.",
    "Naïve café owners in Zürich façade São Paulo, Ærøskøbing, Łódź and Đà Nẵng.",
    "Ελληνικά: Η γρήγορη καφέ αλεπού πηδάει. ΟΔΟΣ ΣΟΦΙΑΣ, σοφία και λόγος.",
    "中文文本测试，我们喜欢机器学习。日本語のテキストもあります。한국어 문장도 있어요.",
    "Emoji 😀 🎉🎉 👍🏽 👨‍👩‍👧 🇫🇷 ❤️ and symbols © ® ™ € £ ¥ § ¶ → ← ≤ ≥ ∑ ∞.",
    "Whitespace   runs\tand\ttabs\n\nnew lines\r\nand    trailing   ",
    "def tokenize(text):\n    return [t for t in text.split() if t]  # code!",
    "URLs like https://example.com/path?q=1&r=two and e-mail a.b@c.de",
    "Кириллица тоже: быстрая коричневая лиса. Ünïcödé ÀÉÎÕÜ àéîõü ñ ç ß.",
    "العربية نص قصير. עברית גם כן. हिन्दी पाठ। ภาษาไทย",
]

#: Llama 3's split pattern (its tokenizer.json's Split pre-tokenizer)
LLAMA3_PATTERN = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}|"
                  r" ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+")

EDGE_CASES = [
    "", " ", "  ", "\n", "\n\n\t ", "a", "Hello world", "  leading spaces", "trailing   ",
    "multiple   spaces   here", "I'll say it's THEY'RE, we've, you'D", "don't WON'T",
    "ΟΔΟΣ ΣΟΦΙΑΣ ΣΟΦΟΣ", "naïve café", "e\u0301 A\u030a", "ﬁ ﬀ Å ½ ²", "1234567890 12 3",
    "3.14159", "中文字符测试", "日本語のテキスト", "한국어", "👍🏽 🇫🇷 👨‍👩‍👧", "\x00\x01\x1f\x7f",
    "\u200b\u00a0\u3000\u2028x", "a\x85b\x0bc\x0cd\x1ce", "tab\there", "CRLF\r\nline\r\n",
    "x" * 120, "ab" * 70,
    "<|endoftext|>", "a<|endoftext|>b", "<s>hello</s>", " <s> hello </s> ", "[CLS] hi [SEP]",
    "<|begin_of_text|>Hi<|end_of_text|>", "say hello world hello  world", "a <tag> b",
    "a<tag>b", "x <tag>", "ſ İstanbul ǅ ẞ", "\ufffd", "\U0001F600\U0001F600", "\u0378\u0380",
    "Ω≈ç√∫˜µ≤≥÷", "'s 's 'S ’s", "!!!???...", "@#$%^&*()_+-=[]{}|;:,./<>?`~",
    "\\ \\n \\t", "a\u0300\u0301\u0302", "Ⅻ ⅻ ① ⑽", "১২৩ ٤٥٦", "tokenizer_tokenizer",
]


def _random_texts(count: int) -> list[str]:
    # pieces of the corpus glued by assorted white space, and shuffles of its characters
    rng = random.Random(2024)
    words = " ".join(CORPUS).split()
    chars = sorted(set("".join(CORPUS)))
    texts = []
    for n in range(count):
        if n % 3:
            glue = [" ", "  ", "\n", "\t", " \n ", ""]
            texts.append("".join(rng.choice(words) + rng.choice(glue)
                                 for _ in range(rng.randint(1, 8))))
        else:
            texts.append("".join(rng.choices(chars, k=rng.randint(1, 30))))
    return texts


TEXTS = EDGE_CASES + CORPUS + [line[:n] for line in CORPUS for n in (5, 17, 33)] \
    + _random_texts(220)


def _train(tok, trainer):
    tok.train_from_iterator(CORPUS * 3, trainer)
    return tok


def _bpe_trainer(size: int, specials: list[str], **options) -> trainers.BpeTrainer:
    return trainers.BpeTrainer(vocab_size=size, special_tokens=specials, show_progress=False,
                               **options)


def gpt2(prefix_space: bool = False, nfc: bool = False):
    """GPT-2's byte-level BPE, with an added token of each kind."""
    tok = tokenizers.Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=prefix_space)
    if nfc:
        tok.normalizer = normalizers.NFC()
    tok.decoder = decoders.ByteLevel()
    tok.post_processor = processors.ByteLevel(trim_offsets=True)
    _train(tok, _bpe_trainer(500, ["<|endoftext|>"],
                             initial_alphabet=pre_tokenizers.ByteLevel.alphabet()))
    tok.add_tokens([AddedToken(" hello world", normalized=True),
                    AddedToken("<tag>", single_word=True, lstrip=True, rstrip=True,
                               normalized=False),
                    AddedToken("café", normalized=True)])
    return tok


def _llama2_model():
    # a BPE trained on "▁" words, then Llama 2's vocabulary layout: <unk> <s> </s>, the 256
    # byte tokens, the rest; few characters of its own, so that byte fallback is needed
    trained = tokenizers.Tokenizer(models.BPE())
    trained.pre_tokenizer = pre_tokenizers.Metaspace()
    _train(trained, _bpe_trainer(450, [], limit_alphabet=120))
    spec = json.loads(trained.to_str())["model"]
    vocab = ["<unk>", "<s>", "</s>", *(f"<0x{b:02X}>" for b in range(256)),
             *sorted(spec["vocab"], key=spec["vocab"].get)]
    return models.BPE({token: n for n, token in enumerate(vocab)},
                      [tuple(merge) for merge in spec["merges"]], unk_token="<unk>",
                      byte_fallback=True, fuse_unk=True)


def _llama2_common(tok):
    tok.post_processor = processors.TemplateProcessing(single="<s> $A",
                                                       special_tokens=[("<s>", 1)])
    tok.add_special_tokens(["<unk>", "<s>", "</s>"])
    return tok


def llama2():
    """Llama 2's legacy file: "▁" prepended and put for spaces by the normalizer."""
    tok = tokenizers.Tokenizer(_llama2_model())
    tok.normalizer = normalizers.Sequence([normalizers.Prepend("▁"),
                                           normalizers.Replace(" ", "▁")])
    tok.decoder = decoders.Sequence([decoders.Replace("▁", " "), decoders.ByteFallback(),
                                     decoders.Fuse(), decoders.Strip(" ", 1, 0)])
    return _llama2_common(tok)


def llama2_metaspace(scheme: str, split: bool):
    """Llama 2's newer file: a Metaspace pre-tokenizer and decoder."""
    tok = tokenizers.Tokenizer(_llama2_model())
    tok.pre_tokenizer = pre_tokenizers.Metaspace(prepend_scheme=scheme, split=split)
    tok.decoder = decoders.Sequence([decoders.ByteFallback(),
                                     decoders.Metaspace(prepend_scheme=scheme)])
    return _llama2_common(tok)


def llama3():
    """Llama 3's byte-level BPE: its split pattern, ignore_merges, <|begin_of_text|>."""
    tok = tokenizers.Tokenizer(models.BPE(ignore_merges=True))
    tok.pre_tokenizer = pre_tokenizers.Sequence([
        pre_tokenizers.Split(Regex(LLAMA3_PATTERN), behavior="isolated"),
        pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)])
    tok.decoder = decoders.ByteLevel()
    specials = ["<|begin_of_text|>", "<|end_of_text|>", "<|reserved_special_token_0|>"]
    _train(tok, _bpe_trainer(600, specials,
                             initial_alphabet=pre_tokenizers.ByteLevel.alphabet()))
    tok.post_processor = processors.Sequence([
        processors.ByteLevel(trim_offsets=False),
        processors.TemplateProcessing(single="<|begin_of_text|> $A",
                                      special_tokens=[("<|begin_of_text|>", 0)])])
    return tok


def bert(lowercase: bool):
    """BERT's WordPiece: uncased (lower case, accents stripped) with BertProcessing, or
    cased with a TemplateProcessing."""
    tok = tokenizers.Tokenizer(models.WordPiece(unk_token="[UNK]"))
    tok.normalizer = normalizers.BertNormalizer(lowercase=lowercase,
                                                strip_accents=None if lowercase else False)
    tok.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    tok.decoder = decoders.WordPiece()
    specials = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
    _train(tok, trainers.WordPieceTrainer(vocab_size=500, special_tokens=specials,
                                          limit_alphabet=150, show_progress=False))
    cls, sep = (tok.token_to_id(t) for t in ("[CLS]", "[SEP]"))
    tok.post_processor = (processors.BertProcessing(("[SEP]", sep), ("[CLS]", cls)) if lowercase
                          else processors.TemplateProcessing(
                              single="[CLS] $A [SEP]",
                              special_tokens=[("[CLS]", cls), ("[SEP]", sep)]))
    return tok


def bpe_affixes():
    """A BPE whose inner pieces carry "##" and last pieces "</w>", with an unknown token
    for the characters left out of its alphabet, and no decoder or post-processor."""
    tok = tokenizers.Tokenizer(models.BPE(unk_token="[UNK]", continuing_subword_prefix="##",
                                          end_of_word_suffix="</w>"))
    tok.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    return _train(tok, _bpe_trainer(500, ["[UNK]"], limit_alphabet=100,
                                    continuing_subword_prefix="##", end_of_word_suffix="</w>"))


STYLES = {
    "gpt2": gpt2,
    "gpt2-prefix-nfc": lambda: gpt2(prefix_space=True, nfc=True),
    "llama2": llama2,
    "llama2-metaspace-first": lambda: llama2_metaspace("first", split=False),
    "llama2-metaspace-always": lambda: llama2_metaspace("always", split=True),
    "llama3": llama3,
    "bert-uncased": lambda: bert(lowercase=True),
    "bert-cased": lambda: bert(lowercase=False),
    "bpe-affixes": bpe_affixes,
}


def _ours(reference, tmp_path, name="tokenizer.json") -> Tokenizer:
    path = tmp_path / name
    reference.save(str(path))
    return Tokenizer.from_file(path)


@pytest.fixture(scope="module", params=STYLES)
def pair(request, tmp_path_factory):
    reference = STYLES[request.param]()
    return reference, _ours(reference, tmp_path_factory.mktemp(request.param))


def _check_text(reference, ours: Tokenizer, text: str) -> None:
    for special in (True, False):
        ids = reference.encode(text, add_special_tokens=special).ids
        assert ours.encode(text, add_special_tokens=special) == ids, (text, special)
        for skip in (True, False):
            assert ours.decode(ids, skip_special_tokens=skip) == \
                reference.decode(ids, skip_special_tokens=skip), (text, ids, skip)


def test_encode_and_decode_equal_the_reference(pair):
    reference, ours = pair
    for text in TEXTS:
        _check_text(reference, ours, text)


#: any character that Unicode 3.2 assigned already: the reference's character tables are
#: older than Python's, so that newer characters (a mark of 2021) may differ between them
OLD_CHARACTERS = st.characters(codec="utf-8", exclude_categories=("Cs", "Cn")).filter(
    lambda char: unicodedata.ucd_3_2_0.category(char) != "Cn")


@settings(max_examples=40, derandomize=True, deadline=None)
@given(text=st.text(st.one_of(st.sampled_from(sorted(set("".join(CORPUS)) | set("'\n\t "))),
                              OLD_CHARACTERS), max_size=40))
def test_any_text_equals_the_reference(pair, text):
    _check_text(*pair, text)


def test_decoding_any_ids_equals_the_reference(pair):
    # random ids make byte sequences that are not UTF-8, unknown ids and stray specials
    reference, ours = pair
    rng = random.Random(7)
    size = reference.get_vocab_size()
    for _ in range(150):
        ids = [rng.randrange(size + 3) for _ in range(rng.randint(0, 12))]
        for skip in (True, False):
            assert ours.decode(ids, skip) == reference.decode(ids, skip), ids


SPLIT_TEXTS = ["", "a", "ab12 cd--34--", "--x----y--", "  Hé Ωμέγα 42 中文  ", "ABC def\n\tGHI"]


SPLIT_PATTERNS = [r"\p{N}+", r"\P{L}+", r"[\p{Lu}\s]", r"\S+", r"[^-\p{Ll}]+"]


@pytest.mark.parametrize("behavior", ["removed", "isolated", "merged_with_previous",
                                      "merged_with_next", "contiguous"])
@pytest.mark.parametrize("invert", [False, True])
def test_split_equals_the_reference(behavior, invert):
    for pattern in [*map(Regex, SPLIT_PATTERNS), "--"]:
        reference = pre_tokenizers.Split(pattern, behavior, invert=invert)
        ours = pyburn_pre_tokenizers.build(json.loads(reference.__getstate__()))
        for text in SPLIT_TEXTS:
            assert [piece for piece, _ in ours([(text, True)])] == \
                [piece for piece, _ in reference.pre_tokenize_str(text)], (pattern, text)


@pytest.mark.parametrize("fuse_unk", [False, True])
@pytest.mark.parametrize("byte_fallback", [False, True])
def test_unknown_characters_equal_the_reference(fuse_unk, byte_fallback, tmp_path):
    # some bytes have tokens and some not: unknown tokens and byte tokens interleave
    vocab = {"<unk>": 0, "a": 1, "b": 2, "ab": 3, "<0xC3>": 4, "<0xA9>": 5, "<0xE4>": 6}
    reference = tokenizers.Tokenizer(models.BPE(vocab, [("a", "b")], unk_token="<unk>",
                                                fuse_unk=fuse_unk, byte_fallback=byte_fallback))
    ours = _ours(reference, tmp_path)
    for text in ["ab", "xyab", "axyzb", "aébé", "aéxyéb", "x中éx中b", "中中", "ééab"]:
        assert ours.encode(text) == reference.encode(text).ids, text


def test_vocabulary_equals_the_reference(pair):
    reference, ours = pair
    assert ours.vocab_size == reference.get_vocab_size()
    for token, id in reference.get_vocab().items():
        assert ours.token_to_id(token) == id
        assert ours.id_to_token(id) == reference.id_to_token(id)
    assert ours.token_to_id("no such token, surely") is None
    assert ours.id_to_token(10 ** 9) is None


@pytest.mark.parametrize("style, pad, side", [("bert-uncased", "[PAD]", "right"),
                                              ("llama3", "<|end_of_text|>", "left")])
def test_encode_batch_pads_as_the_reference(style, pad, side, tmp_path):
    reference = STYLES[style]()
    reference.enable_padding(direction=side, pad_id=reference.token_to_id(pad), pad_token=pad)
    ours = _ours(reference, tmp_path)
    texts = TEXTS[:40]
    expected = reference.encode_batch(texts)
    ids, mask = ours.encode_batch(texts)
    assert ids == [e.ids for e in expected]
    assert mask == [e.attention_mask for e in expected]
    assert ours.encode_batch(texts, padding=False) == \
        ([ours.encode(t) for t in texts], [[1] * len(ours.encode(t)) for t in texts])


@pytest.mark.parametrize("side", ["right", "left"])
def test_truncation_of_the_file_is_applied(side, tmp_path):
    reference = STYLES["bert-uncased"]()
    reference.enable_truncation(max_length=7, direction=side)
    ours = _ours(reference, tmp_path)
    for text in TEXTS[:60]:
        for special in (True, False):
            assert ours.encode(text, special) == \
                reference.encode(text, add_special_tokens=special).ids


def test_merges_written_as_strings_read_the_same(tmp_path):
    # older files write each merge as "a b"
    reference = STYLES["gpt2"]()
    spec = json.loads(reference.to_str())
    spec["model"]["merges"] = [" ".join(merge) for merge in spec["model"]["merges"]]
    ours = Tokenizer.from_json(json.dumps(spec))
    assert [ours.encode(t) for t in CORPUS] == [reference.encode(t).ids for t in CORPUS]


def test_padding_without_a_pad_token_is_an_argument_error(tmp_path):
    ours = _ours(STYLES["llama3"](), tmp_path)
    with pytest.raises(ArgumentError, match="pad token"):
        ours.encode_batch(["a", "bb"])
    ours.pad_token = "<|end_of_text|>"
    short, long = ours.encode("a"), ours.encode("hello world")
    pad = [ours.token_to_id("<|end_of_text|>")] * (len(long) - len(short))
    assert ours.encode_batch(["a", "hello world"]) == \
        ([short + pad, long], [[1] * len(short) + [0] * len(pad), [1] * len(long)])


MINIMAL = {"model": {"type": "BPE", "vocab": {"a": 0}, "merges": []}}


@pytest.mark.parametrize("change, message", [
    ({"model": {"type": "Unigram", "vocab": []}}, "model 'Unigram' is not supported"),
    ({"pre_tokenizer": {"type": "Digits"}}, "pre-tokenizer 'Digits' is not supported"),
    ({"normalizer": {"type": "Sequence", "normalizers": [{"type": "Precompiled"}]}},
     "normalizer 'Precompiled' is not supported"),
    ({"decoder": {"type": "CTC"}}, "decoder 'CTC' is not supported"),
    ({"post_processor": {"type": "Cyrillic"}}, "post-processor 'Cyrillic' is not supported"),
    ({"pre_tokenizer": {"type": "Split", "pattern": {"Regex": r"\p{Han}+"},
                        "behavior": "Isolated", "invert": False}}, r"\\p\{Han\}"),
    ({"model": {"type": "BPE", "vocab": {"a": 0}, "merges": [["a", "b"]]}},
     "'b', which is not in the vocabulary"),
    ({"model": {"type": "BPE", "vocab": {"a": 0}}}, "malformed"),
])
def test_unsupported_or_broken_files_are_format_errors(change, message):
    with pytest.raises(FormatError, match=message):
        Tokenizer.from_json({**MINIMAL, **change})


def test_text_that_is_not_json_is_a_format_error():
    with pytest.raises(FormatError, match="not JSON"):
        Tokenizer.from_json("{not json")
    with pytest.raises(FormatError, match="no \"model\""):
        Tokenizer.from_json("[]")
