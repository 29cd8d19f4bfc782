"""Tokens are shown as a reader would write them, whatever marks the tokenizer uses."""

from __future__ import annotations

import pytest
from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
from transformers import PreTrainedTokenizerFast

from models.nets.hf_models import SPACE_SHOWN, shown_token
from models.nets.pretrained import PretrainedEncoder

CORPUS = ["the café is open", "play playing played", "中文 字 the end"] * 20
TEXT = "the café, 中文 plays"


def _byte_level() -> PreTrainedTokenizerFast:
    """GPT-2's and RoBERTa's kind: every byte a symbol, a leading space written as Ġ."""
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    alphabet = pre_tokenizers.ByteLevel.alphabet()
    tok.train_from_iterator(CORPUS, trainers.BpeTrainer(vocab_size=300, initial_alphabet=alphabet))
    return PreTrainedTokenizerFast(tokenizer_object=tok)


def _sentencepiece_like() -> PreTrainedTokenizerFast:
    """Llama's kind: a word's space written as ▁, unknown characters as their bytes."""
    tok = Tokenizer(models.BPE(byte_fallback=True))
    tok.pre_tokenizer = pre_tokenizers.Metaspace()
    tok.decoder = decoders.Sequence(
        [
            decoders.Replace("▁", " "),
            decoders.ByteFallback(),
            decoders.Fuse(),
            decoders.Strip(" ", 1, 0),
        ]
    )
    specials = ["<unk>", "<s>"] + [f"<0x{i:02X}>" for i in range(256)]
    tok.train_from_iterator(CORPUS, trainers.BpeTrainer(vocab_size=320, special_tokens=specials))
    return PreTrainedTokenizerFast(tokenizer_object=tok, bos_token="<s>", unk_token="<unk>")


def _shown(tokenizer, text: str) -> tuple[list[str], list[str]]:
    enc = tokenizer(text, return_offsets_mapping=True)
    raw = tokenizer.convert_ids_to_tokens(enc["input_ids"])
    spans = [text[start:end] for start, end in enc["offset_mapping"]]
    shown = [shown_token(tokenizer, token, span) for token, span in zip(raw, spans, strict=True)]
    return raw, shown


def test_byte_level_marks_and_bytes_become_the_text_they_stand_for():
    raw, shown = _shown(_byte_level(), TEXT)
    assert "Ġcaf" in "".join(raw) and "Ã©" in "".join(raw)  # what the tokens look like
    assert "café" in shown and "plays" not in shown
    assert "".join(s for s in shown if s != SPACE_SHOWN) == TEXT.replace(" ", "")
    assert not any(mark in "".join(shown) for mark in ("Ġ", "Ã", "\ufffd"))


def test_a_token_that_is_part_of_a_character_is_shown_as_that_character():
    raw, shown = _shown(_sentencepiece_like(), "the 火")
    assert raw[-3:] == ["<0xE7>", "<0x81>", "<0xAB>"]
    assert shown[-3:] == ["火", "火", "火"]
    assert shown[0] == "the"


def test_a_space_alone_is_shown_as_a_visible_space():
    raw, shown = _shown(_byte_level(), "the  end")
    assert "Ġ" in raw
    assert shown[raw.index("Ġ")] == SPACE_SHOWN


def test_a_vocabulary_entry_without_text_keeps_its_own_name():
    tokenizer = _sentencepiece_like()
    assert shown_token(tokenizer, "<0xE7>") == "<0xE7>"
    assert shown_token(tokenizer, "<s>") == "<s>"


@pytest.mark.parametrize(
    "text",
    [
        "The animal didn't cross the street because it was too tired",
        "unbelievably ##hash [CLS] [MASK] don't 3.14 a.b,c",
        "café naïve ß ﬁ 中文 日本語 emoji 👍🏽 <b>x</b> $x^2$",
    ],
)
def test_wordpiece_tokens_are_shown_as_they_are(text):
    """The shipped model's tokens ("##ing", "[CLS]", "[UNK]") need no decoding."""
    tokenizer = PretrainedEncoder().tokenizer
    raw, shown = _shown(tokenizer, text)
    assert shown == raw
    assert list(PretrainedEncoder().tokenize(text).tokens) == raw
