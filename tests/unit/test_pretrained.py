"""all-MiniLM-L6-v2 as SeqLens reads it: tokenizer, trace names, attention recomputed by hand."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from models.nets.hf_models import MAX_TOKENS, accent_changes
from models.nets.pretrained import PretrainedEncoder, stack_patterns

SENTENCE = "The animal didn't cross the street because it was too tired"


@pytest.fixture(scope="module")
def encoder() -> PretrainedEncoder:
    return PretrainedEncoder()


@pytest.fixture(scope="module")
def tokenized(encoder):
    return encoder.tokenize(SENTENCE)


@pytest.fixture(scope="module")
def trace(encoder, tokenized):
    return encoder.run_with_cache(tokenized)


def _hidden_states(encoder, tokenized) -> list[np.ndarray]:
    """The model's own hidden states, from a plain forward call (not run_with_cache)."""
    input_ids = torch.tensor([tokenized.ids])
    with torch.inference_mode():
        out = encoder.model(
            input_ids=input_ids,
            attention_mask=torch.ones_like(input_ids),
            token_type_ids=torch.zeros_like(input_ids),
            output_hidden_states=True,
        )
    return [h[0].numpy().copy() for h in out.hidden_states]


def _softmax_attention(encoder, resid: np.ndarray, layer: int) -> np.ndarray:
    """softmax(Q·Kᵀ/√d_head) per head, in float64, from the layer's query/key Linear weights."""
    attn = encoder.model.encoder.layer[layer].attention.self
    n_heads, d_head = encoder.cfg.n_heads, encoder.cfg.d_head

    def project(linear: torch.nn.Linear) -> np.ndarray:
        weight = linear.weight.detach().numpy().astype(np.float64)  # [out, in]
        bias = linear.bias.detach().numpy().astype(np.float64)
        out = resid.astype(np.float64) @ weight.T + bias  # [pos, n_heads·d_head]
        return out.reshape(len(resid), n_heads, d_head).transpose(1, 0, 2)  # [head, pos, d]

    q, k = project(attn.query), project(attn.key)
    scores = q @ k.transpose(0, 2, 1) / np.sqrt(d_head)
    scores -= scores.max(axis=-1, keepdims=True)
    weights = np.exp(scores)
    return weights / weights.sum(axis=-1, keepdims=True)


# --- shapes and the trace ----------------------------------------------------------------


def test_config_matches_minilm_l6(encoder):
    cfg = encoder.cfg
    assert (cfg.n_layers, cfg.n_heads, cfg.d_head, cfg.d_model) == (6, 12, 32, 384)
    assert cfg.n_heads * cfg.d_head == cfg.d_model
    assert len(encoder.model.encoder.layer) == cfg.n_layers


def test_trace_shapes_follow_config(encoder, tokenized, trace):
    cfg, n = encoder.cfg, len(tokenized.ids)
    assert list(trace["tokens"]) == list(tokenized.tokens)
    assert trace["token_ids"].tolist() == list(tokenized.ids)
    for layer in range(cfg.n_layers):
        assert trace[f"blocks.{layer}.attn.hook_pattern"].shape == (cfg.n_heads, n, n)
        assert trace[f"blocks.{layer}.hook_resid_pre"].shape == (n, cfg.d_model)
    assert trace[f"blocks.{cfg.n_layers - 1}.hook_resid_post"].shape == (n, cfg.d_model)


def test_resid_pre_is_the_hidden_state_entering_each_layer(encoder, tokenized, trace):
    hidden = _hidden_states(encoder, tokenized)
    assert len(hidden) == encoder.cfg.n_layers + 1
    for layer in range(encoder.cfg.n_layers):
        np.testing.assert_allclose(
            trace[f"blocks.{layer}.hook_resid_pre"], hidden[layer], rtol=0, atol=1e-6
        )
    last = encoder.cfg.n_layers - 1
    np.testing.assert_allclose(trace[f"blocks.{last}.hook_resid_post"], hidden[-1], atol=1e-6)


