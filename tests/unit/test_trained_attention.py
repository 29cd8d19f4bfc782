"""Trained SeqLens Transformers read by the attention lesson: switching heads off inside the
Transformer (a per-call factor on z), and the adapter the lesson and the ablation use."""

from __future__ import annotations

import copy
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest
import torch

from models.analysis import trained_sources as ts
from models.analysis.ablation import ablate, every_head_effect
from models.analysis.probes import circuit, head_scores
from models.analysis.trained_attention import NothingToRead, TrainedAttention
from models.nets.transformer import Transformer, TransformerConfig
from models.training import checkpoints
from models.training.task_base import IGNORE
from models.training.tasks import task_from_config
from models.training.train import CHECKPOINT_DIR

TINY = TransformerConfig(d_model=16, n_heads=4, d_head=4, n_layers=2, d_vocab=11, d_mlp=32)
IDS = [3, 1, 4, 1, 5, 9, 2, 6]


@pytest.fixture(scope="module", params=[False, True], ids=["encoder", "decoder"])
def tiny(request):
    return Transformer(TransformerConfig(**{**TINY.__dict__, "causal": request.param}), seed=3)


@pytest.fixture(scope="module")
def induction():
    return TrainedAttention(checkpoints.load(CHECKPOINT_DIR / ts.SHIPPED_INDUCTION))


@pytest.fixture(scope="module")
def lm():
    return TrainedAttention(checkpoints.load(CHECKPOINT_DIR / ts.SHIPPED_LM))


# --- the per-call keep factor in models/nets/transformer.py ------------------------------------


def test_keeping_every_head_computes_exactly_what_the_transformer_computed(tiny):
    ones = torch.ones(TINY.n_layers, TINY.n_heads)
    plain = tiny(IDS)
    assert torch.equal(tiny(IDS, head_keep=ones), plain)
    batched = tiny(torch.tensor([IDS, IDS]), head_keep=torch.ones(2, TINY.n_layers, TINY.n_heads))
    assert torch.equal(batched[0], plain) and torch.equal(batched[1], plain)
    _, cache = tiny.run_with_cache(IDS)
    _, kept = tiny.run_with_cache(IDS, head_keep=ones)
    assert cache.keys() == kept.keys()
    assert all(np.array_equal(cache[k], kept[k]) for k in cache)


@pytest.mark.parametrize(("layer", "head"), [(0, 0), (0, 3), (1, 2)])
def test_switching_a_head_off_equals_zeroing_its_rows_of_w_o(tiny, layer, head):
    keep = torch.ones(TINY.n_layers, TINY.n_heads)
    keep[layer, head] = 0.0
    twin = copy.deepcopy(tiny)
    with torch.no_grad():
        twin.blocks[layer].attn.W_O[head] = 0.0
    expected = twin(IDS)
    assert torch.allclose(tiny(IDS, head_keep=keep), expected, atol=1e-5)
    assert not torch.allclose(tiny(IDS), expected, atol=1e-3)


def test_one_batched_pass_switches_a_different_head_off_in_each_row(tiny, float32_atol):
    keep = torch.ones(3, TINY.n_layers, TINY.n_heads)
    for row, (layer, head) in enumerate([(0, 1), (1, 0), (1, 3)]):
        keep[row, layer, head] = 0.0
    batched = tiny(IDS, head_keep=keep)
    for row in range(3):
        alone = tiny(IDS, head_keep=keep[row])
        atol = float32_atol(alone, TINY.n_layers * TINY.d_mlp)
        assert torch.allclose(batched[row], alone, rtol=0, atol=atol)


# --- the adapter ------------------------------------------------------------------------------


def test_the_trace_holds_the_transformers_own_patterns_under_the_lessons_names(induction, lm):
    for model, text in ((induction, ""), (lm, "The cat sat on the mat.")):
        tokenized = model.tokenize(text)
        trace = model.run_with_cache(tokenized)
        _, own = model.model.core.run_with_cache(list(tokenized.ids))
        for layer in range(model.cfg.n_layers):
            for name in (f"blocks.{layer}.attn.hook_pattern", f"blocks.{layer}.hook_resid_pre"):
                assert np.array_equal(trace[name], own[name])
        last = f"blocks.{model.cfg.n_layers - 1}.hook_resid_post"
        assert np.array_equal(trace[last], own[last])
        assert list(trace["tokens"]) == list(tokenized.tokens)
        assert (
            trace["blocks.0.attn.hook_pattern"].shape
            == (model.cfg.n_heads,) + (len(tokenized.ids),) * 2
        )


