"""Part ⑤ of "Recurrence returns", trained models, driven through AppTest as a visitor would:
the bars held to the measured table's file and to an accuracy measured here again from a
checkpoint, the answers to the trained model's own forward pass, Δ to the layer's formula."""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from conftest import chart, chart_keys, messages, open_lesson, plotly_array

from components.i18n import LANGUAGES, t
from models.training import checkpoints
from models.training.recurrence_table import TABLE_FILE
from models.training.tasks import make_task
from models.training.train import CHECKPOINT_DIR, SELECTIVE_COPY, checkpoint_name

CHARTS = {
    "rr_trained_accuracy",
    "rr_trained_timing",
    "rr_trained_reading",
    "rr_trained_answers",
    "rr_trained_grid",
}
TASK = make_task("selective_copy", **dict(SELECTIVE_COPY))
EDITED = "the cat sat on the mat because it was tired"


def _no_failure(at) -> None:
    assert not at.exception, [e.value for e in at.exception]
    assert not any(m == t("app.error") for m in messages(at))


def _table() -> dict:
    return json.loads((CHECKPOINT_DIR / TABLE_FILE).read_text(encoding="utf-8"))


def _ssm():
    return checkpoints.load(CHECKPOINT_DIR / checkpoint_name(TASK, "ssm")).model


def _kind_of(language: str) -> dict[str, str]:
    """The drawn name of each kind → the table's key."""
    kinds = _table()["settings"]["kinds"]
    return {t(f"recurrence.trained.kind.{k}", language=language): k for k in kinds}


def _bars(at, key: str) -> list[dict]:
    return [trace for trace in chart(at, key)["data"] if trace["type"] == "bar"]


def _check_accuracy(at, language: str) -> None:
    table, kind_of = _table(), _kind_of(language)
    drawn = {}
    for task, trace in zip(table["accuracy"], _bars(at, "rr_trained_accuracy"), strict=True):
        values = plotly_array(trace["y"])
        drawn[task] = {kind_of[name]: float(v) for name, v in zip(trace["x"], values, strict=True)}
        expected = {k: v for k, v in table["accuracy"][task].items() if v is not None}
        assert drawn[task] == pytest.approx(expected, abs=1e-12)
    missing = [
        (task, kind)
        for task, row in table["accuracy"].items()
        for kind, v in row.items()
        if v is None
    ]
    words = [
        a
        for a in chart(at, "rr_trained_accuracy")["layout"]["annotations"]
        if a.get("textangle") == -90
    ]
    assert len(words) == len(missing)
    # One checkpoint measured again here: the share of recall markers the SSM stack writes
    # right on the held-out sequences, from its own forward pass.
    batch = TASK.held_out()
    with torch.no_grad():
        predicted = _ssm()(batch.inputs).argmax(dim=-1)
    scored = batch.targets != -100
    accuracy = float((predicted == batch.targets)[scored].float().mean())
    assert drawn["selective_copy"]["ssm"] == pytest.approx(accuracy, abs=5e-5)


def _check_timing(at, language: str) -> None:
    table, kind_of = _table(), _kind_of(language)
    measures = ("training_step_s", "token_whole_prefix_s", "token_carried_state_s")
    lengths = [str(n) for n in table["settings"]["lengths"]]
    bars = _bars(at, "rr_trained_timing")
    assert len(bars) == len(measures) * len(lengths)
    for trace, (measure, length) in zip(
        bars, ((m, n) for m in measures for n in lengths), strict=True
    ):
        for name, ms in zip(trace["x"], plotly_array(trace["y"]), strict=True):
            seconds = table["seconds"][kind_of[name]][length][measure]
            assert ms == pytest.approx(1000 * seconds, rel=1e-12)
        absent = [k for k, row in table["seconds"].items() if row[length][measure] is None]
        assert {kind_of[name] for name in trace["x"]} == set(table["settings"]["kinds"]) - set(
            absent
        )


