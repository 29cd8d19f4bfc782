"""The training lab in the app: a very short run, live curves, stop, the measured tables in
their tabs."""

from __future__ import annotations

import json
import time

import numpy as np
import pytest
from conftest import chart, chart_keys, messages, open_lesson, plotly_array

from components.i18n import t
from components.ui.client import SESSION_KEY
from components.ui.runs.shared import load_job_manager, load_visitor_store
from models.training.job_limits import Refused, Requester
from models.training.jobs import RunRequest
from models.training.train import CHECKPOINT_DIR, COPY_LAG_FILE

WAIT = 240  # seconds: the machine is shared; a 10-step run takes about one


def _run_until(at, done, timeout: float = WAIT):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        at.run()
        if done(at):
            return at
        time.sleep(0.5)
    raise AssertionError(f"not reached in {timeout} s: {messages(at)}")


def _finished(at) -> bool:
    return any(el.value.startswith(("Finished", "Stopped")) for el in at.success)


def test_a_short_run_trains_models_side_by_side_and_saves_them():
    at = open_lesson("training", tr_task="copy", tr_lag="5", tr_steps="10", tr_seed="1")
    assert not at.exception
    at.multiselect(key="tr_models_copy").set_value(["rnn", "transformer"])
    at.button(key="tr_start").click().run()
    _run_until(at, _finished)
    assert not at.exception
    assert any("10 steps" in el.value for el in at.success)
    loss = chart(at, "tr_loss")
    assert [trace["name"] for trace in loss["data"]] == ["RNN", "Transformer"]
    for trace in loss["data"]:
        assert list(plotly_array(trace["x"])) == list(range(1, 11))
        assert np.isfinite(plotly_array(trace["y"])).all()
    assert {trace["name"] for trace in chart(at, "tr_score")["data"]} == {"RNN", "Transformer"}
    # The worker marks the run finished, then saves its models (models/training/jobs.py):
    # on a busy machine the page can show "Finished" a moment before they are in the store.
    visitor = at.session_state["visitor_id"]
    _run_until(at, lambda at: len(load_visitor_store().list(visitor)) >= 2)
    saved = load_visitor_store().list(visitor)
    assert sorted(m.kind for m in saved) == ["rnn", "transformer"]
    assert all(m.task == {"name": "copy", "lag": 5, "length": 5, "n_symbols": 8} for m in saved)


def test_a_long_run_can_be_stopped():
    at = open_lesson("training", tr_task="reverse", tr_steps="1500")
    at.multiselect(key="tr_models_reverse").set_value(["gru"])
    at.button(key="tr_start").click().run()
    _run_until(at, lambda at: any(b.key == "tr_stop" for b in at.button))
    at.button(key="tr_stop").click().run()
    _run_until(at, _finished)
    stopped = [el.value for el in at.success if el.value.startswith("Stopped")]
    assert stopped and "1500 steps" not in stopped[0]


def test_a_run_past_the_clients_limit_is_refused_with_why_in_the_visitors_language():
    manager = load_job_manager()
    held = []
    try:
        # Other sessions from this machine, the same client, fill its share of runs.
        with pytest.raises(Refused):
            for i in range(manager.limits.per_client + 1):
                request = RunRequest({"name": "reverse"}, ("gru",), steps=1500)
                held.append(manager.submit(Requester(f"other-{i}", None, "0" * 32), request))
        at = open_lesson("training", lang="zh", tr_steps="10")
        at.button(key="tr_start").click().run()
        expected = t("training.refused.client_runs", "zh", allowed=manager.limits.per_client)
        assert expected in [el.value for el in at.error], messages(at)
        assert not at.exception
    finally:
        for job in held:
            manager.stop(job.id, job.requester.session)


def test_the_accuracy_by_lag_chart_shows_the_shipped_table():
    at = open_lesson("training", tr_part="lag")
    table = json.loads((CHECKPOINT_DIR / COPY_LAG_FILE).read_text())
    figure = chart(at, "tr_lag_accuracy")
    names = {"rnn": "RNN", "lstm": "LSTM", "gru": "GRU", "transformer": "Transformer"}
    for kind, row in table["accuracy"].items():
        trace = next(tr for tr in figure["data"] if tr["name"] == names[kind])
        assert list(plotly_array(trace["x"])) == table["lags"]
        np.testing.assert_allclose(plotly_array(trace["y"]), [row[str(g)] for g in table["lags"]])
    # The other measured results, each in its own tab, opened by its link.
    for part, keys in (
        ("ngram", ("tr_ngram_unseen", "tr_perplexity", "tr_ngram_next")),
        ("heads", ("tr_heads",)),
        ("yours", ("tr_yours",)),
    ):
        opened = open_lesson("training", tr_part=part)
        for key in keys:
            assert chart(opened, key)["data"]


