"""The tokenizer of SeqLens's own models: words, CJK characters, marks, and a visible [UNK]."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from models.nets.tokenizer import MAX_TOKENS, UNK, Tokenizer

tok = Tokenizer()


def test_english_words_are_lowercased_tokens_and_punctuation_is_separate():
    enc = tok.encode("The dog, bites MAN!")
    assert enc.tokens == ("the", "dog", ",", "bites", "man", "!")
    assert UNK not in enc.tokens


def test_each_cjk_character_is_its_own_token_so_order_changes_the_ids():
    a, b = tok.encode("我爱你"), tok.encode("你爱我")
    assert a.tokens == ("我", "爱", "你")
    assert b.tokens == ("你", "爱", "我")
    assert a.ids == tuple(reversed(b.ids))
    assert len(set(a.ids)) == 3


def test_cjk_ids_follow_the_code_point():
    first, last = tok.encode("一鿿").ids
    assert last - first == 0x9FFF - 0x4E00
    assert tok.id_to_token(first) == "一"


def test_unknown_pieces_become_a_visible_unknown_token_with_their_text():
    text = "I love 😀 xyzzyq café"
    enc = tok.encode(text)
    assert enc.tokens.count(UNK) == 3
    assert enc.unknown_spans(text) == ["😀", "xyzzyq", "café"]


def test_long_text_is_capped_and_says_so():
    enc = tok.encode("the " * 600)
    assert len(enc.ids) == MAX_TOKENS
    assert enc.truncated and enc.n_tokens_before_cap == 600


def test_vocabulary_is_fixed_and_distinct():
    assert tok.vocab_size == Tokenizer().vocab_size
    ids = [tok.token_id(w) for w in ("the", "dog", "man", "bites", "a")]
    assert len(set(ids)) == len(ids) and tok.unk_id not in ids


@settings(max_examples=60, deadline=None)
@given(st.text(max_size=80))
def test_any_text_gives_ids_in_range_and_offsets_into_the_text(text):
    enc = tok.encode(text)
    assert all(0 <= i < tok.vocab_size for i in enc.ids)
    assert len(enc.ids) == len(enc.tokens) == len(enc.offsets)
    for start, end in enc.offsets:
        assert 0 <= start < end <= len(text) and not text[start:end].isspace()
