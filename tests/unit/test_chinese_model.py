"""The Chinese character model (assets/checkpoints/lm-zh-transformer): it reads every
character of the Chinese example sentences, and meets the targets written in
models/training/train.py, re-measured here from the shipped file by a computation of its
own; and how the lesson tells a sentence written mostly in Chinese characters."""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pytest
import torch

from components.cjk import han_share, mostly_chinese
from models.training import checkpoints
from models.training.tasks import make_task
from models.training.train import CHECKPOINT_DIR, CHINESE_LM, TARGETS, ZH_SETTINGS, checkpoint_name

ROOT = Path(__file__).resolve().parents[2]
PRESETS = json.loads((ROOT / "assets" / "presets.json").read_text(encoding="utf-8"))
TASK = make_task("lm", **dict(ZH_SETTINGS))
ZH_TARGETS = {t.metric: t.threshold for t in TARGETS if t.task_object().key() == "lm-zh"}

pytestmark = pytest.mark.usefixtures("one_torch_thread")


@pytest.fixture(scope="module")
def model():
    return checkpoints.load(CHECKPOINT_DIR / CHINESE_LM).model


def _sub_diagonal_means(model, ids: torch.Tensor) -> np.ndarray:
    """`[layer, head]`: the mean weight each query puts on the key just before it, read from
    the attention each block computes (its own forward, not the lesson's measurement)."""
    _, cache = model.core.run_with_cache(ids)
    out = np.zeros((model.spec.n_layers, model.spec.n_heads))
    for layer in range(model.spec.n_layers):
        pattern = np.asarray(cache[f"blocks.{layer}.attn.hook_pattern"], dtype=np.float64)
        for head in range(model.spec.n_heads):
            rows = [pattern[head, q, q - 1] for q in range(1, pattern.shape[-1])]
            out[layer, head] = sum(rows) / len(rows)
    return out


def test_the_checkpoint_is_named_as_the_shipped_list_makes_it():
    assert checkpoint_name(TASK, "transformer") == CHINESE_LM
    assert set(ZH_TARGETS) == {"accuracy", "previous_char_score"}


def test_every_character_of_the_chinese_examples_is_in_its_alphabet():
    vocab = set(TASK.vocab)
    for lesson, sentences in PRESETS["zh"].items():
        for sentence in sentences:
            missing = sorted({c for c in sentence if c not in vocab})
            assert not missing, (lesson, sentence, missing)


def test_held_out_accuracy_is_its_target_and_far_above_the_commonest_character(model):
    train_text, held_text = TASK.split()
    index = {c: i for i, c in enumerate(TASK.vocab)}
    ids = torch.tensor([index[c] for c in held_text])
    n = TASK.context
    right = total = 0
    for start in range(0, len(ids) - 1 - n + 1, n):  # every held-out window, one at a time
        window = ids[start : start + n + 1]
        guess = model.predict(window[None, :-1])[0].argmax(-1)
        right += int((guess == window[1:]).sum())
        total += n
    accuracy = right / total
    assert accuracy >= ZH_TARGETS["accuracy"]
    commonest = max(set(train_text), key=train_text.count)
    always = sum(c == commonest for c in held_text[1:]) / (len(held_text) - 1)
    assert accuracy > 2 * always


def test_it_has_a_previous_character_head_on_the_held_out_text(model):
    windows = TASK.held_out().inputs[:32]
    scores = np.mean([_sub_diagonal_means(model, w) for w in windows], axis=0)
    assert scores.max() >= ZH_TARGETS["previous_char_score"]


def _even_head(n: int) -> float:
    """An even causal head's weight on the previous character, averaged over queries."""
    return float(np.mean([1 / (q + 1) for q in range(1, n)]))


def test_the_same_head_shows_on_the_chinese_examples_of_the_attention_lesson(model):
    """On each of the lesson's Chinese examples the held-out text's best head gives the
    character just before more than an even head would, and on average over them at
    least 1.4 times as much."""
    index = {c: i for i, c in enumerate(TASK.vocab)}
    held = np.mean([_sub_diagonal_means(model, w) for w in TASK.held_out().inputs[:32]], axis=0)
    layer, head = np.unravel_index(int(held.argmax()), held.shape)
    ratios = []
    for sentence in PRESETS["zh"]["heads"]:
        ids = torch.tensor([index[c] for c in sentence])
        ratios.append(_sub_diagonal_means(model, ids)[layer, head] / _even_head(len(ids)))
    assert min(ratios) > 1.0 and np.mean(ratios) >= 1.4, ratios


def test_the_bilingual_language_model_keeps_its_text_and_file_name():
    task = make_task("lm")
    assert task.key() == "lm" and task.config() == {"name": "lm", "context": 64}
    assert TASK.config() == {"name": "lm", "context": 32, "text": "zh"}
    with pytest.raises(ValueError):
        make_task("lm", text="../../etc/passwd")


HAN = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff]")


@pytest.mark.parametrize(
    "text, mostly",
    [
        ("我的猫坐在温暖的笔记本电脑上，因为它累了", True),
        ("The animal didn't cross the street because it was too tired", False),
        ("猫 cat", False),  # 1 Han character of 4 letters
        ("我爱 NLP 和猫", True),  # 4 of 7
        ("，。！？……", False),  # punctuation alone
        ("", False),
        ("ひらがなだけ", False),  # Japanese kana are not Han
        ("𠀀𠀁 ab", False),  # extension B counts: 2 of 4, not more than half
        ("𠀀𠀁𠀂 ab", True),
    ],
)
def test_a_sentence_is_mostly_chinese_when_more_than_half_its_letters_are_han(text, mostly):
    assert mostly_chinese(text) == mostly


def test_the_han_share_counts_letters_and_digits_only():
    text = "我的猫 likes 3 fish！"
    letters = [c for c in text if c.isalnum()]
    assert han_share(text) == pytest.approx(len(HAN.findall(text)) / len(letters))


@pytest.mark.parametrize("n", [2, 5, 32])
def test_an_even_head_s_previous_character_score_is_what_its_pattern_gives(n):
    from models.analysis.char_heads import even_previous_weight, previous_weight

    even = np.tril(np.ones((n, n)))
    even /= even.sum(axis=1, keepdims=True)
    assert even_previous_weight(n) == pytest.approx(previous_weight(even))
    assert previous_weight(np.eye(n, k=-1) + np.eye(n)[:1].T @ np.eye(n)[:1]) == 1.0