def test_the_baseline_and_lag_captions_quote_the_shipped_tables():
    shown = [open_lesson("training", tr_part="lag"), open_lesson("training", tr_part="ngram")]
    captions = " ".join(el.value for at in shown for el in at.caption)
    lags = json.loads((CHECKPOINT_DIR / COPY_LAG_FILE).read_text())["accuracy"]
    assert (
        f"At lag 20 the plain RNN scores {lags['rnn']['20']:.0%}, "
        f"the LSTM {lags['lstm']['20']:.0%} and the Transformer {lags['transformer']['20']:.0%}."
    ) in captions
    baseline = json.loads((CHECKPOINT_DIR / "lm_baseline.json").read_text())
    ngram = baseline["ngram_perplexity"]
    best = int(np.argmin(ngram))
    assert ngram[best + 1] > ngram[best]  # "rises for longer n-grams"
    assert f"lowest at n = {baseline['orders'][best]} ({ngram[best]:.1f})" in captions
    names = {"rnn": "RNN", "lstm": "LSTM", "gru": "GRU", "transformer": "Transformer"}
    neural = baseline["neural_perplexity"]
    low, high = min(neural, key=neural.get), max(neural, key=neural.get)
    shown = f"from {neural[low]:.1f} ({names[low]}) to {neural[high]:.1f} ({names[high]})"
    assert shown in captions
    assert "overfit" not in captions  # never measured here


def test_the_page_speaks_chinese():
    at = open_lesson("training", lang="zh")
    assert not at.exception
    assert any("训练实验室" in el.value for el in at.header)


def test_the_induction_heads_are_named_with_the_scores_measured_from_the_shipped_file():
    from models.analysis.probes import circuit, head_scores
    from models.training import checkpoints
    from models.training.tasks import make_task
    from models.training.train import checkpoint_name

    task = make_task("induction")
    loaded = checkpoints.load(CHECKPOINT_DIR / checkpoint_name(task, "transformer"))
    scores = head_scores(loaded.model, task)
    best = circuit(scores)
    (i_layer, i_head, i_score), (p_layer, p_head, p_score) = (
        best["induction"],
        best["previous_token"],
    )
    at = open_lesson("training", tr_part="heads")
    captions = " ".join(el.value for el in at.caption)
    assert f"layer {p_layer} head {p_head} puts {p_score:.2f} of its attention" in captions
    assert f"layer {i_layer} head {i_head} puts {i_score:.2f} on the token after" in captions
    assert f"{loaded.metrics['accuracy']:.1%}" in captions
    assert "always starts at position" not in captions  # the shortcut story is gone
    figure = chart(at, "tr_heads")
    for trace, name in zip(figure["data"], ("induction", "previous_token"), strict=True):
        np.testing.assert_allclose(plotly_array(trace["z"]), scores[name], atol=1e-6)


@pytest.mark.parametrize("named", ["heads", "Induction heads", "归纳头"])
def test_a_link_opens_the_induction_heads_tab_above_the_run(named):
    """By the tab's name or its label in either language; the run stays drawn below it."""
    at = open_lesson("training", tr_part=named)
    assert not at.exception, [e.value for e in at.exception]
    assert at.session_state["tr_part"] == "Induction heads"
    assert chart(at, "tr_heads")["data"]
    others = {"tr_lag_accuracy", "tr_ngram_unseen", "tr_perplexity", "tr_ngram_next", "tr_yours"}
    assert not chart_keys(at) & others
    # The run's controls, start button and panel: drawn whatever tab is open.
    assert at.selectbox(key="tr_task").value == "copy"
    assert at.button(key="tr_start")
    assert t("training.idle", "en") in [el.value for el in at.info]
    assert t("training.mine.title", "en") in [el.value for el in at.subheader]


def test_a_link_that_sets_only_the_runs_controls_opens_the_first_tab_on_them():
    """The run's controls are below the tabs and open none: a link made before the tabs
    (`?tr_task=lm`, typed by a teacher) sets the run and opens the first tab, the n-gram
    baseline on the visitor's sentence."""
    at = open_lesson("training", tr_task="lm", tr_steps="50")
    assert not at.exception, [e.value for e in at.exception]
    assert at.session_state["tr_task"] == "lm" and at.session_state["tr_steps"] == 50
    assert at.session_state["tr_part"] == "The n-gram baseline"
    assert chart(at, "tr_ngram_unseen")["data"]
    assert not chart_keys(at) & {"tr_lag_accuracy", "tr_heads", "tr_yours"}


def test_a_nearly_full_disk_is_named_in_the_visitor_s_language(monkeypatch):
    from models.serving import visitor_store

    free = type("Usage", (), {"free": 100 * 2**20})()
    monkeypatch.setattr(visitor_store.shutil, "disk_usage", lambda _: free)
    at = open_lesson("training")
    assert not at.exception
    assert any("disk is nearly full (100 MB free" in m for m in messages(at))
    at = open_lesson("training", lang="zh")
    assert not at.exception
    assert any("磁盘快满了（剩余 100 MB" in m for m in messages(at))


def test_another_lesson_shows_the_running_run_and_keeps_it_going():
    at = open_lesson("training", tr_task="reverse", tr_steps="1500")
    at.multiselect(key="tr_models_reverse").set_value(["gru"])
    at.button(key="tr_start").click().run()
    manager = load_job_manager()
    job_id, session = at.session_state["training_job"], at.session_state[SESSION_KEY]
    try:
        _run_until(at, lambda at: manager.snapshot(job_id).status == "running")
        at.switch_page("pages/positional.py").run()
        asked_before = manager._jobs[job_id].last_seen
        time.sleep(0.05)
        at.run()  # the visitor reads another lesson while the run trains
        assert not at.exception
        assert manager._jobs[job_id].last_seen > asked_before  # this page asked: still wanted
        shown = [el.proto.text for el in at.sidebar.get("progress")]
        view = manager.snapshot(job_id)
        assert view.status == "running", view
        assert shown and shown[0].startswith("Your training run: step "), shown
        assert shown[0].endswith(f" of {view.total}")
    finally:
        manager.stop(job_id, session)