def test_pattern_equals_softmax_of_scaled_query_key_products(encoder, trace):
    for layer in range(encoder.cfg.n_layers):
        expected = _softmax_attention(encoder, trace[f"blocks.{layer}.hook_resid_pre"], layer)
        actual = trace[f"blocks.{layer}.attn.hook_pattern"]
        assert actual.shape == expected.shape
        diff = float(np.abs(actual - expected).max())
        assert diff < 1e-5, f"layer {layer}: max abs diff {diff:.2e}"


def test_pattern_rows_sum_to_one(encoder, trace):
    for layer in range(encoder.cfg.n_layers):
        sums = trace[f"blocks.{layer}.attn.hook_pattern"].astype(np.float64).sum(axis=-1)
        assert np.abs(sums - 1.0).max() < 1e-5


def test_pretrained_weights_link_it_to_animal(tokenized, trace):
    # docs/DESIGN.md, Glossary: heads in layers 3-5 put 0.6+ of "it" on "animal". A randomly
    # initialised model would spread ~1/n everywhere, so this shows the real weights loaded.
    patterns = stack_patterns(trace)
    it, animal = tokenized.tokens.index("it"), tokenized.tokens.index("animal")
    assert patterns[3:, :, it, animal].max() > 0.6


def test_the_readme_s_two_heads_put_about_0_64_of_it_on_animal(tokenized, trace):
    """README: "layer 3 head 1 and layer 5 head 11 put about 0.64 of "it" on "animal"";
    the heads lesson opens on layer 3, head 1 for this reason. They are the two strongest."""
    patterns = stack_patterns(trace).astype(np.float64)
    it, animal = tokenized.tokens.index("it"), tokenized.tokens.index("animal")
    on_animal = patterns[:, :, it, animal]
    assert on_animal[3, 1] == pytest.approx(0.64, abs=0.01)
    assert on_animal[5, 11] == pytest.approx(0.64, abs=0.015)
    strongest_two = np.argsort(on_animal, axis=None)[-2:]
    assert {divmod(int(i), on_animal.shape[1]) for i in strongest_two} == {(3, 1), (5, 11)}


def test_minilm_s_vocabulary_holds_a_few_hundred_chinese_characters_and_no_common_emoji(encoder):
    """What the unknown-token note says of MiniLM's English vocabulary."""
    vocab = encoder.tokenizer.get_vocab()
    chinese = [piece for piece in vocab if len(piece) == 1 and "\u4e00" <= piece <= "\u9fff"]
    assert 100 <= len(chinese) < 1000
    tokens = encoder.tokenize("我爱你 🍕 😀 ☕ 👍").tokens
    assert tokens.count("[UNK]") == 6  # 爱, 你 and every emoji


def test_stack_patterns_is_layer_head_query_key(encoder, tokenized, trace):
    patterns = stack_patterns(trace)
    n = len(tokenized.ids)
    assert patterns.shape == (encoder.cfg.n_layers, encoder.cfg.n_heads, n, n)
    for layer in range(encoder.cfg.n_layers):
        np.testing.assert_array_equal(patterns[layer], trace[f"blocks.{layer}.attn.hook_pattern"])


def test_stack_patterns_orders_layers_numerically():
    # Twelve layers: "blocks.10" must come after "blocks.9", not after "blocks.1".
    trace = {f"blocks.{layer}.attn.hook_pattern": np.full((1, 2, 2), layer) for layer in range(12)}
    trace["blocks.0.hook_resid_pre"] = np.zeros((2, 4))
    stacked = stack_patterns(dict(reversed(trace.items())))
    assert stacked.shape == (12, 1, 2, 2)
    assert stacked[:, 0, 0, 0].tolist() == list(range(12))


# --- tokenize ----------------------------------------------------------------------------