def _check_reading(at, seq: int, language: str = "en") -> None:
    """The answers drawn for held-out sequence `seq` (0-based) are the model's argmax; the
    mean Δ at its symbols and blanks is softplus(u W_Δ + b_Δ) written out here."""
    model = _ssm()
    batch = TASK.held_out()
    ids, targets = batch.inputs[seq], batch.targets[seq]
    with torch.no_grad():
        logits = model(ids)
    slots = torch.nonzero(targets != -100).flatten()
    expected = torch.softmax(logits[slots].double(), dim=-1).numpy()
    heat, ring = chart(at, "rr_trained_answers")["data"]
    z = plotly_array(heat["z"]).reshape(expected.shape)
    np.testing.assert_allclose(z, expected, atol=1e-5)
    assert list(z.argmax(axis=1)) == logits[slots].argmax(dim=-1).tolist()
    assert ring["x"] == [TASK.vocab[int(w)] for w in targets[slots]]
    right = int((logits[slots].argmax(dim=-1) == targets[slots]).sum())
    metrics = {m.label: m.value for m in at.metric}
    assert (
        metrics[t("recurrence.trained.metric_right", language=language)]
        == f"{right} / {len(slots)}"
    )
    # Δ of the first layer, from the embedded tokens through its first norm.
    block = model.core.blocks[0]
    with torch.no_grad():
        x = F.layer_norm(model.W_in[ids], (model.spec.d_model,), block.ln1.weight, block.ln1.bias)
        ssm = block.mixer
        delta = F.softplus((x @ ssm.W_in) @ ssm.W_delta + ssm.b_delta).double().mean(dim=1)
    symbols = ids < TASK.n_symbols
    blanks = ids == TASK.n_symbols
    shown_symbol = float(metrics[t("recurrence.trained.metric_symbol", language=language)])
    shown_blank = float(metrics[t("recurrence.trained.metric_blank", language=language)])
    assert shown_symbol == pytest.approx(float(delta[symbols].mean()), rel=2e-3)
    assert shown_blank == pytest.approx(float(delta[blanks].mean()), rel=2e-3)
    sequence = " ".join(TASK.vocab[int(i)] for i in ids)
    assert any(sequence in text.value for text in at.text)


@pytest.mark.parametrize("language", list(LANGUAGES))
def test_the_table_and_the_answers_are_the_files_and_the_models_numbers(language):
    at = open_lesson("recurrence", lang=language, rr_part="trained")
    _no_failure(at)
    assert chart_keys(at) == CHARTS
    assert t("recurrence.trained.title", language=language) in [s.value for s in at.subheader]
    _check_accuracy(at, language)
    _check_timing(at, language)
    _check_reading(at, 0, language)
    table = _table()
    about = next(m.value for m in at.markdown if "recurrence_table" in m.value)
    assert "python -m models.training.recurrence_table" in about
    assert table["date"].replace("-", "\\-") in about
    captions = [c.value for c in at.caption]
    assert t("recurrence.trained.sentence_note", language=language) in captions


def test_a_link_with_the_sequence_opens_the_part_on_that_sequence():
    at = open_lesson("recurrence", rr_seq="3")
    _no_failure(at)
    assert chart_keys(at) == CHARTS
    assert at.slider(key="rr_seq").value == 3
    _check_reading(at, 2)
    at.slider(key="rr_seq").set_value(8).run()
    _no_failure(at)
    _check_reading(at, 7)
    far = open_lesson("recurrence", rr_seq="99", lang="zh")
    _no_failure(far)
    assert far.slider(key="rr_seq").value == 8
    _check_reading(far, 7, "zh")


def test_the_sentence_does_not_change_the_charts():
    at = open_lesson("recurrence", rr_part="trained")
    before = {key: chart(at, key) for key in CHARTS}
    at.text_input(key="sentence").set_value(EDITED).run()
    _no_failure(at)
    assert {key: chart(at, key) for key in CHARTS} == before
