"""Trained Transformers as sources for the attention lessons
(models/analysis/trained_sources.py)."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from models.analysis import masks
from models.analysis import trained_sources as ts
from models.nets.task_models import ModelSpec, SequenceModel
from models.training.tasks import make_task
from models.training.text_tasks import chinese_number, english_number

LM = make_task("lm").config()


def _causal_transformer(n_in: int = 12, n_ctx: int = 10) -> SequenceModel:
    spec = ModelSpec("transformer", n_in, n_in, d_model=16, n_heads=2, n_ctx=n_ctx)
    model = SequenceModel(spec, seed=3)
    with torch.no_grad():  # weights unlike the seed's, as training would leave them
        for parameter in model.parameters():
            parameter.add_(0.1 * torch.randn_like(parameter))
    return model.freeze()


def test_a_language_model_reads_the_sentence_and_skips_characters_it_never_saw():
    vocab = make_task("lm").vocab
    known = [c for c in "the cat" if c in vocab]
    assert known == list("the cat")  # the story has these characters
    reading = ts.read(LM, "the 😀cat", limit=40)
    assert reading.from_sentence and reading.unknown == ["😀"]
    assert [vocab[i] for i in reading.ids] == list("the cat")
    assert reading.tokens == ["t", "h", "e", "␣", "c", "a", "t"]
    assert reading.n_before_cap == 7


def test_a_reading_is_cut_at_the_limit_and_at_the_model_context():
    assert len(ts.read(LM, "ab" * 100, limit=40).ids) == 40
    assert ts.read(LM, "ab" * 100, limit=40).n_before_cap == 200
    short_context = make_task("lm", context=16).config()
    assert len(ts.read(short_context, "ab" * 100, limit=40).ids) == 16


def test_a_task_model_reads_its_task_s_own_sequences():
    task = make_task("induction")
    first = ts.read(task.config(), "whatever the visitor typed", limit=1000)
    assert not first.from_sentence and first.unknown == []
    expected = task.held_out(2).inputs
    assert first.ids == expected[0].tolist()
    assert first.tokens == [task.vocab[i] for i in expected[0].tolist()]
    second = ts.shorter(ts.read(task.config(), "", limit=1000, index=1))
    assert second.ids == expected[1].tolist()[: len(expected[1]) // 2]


def test_tasks_that_do_not_read_one_token_sequence_are_refused():
    with pytest.raises(ValueError):
        ts.example(make_task("adding").config())
    with pytest.raises(ValueError):
        ts.example(make_task("numbers").config())


def test_the_translation_example_is_a_held_out_number_in_both_languages():
    task = make_task("numbers")
    source, decoder, words, numerals = ts.translation_example(task.config())
    number = next(n for n in task.numbers(held_out=True) if english_number(n) == words)
    assert numerals[0] == "[BOS]" and "".join(numerals[1:]) == chinese_number(number)
    assert [task.vocab[i] for i in source] == words
    assert len(decoder) == len(numerals)
    assert len(words) == max(len(english_number(n)) for n in task.numbers(held_out=True))


def test_without_its_causal_mask_the_model_follows_the_lesson_s_mask_alone():
    model = _causal_transformer()
    twin = ts.without_causal_mask(model.core)
    ids = [1, 5, 2, 7, 3, 3, 0]
    expected, _ = model.core.run_with_cache(ids)
    causal, _ = masks.run_masked(twin, ids, masks.allowed_mask("causal", len(ids)))
    np.testing.assert_array_equal(causal, expected.numpy())
    open_all, cache = masks.run_masked(twin, ids, masks.allowed_mask("none", len(ids)))
    assert np.abs(open_all[:-1] - expected.numpy()[:-1]).max() > 1e-3
    assert (cache["blocks.0.attn.hook_pattern"][:, 0, 1:] > 0).all()  # the first sees ahead
    assert not any(p.requires_grad for p in twin.parameters())


def test_the_untrained_model_is_the_one_training_started_from():
    trained = _causal_transformer()
    before = ts.untrained(trained)
    fresh = SequenceModel(trained.spec, trained.seed)
    for (name, a), (_, b) in zip(
        before.state_dict().items(), fresh.state_dict().items(), strict=True
    ):
        torch.testing.assert_close(a, b, msg=name)
    assert not torch.equal(before.core.W_pos, trained.core.W_pos)


def test_position_cosines_match_torch_and_average_by_offset(rng):
    table = rng.normal(size=(7, 5))
    table[3] = 0.0  # a zero row has cosine 0 with everything, not NaN
    cosines = ts.position_cosines(table)
    t = torch.from_numpy(table)
    expected = F.cosine_similarity(t[:, None, :], t[None, :, :], dim=-1, eps=1e-300).numpy()
    np.testing.assert_allclose(
        np.delete(np.delete(cosines, 3, 0), 3, 1),
        np.delete(np.delete(expected, 3, 0), 3, 1),
        atol=1e-12,
    )
    assert (cosines[3] == 0).all()
    by_offset = ts.cosine_by_offset(cosines)
    assert by_offset.shape == (7,)
    assert by_offset[2] == pytest.approx(np.mean([cosines[i, i + 2] for i in range(5)]))
    assert by_offset[6] == pytest.approx(cosines[0, 6])


def test_only_a_visitor_s_token_task_transformers_are_offered():
    saved = [
        SimpleNamespace(name="101010-lm-transformer", kind="transformer", task={"name": "lm"}),
        SimpleNamespace(name="101010-lm-lstm", kind="lstm", task={"name": "lm"}),
        SimpleNamespace(name="101011-numbers-encdec", kind="encdec", task={"name": "numbers"}),
        SimpleNamespace(
            name="101012-copy-lag5-transformer", kind="transformer", task={"name": "copy", "lag": 5}
        ),
    ]
    assert ts.saved_transformers(saved) == [
        "101010-lm-transformer",
        "101012-copy-lag5-transformer",
    ]


def test_positional_attention_is_the_first_layer_s_attention_when_token_vectors_are_zero(
    float32_atol,
):
    model = _causal_transformer(n_ctx=9)
    core = model.core
    with torch.no_grad():
        core.W_E[0] = 0.0  # token 0 adds nothing: only its position reaches the first layer
    _, cache = core.run_with_cache([0] * core.cfg.n_ctx)
    pattern = ts.positional_attention(core)
    # Recomputed from the weights against the model's own pass: softmax weights (at most
    # 1) of scores that sum d_model products, in another order.
    atol = float32_atol(1.0, core.cfg.d_model)
    np.testing.assert_allclose(pattern, cache["blocks.0.attn.hook_pattern"], rtol=0, atol=atol)
    assert np.allclose(np.triu(pattern, 1), 0)  # the model's own causal mask
    np.testing.assert_allclose(pattern.sum(axis=-1), 1.0, atol=1e-6)


def test_weight_by_offset_averages_each_diagonal_below_the_main_one(rng):
    pattern = rng.random((2, 5, 5))
    by_offset = ts.weight_by_offset(pattern)
    assert by_offset.shape == (2, 5)
    assert by_offset[1, 0] == pytest.approx(np.mean([pattern[1, i, i] for i in range(5)]))
    assert by_offset[0, 2] == pytest.approx(np.mean([pattern[0, i, i - 2] for i in range(2, 5)]))
    assert by_offset[0, 4] == pytest.approx(pattern[0, 4, 0])