def test_tokenize_wraps_text_in_cls_and_sep(encoder, tokenized):
    assert tokenized.tokens[0] == "[CLS]"
    assert tokenized.tokens[-1] == "[SEP]"
    assert "[CLS]" not in tokenized.tokens[1:-1] and "[SEP]" not in tokenized.tokens[1:-1]
    assert tokenized.n_tokens_before_cap == len(tokenized.ids)
    assert not tokenized.truncated
    assert len(tokenized.ids) == len(tokenized.tokens) == len(tokenized.offsets)
    assert tokenized.offsets[0] == tokenized.offsets[-1] == (0, 0)


def test_tokenize_caps_long_text_at_max_tokens_and_keeps_sep(encoder):
    text = " ".join(["word"] * 1000)
    tokenized = encoder.tokenize(text)
    assert len(tokenized.ids) == MAX_TOKENS
    assert len(tokenized.tokens) == len(tokenized.offsets) == MAX_TOKENS
    # "word" is one WordPiece: 1,000 words plus [CLS] and [SEP].
    assert tokenized.n_tokens_before_cap == 1002
    assert tokenized.truncated
    assert tokenized.tokens[0] == "[CLS]"
    assert tokenized.tokens[-1] == "[SEP]"
    assert set(tokenized.tokens[1:-1]) == {"word"}


def test_unknown_spans_returns_the_emoji_read_as_unk(encoder):
    text = "I love 😀"
    tokenized = encoder.tokenize(text)
    assert encoder.unknown_token == "[UNK]"
    assert "[UNK]" in tokenized.tokens
    assert "😀" in tokenized.unknown_spans(text, encoder.unknown_token)


def test_unknown_spans_returns_cjk_and_emoji_and_no_known_words(encoder):
    text = "cats 😀 你 dogs"
    vocab = encoder.tokenizer.get_vocab()
    assert "你" not in vocab and "cats" in vocab and "dogs" in vocab
    spans = encoder.tokenize(text).unknown_spans(text, encoder.unknown_token)
    assert spans == ["😀", "你"]


def test_unknown_spans_is_empty_for_plain_english(encoder, tokenized):
    assert tokenized.unknown_spans(SENTENCE, encoder.unknown_token) == []


def test_accent_changes_reports_stripped_accents(encoder):
    assert accent_changes("café", encoder.tokenizer) == [("café", "cafe")]
    # A repeated word is reported once; words are split on whitespace, in order.
    assert accent_changes("un café naïve, un café", encoder.tokenizer) == [
        ("café", "cafe"),
        ("naïve,", "naive,"),
    ]


def test_accent_changes_ignores_plain_ascii_and_lowercasing(encoder):
    assert accent_changes(SENTENCE, encoder.tokenizer) == []
    assert accent_changes("HELLO World", encoder.tokenizer) == []


def test_accent_changes_does_not_report_cjk_words(encoder):
    assert accent_changes("我爱你", encoder.tokenizer) == []


# --- run_with_cache leaves the shared model alone ---------------------------------------


def test_run_with_cache_leaves_model_unchanged(encoder, tokenized):
    before = {name: tensor.clone() for name, tensor in encoder.model.state_dict().items()}
    first = encoder.run_with_cache(tokenized)
    second = encoder.run_with_cache(tokenized)
    after = encoder.model.state_dict()
    assert before.keys() == after.keys()
    for name, tensor in before.items():
        assert torch.equal(tensor, after[name]), name
    assert encoder.model.training is False
    assert all(module.training is False for module in encoder.model.modules())
    for name, param in encoder.model.named_parameters():
        assert param.grad is None, name
        assert param.requires_grad is False, name

    assert first.keys() == second.keys()
    for key in first:
        np.testing.assert_array_equal(first[key], second[key])
        assert first[key] is not second[key], key
        assert not np.shares_memory(first[key], second[key]), key
