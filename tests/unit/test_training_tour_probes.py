"""The training lab's tour probes (components/tours/probes/training.py), each against a
computation of its own: the shipped tables read here, n-grams and counts made here."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import numpy as np
import pytest

from components.tours.probes import Choice, Live, MissingLive, run_probe
from components.tours.schema import TOURS_DIR, read_tour
from models.training.tasks import make_task
from models.training.train import CHECKPOINT_DIR, COPY_LAG_FILE, LM_BASELINE_FILE

TRAIN = make_task("lm").split()[0]
ORDERS = np.arange(1, 7)


def _share_unseen(text: str, n: int) -> float:
    """Counted here: the n-grams of `text`, at every position, that TRAIN never holds."""
    seen = {TRAIN[i : i + n] for i in range(len(TRAIN) - n + 1)}
    grams = [text[i : i + n] for i in range(len(text) - n + 1)]
    return sum(g not in seen for g in grams) / len(grams) if grams else float("nan")


def _sparsity(text: str) -> Live:
    held = json.loads((CHECKPOINT_DIR / LM_BASELINE_FILE).read_text())["unseen_share"]
    return Live(
        {
            "training.sparsity": {
                "orders": ORDERS,
                "held_out": np.asarray(held),
                "sentence": np.asarray([_share_unseen(text, n) for n in ORDERS]),
                "chars": text,
            }
        }
    )


def test_the_sentence_quotes_count_its_characters_and_its_unseen_n_grams():
    text = "The animal didn't cross the street because it was too tired"
    live = _sparsity(text)
    assert run_probe("training.n_chars", live) == len(text)
    four = [text[i : i + 4] for i in range(len(text) - 3)]
    missing = [g for g in four if g not in TRAIN]
    assert run_probe("training.unseen", live, {"n": 4}) == pytest.approx(len(missing) / len(four))
    held = json.loads((CHECKPOINT_DIR / LM_BASELINE_FILE).read_text())["unseen_share"][3]
    assert run_probe("training.unseen", live, {"n": 4, "text": "held_out"}) == held
    with pytest.raises(ValueError):
        run_probe("training.unseen", live, {"n": 9})
    # Too short for a 4-gram: no share to quote, and nothing to be done yet.
    assert run_probe("training.unseen", _sparsity("abc"), {"n": 4}) == "–"
    assert run_probe("training.unseen", _sparsity("abc"), {"n": 3}) == 1.0


def test_the_task_is_done_only_when_every_4_gram_is_in_the_story():
    assert run_probe("training.all_seen", _sparsity("the river and the lamp"), {"n": 4})
    for not_done in ("The animal didn't cross the street", "我的猫坐在温暖的笔记本电脑上", "abc"):
        assert not run_probe("training.all_seen", _sparsity(not_done), {"n": 4}), not_done


def test_the_best_n_gram_is_the_order_of_the_lowest_held_out_perplexity():
    baseline = json.loads((CHECKPOINT_DIR / LM_BASELINE_FILE).read_text())
    live = Live(
        {
            "training.perplexity": {
                "orders": np.asarray(baseline["orders"]),
                "ngram": np.asarray(baseline["ngram_perplexity"]),
                "neural": baseline["neural_perplexity"],
            }
        }
    )
    table = dict(zip(baseline["orders"], baseline["ngram_perplexity"], strict=True))
    lowest = min(table, key=table.get)
    assert run_probe("training.best_ngram", live) == lowest
    assert run_probe("training.best_ngram_perplexity", live) == table[lowest]


def _next(after: str, sentence: str) -> Live:
    """The bigram's likeliest followers of `after` by raw counts in TRAIN (no smoothing:
    its top character is the same when one follower is counted far more than the rest)."""
    follows = Counter(TRAIN[i + 1] for i in range(len(TRAIN) - 1) if TRAIN[i] == after)
    top = follows.most_common(5)
    total = sum(follows.values())
    return Live(
        {
            "training.next": {
                "after": after,
                "chars": tuple(c for c, _ in top),
                "probs": np.asarray([k / total for _, k in top]),
                "sentence": tuple(dict.fromkeys(sentence)),
            }
        }
    )


def test_the_bigram_question_offers_characters_of_the_sentence_and_the_counted_follower():
    sentence = "The animal didn't cross"
    live = _next("T", sentence)
    answer = run_probe("training.bigram_next", live)
    assert isinstance(answer, Choice)
    assert answer.options[answer.right] == "h"  # "Th…" is how the story's T's go on
    assert 2 <= len(answer.options) <= 4 and len(set(answer.options)) == len(answer.options)
    assert set(answer.options) - {"h"} <= {"T", "e", "␣"}  # the sentence's first characters
    raw = [" " if option == "␣" else option for option in answer.options]
    assert raw == sorted(raw)  # in character order: no place gives the answer away
    assert run_probe("training.after", live) == "T"
    counted = TRAIN.count("Th") / sum(TRAIN[i] == "T" for i in range(len(TRAIN) - 1))
    assert run_probe("training.bigram_top_probability", live) == pytest.approx(counted)


def test_the_bigram_question_shows_a_space_as_a_visible_mark_and_always_has_two_options():
    answer = run_probe("training.bigram_next", _next("e", "e"))  # after "e", mostly a space
    assert answer.options[answer.right] == "␣"
    assert len(answer.options) >= 2


def _lag() -> tuple[dict, Live]:
    table = json.loads((CHECKPOINT_DIR / COPY_LAG_FILE).read_text())
    names = {"rnn": "RNN", "lstm": "LSTM", "gru": "GRU", "transformer": "Transformer"}
    live = Live(
        {
            "training.lag": {
                "lags": np.asarray(table["lags"]),
                "models": tuple(names[k] for k in table["accuracy"]),
                "accuracy": np.asarray(
                    [[row[str(g)] for g in table["lags"]] for row in table["accuracy"].values()]
                ),
                "chance": table["chance"],
            }
        }
    )
    return table, live


def test_the_lag_question_names_the_model_with_the_best_accuracy_in_the_shipped_table():
    table, live = _lag()
    names = {"rnn": "RNN", "lstm": "LSTM", "gru": "GRU", "transformer": "Transformer"}
    for lag in table["lags"]:
        answer = run_probe("training.best_at_lag", live, {"lag": lag})
        best = max(table["accuracy"], key=lambda kind: table["accuracy"][kind][str(lag)])
        assert answer.options[answer.right] == names[best]
        assert set(answer.options) == set(names.values())
    assert (
        run_probe("training.accuracy_at", live, {"model": "LSTM", "lag": 40})
        == (table["accuracy"]["lstm"]["40"])
    )
    with pytest.raises(ValueError):
        run_probe("training.best_at_lag", live, {"lag": 30})


def test_the_heads_question_names_the_layer_of_the_highest_induction_score():
    induction = np.array([[0.0, 0.1, np.nan], [0.2, 0.3, 0.1], [0.9, 0.4, 0.2]])
    previous = np.array([[0.1, 0.8, 0.0], [0.2, 0.1, 0.1], [0.0, 0.1, 0.2]])
    live = Live({"training.heads": {"induction": induction, "previous_token": previous}})
    answer = run_probe("training.induction_layer", live)
    assert answer.options == ("0", "1", "2") and answer.right == 2
    assert run_probe("training.head_score", live, {"score": "induction"}) == 0.9
    assert run_probe("training.head_layer", live, {"score": "previous_token"}) == 0


def test_mean_bits_leave_out_the_characters_a_model_cannot_score():
    bits = {
        "4-gram": np.array([2.0, np.nan, 4.0]),
        "LSTM": np.array([1.0, np.nan, 2.0]),
        "Transformer": np.array([np.nan, np.nan, np.nan]),
    }
    live = Live({"training.surprisal": {"bits": bits, "ngram": "4-gram", "chars": "abcd"}})
    assert run_probe("training.mean_bits", live, {"model": "ngram"}) == 3.0
    assert run_probe("training.mean_bits", live, {"model": "LSTM"}) == 1.5
    assert run_probe("training.mean_bits", live, {"model": "Transformer"}) == "–"  # no "nan"
    assert run_probe("training.least_surprised", live) == "LSTM"


def test_a_probe_without_its_part_s_offer_says_so():
    with pytest.raises(MissingLive):
        run_probe("training.bigram_next", Live())


def test_the_training_tour_reads_and_asks_at_least_two_questions_across_the_parts():
    tour = read_tour(Path(TOURS_DIR) / "training.json")
    assert tour.lesson == "training" and 5 <= len(tour.steps) <= 9
    assert sum(step.question is not None for step in tour.steps) >= 2
    assert {step.part for step in tour.steps} == {"ngram", "lag", "heads", "yours"}