def test_the_next_token_logits_are_the_models_own_readout(induction, lm, float32_atol):
    for model, text in ((induction, ""), (lm, "The cat sat on the mat.")):
        ids = model.tokenize(text).ids
        with torch.no_grad():
            expected = model.model(torch.tensor([ids]))[0, -1]  # SequenceModel.forward
        # The readout of the last position alone against that of every position: another
        # matrix shape, so another summation order.
        core = model.model.core.cfg
        atol = float32_atol(expected, core.n_layers * core.d_mlp)
        assert torch.allclose(model.forward(ids).next_logits[0], expected, rtol=0, atol=atol)
        assert model.cfg.causal and model.cfg.n_kv_heads == model.cfg.n_heads


def test_the_language_model_reads_the_sentence_character_by_character(lm):
    text = "Hi 😀 猫."
    assert set("Hi 猫.") <= set(lm.task.vocab) and "😀" not in lm.task.vocab
    tokenized = lm.tokenize(text)
    assert tokenized.tokens == ("H", "i", "␣", "␣", "猫", ".")
    assert [text[a:b] for a, b in tokenized.offsets] == ["H", "i", " ", " ", "猫", "."]
    [note] = lm.reading_notes(tokenized, text)
    assert note.code == "char_unknown_tokens" and note.quote == "😀"
    assert lm.vocab_token(tokenized.ids[0]) == "H" and lm.vocab_token(10**6) == "#1000000"
    long = lm.tokenize("ab" * 100)
    assert len(long.ids) == lm.cfg.n_ctx and long.n_tokens_before_cap == 200
    assert [n.code for n in lm.reading_notes(long, "ab" * 100)] == ["char_truncated_tokens"]
    with pytest.raises(NothingToRead):
        lm.tokenize("😀😀")


def test_the_induction_model_reads_its_sequence_up_to_a_position_the_task_scores(induction):
    tokenized = induction.tokenize("any sentence at all")
    assert tokenized == induction.tokenize("another one")
    batch = task_from_config(induction.task_config).held_out(1)
    n = len(tokenized.ids)
    assert list(tokenized.ids) == batch.inputs[0][:n].tolist()
    assert batch.targets[0][n - 1] != IGNORE and (batch.targets[0][n:] == IGNORE).all()
    assert induction.reading_notes(tokenized, "any sentence at all") == []
    assert induction.special_positions(tokenized) == ()


def test_switching_the_measured_induction_head_off_changes_the_next_token(induction):
    model = induction.model
    roles = circuit(head_scores(model, task_from_config(induction.task_config)))
    layer, head, _ = roles["induction"]
    tokenized = induction.tokenize("")
    batch = task_from_config(induction.task_config).held_out(1)
    target = int(batch.targets[0][len(tokenized.ids) - 1])
    change = ablate(induction, tokenized, [(layer, head)])
    assert change.top_before == target and change.before[0] > 0.9
    assert change.kl > 0.05
    after = dict(zip(change.token_ids.tolist(), change.after, strict=True))
    assert after[target] < change.before[0] - 0.05
    # Switched off alone, it is the head that matters most here.
    effects = every_head_effect(induction, tokenized)
    assert np.unravel_index(int(np.argmax(effects)), effects.shape) == (layer, head)


def test_ablations_leave_the_shared_model_untouched_even_eight_at_once(induction):
    before = {k: v.clone() for k, v in induction.model.state_dict().items()}
    tokenized = induction.tokenize("")
    heads = [[(layer, head)] for layer in range(2) for head in range(4)]
    serial = [ablate(induction, tokenized, h) for h in heads]
    with ThreadPoolExecutor(max_workers=8) as pool:
        together = list(pool.map(lambda h: ablate(induction, tokenized, h), heads))
    for one, other in zip(serial, together, strict=True):
        assert np.array_equal(one.after, other.after) and one.kl == other.kl
    after = induction.model.state_dict()
    assert before.keys() == after.keys()
    assert all(torch.equal(before[k], after[k]) for k in before)
    assert not any(p.requires_grad for p in induction.model.parameters())


def test_only_transformers_of_a_token_task_are_read():
    adding = checkpoints.load(CHECKPOINT_DIR / "adding-T50-lstm")
    with pytest.raises(ValueError, match="token task"):
        TrainedAttention(adding)
