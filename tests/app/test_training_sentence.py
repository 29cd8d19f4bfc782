"""The training lab's first view reads the visitor's sentence: its n-grams counted against
the training story, and the bigram model's guess after one of its characters."""

from __future__ import annotations

from collections import Counter

import numpy as np
from conftest import chart, open_lesson, plotly_array

from components.i18n import t
from models.training.tasks import make_task

LM = make_task("lm")
TRAIN = LM.split()[0]


def _unseen(text: str, n: int) -> float:
    seen = {TRAIN[i : i + n] for i in range(len(TRAIN) - n + 1)}
    grams = [text[i : i + n] for i in range(len(text) - n + 1)]
    return sum(g not in seen for g in grams) / len(grams) if grams else float("nan")


def _trace(spec: dict, name: str) -> tuple[np.ndarray, np.ndarray]:
    trace = next(tr for tr in spec["data"] if tr["name"] == name)
    return plotly_array(trace["x"]), plotly_array(trace["y"])


def _witten_bell_bigram(after: str, char: str) -> float:
    """P(char | after) by the Witten–Bell formula, from counts made here."""
    unigram = Counter(TRAIN)
    p = 1 / len(LM.vocab)
    p = (unigram[char] + len(unigram) * p) / (len(TRAIN) + len(unigram))
    follows = Counter(TRAIN[i + 1] for i in range(len(TRAIN) - 1) if TRAIN[i] == after)
    return (follows[char] + len(follows) * p) / (sum(follows.values()) + len(follows))


def test_the_first_chart_counts_the_typed_sentence_s_n_grams_and_changes_with_it():
    at = open_lesson("training")
    assert not at.exception, [e.value for e in at.exception]
    assert at.session_state["tr_part"] == t("training.part.ngram", "en")
    mine, held = t("training.ngram.yours", "en"), t("training.ngram.held_out", "en")
    shown = {}
    for sentence in ("The animal didn't cross the street", "Zyx qwv jjj kkk"):
        at.text_input(key="sentence").set_value(sentence).run()
        assert not at.exception, [e.value for e in at.exception]
        n, share = _trace(chart(at, "tr_ngram_unseen"), mine)
        np.testing.assert_allclose(share, [_unseen(sentence, int(k)) for k in n])
        shown[sentence] = share
        _, held_share = _trace(chart(at, "tr_ngram_unseen"), held)
        assert held_share[0] < held_share[-1]  # the shipped table: longer n-grams, rarer
    assert not np.allclose(*shown.values())


def test_the_bigram_chart_shows_the_likeliest_characters_after_the_chosen_one():
    at = open_lesson("training", "The cat")
    assert at.selectbox(key="tr_after").value == 0  # the sentence's first character
    spec = chart(at, "tr_ngram_next")
    labels, probs = list(spec["data"][0]["x"]), plotly_array(spec["data"][0]["y"])
    follows = Counter(TRAIN[i + 1] for i in range(len(TRAIN) - 1) if TRAIN[i] == "T")
    assert labels[0] == follows.most_common(1)[0][0] == "h"
    np.testing.assert_allclose(probs[0], _witten_bell_bigram("T", "h"), rtol=1e-9)
    assert all(np.diff(probs) <= 0)  # likeliest first
    at.selectbox(key="tr_after").set_value(3).run()  # the space after "The"
    labels = list(chart(at, "tr_ngram_next")["data"][0]["x"])
    after_space = Counter(TRAIN[i + 1] for i in range(len(TRAIN) - 1) if TRAIN[i] == " ")
    assert labels[0] == after_space.most_common(1)[0][0]
    # A new sentence starts again from its first character.
    at.text_input(key="sentence").set_value("老师笑了").run()
    assert not at.exception, [e.value for e in at.exception]
    assert at.selectbox(key="tr_after").value == 0
    follows = Counter(TRAIN[i + 1] for i in range(len(TRAIN) - 1) if TRAIN[i] == "老")
    assert list(chart(at, "tr_ngram_next")["data"][0]["x"])[0] == follows.most_common(1)[0][0]


def test_a_link_sets_the_character_and_a_sentence_the_models_never_saw_is_told():
    at = open_lesson("training", "The cat", tr_after="4")
    assert at.selectbox(key="tr_after").value == 4
    assert chart(at, "tr_ngram_next")["layout"]["title"]["text"].endswith("c")
    at = open_lesson("training", "🙂🙂", lang="zh")
    assert not at.exception, [e.value for e in at.exception]
    assert t("training.next.none", "zh") in [el.value for el in at.info]
