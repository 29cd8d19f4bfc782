"""Two visitors' grids of every head switched off hold no page slot: a third visitor's
page still runs while both grids are being measured (components/heads_runs.py
every_head_run, models/serving/runtime.py heavy_work). Before, each grid held one of the two
page slots for its whole 3-4 s, and every other visitor's rerun waited behind them. The
masks lesson's measurements a slider keys (1-5 s each) hold none either.

Order and state only, observed with events; the waits are hang guards.
"""

from __future__ import annotations

import threading

import numpy as np

from components.ui.runs import heads as heads_runs
from models.analysis import ablation
from models.serving import runtime

HANG_S = 10
# Long enough for a page stuck behind the grids to show as stuck, yet a bound.
THIRD_PAGE_LIMIT_S = 5


class _Model:
    def tokenize(self, text):
        return text


def test_a_third_page_runs_while_two_visitors_grids_are_measured(monkeypatch):
    measuring, release = [], threading.Event()
    lock = threading.Lock()

    def slow_grid(model, tokenized, **_):  # stands in for seconds of torch
        with lock:
            measuring.append(tokenized)
        assert release.wait(HANG_S)
        return np.zeros((1, 1))

    monkeypatch.setattr(ablation, "every_head_effect", slow_grid)
    monkeypatch.setattr(heads_runs, "attention_model", lambda key: _Model())
    heavy_waiting = getattr(runtime, "HEAVY_SLOTS", None)

    def grid_page(text):
        with runtime.runs_in_turn():
            heads_runs.every_head_run("grid-test", text)

    grids = [threading.Thread(target=grid_page, args=(f"s{n}",), daemon=True) for n in range(2)]
    try:
        for thread in grids:
            thread.start()
        # Both grids are under way: measured side by side, or one waiting for its turn.
        woken = threading.Event()
        for _ in range(HANG_S * 100):
            if len(measuring) == 2 or (
                measuring and heavy_waiting is not None and heavy_waiting.waiting() == 1
            ):
                break
            woken.wait(0.01)
        third_ran = threading.Event()

        def third_page():
            with runtime.runs_in_turn():
                third_ran.set()

        threading.Thread(target=third_page, daemon=True).start()
        ran_while_grids_measured = third_ran.wait(THIRD_PAGE_LIMIT_S)
    finally:
        release.set()
        for thread in grids:
            thread.join(HANG_S)
    assert ran_while_grids_measured, "the third page waited for the two grids"


def test_a_masks_measurement_a_slider_keys_holds_no_page_slot(monkeypatch):
    from components.ui.runs import masks as masks_runs
    from models.analysis import scaling

    measuring, release = threading.Event(), threading.Event()

    def slow_sharpness(n_keys):  # stands in for seconds of torch
        measuring.set()
        assert release.wait(HANG_S)
        return {"n_keys": n_keys}

    monkeypatch.setattr(scaling, "softmax_sharpness", slow_sharpness)
    masks_runs._sharpness_lab.clear()

    def masks_page():
        with runtime.runs_in_turn():
            masks_runs.sharpness_lab(7)

    page = threading.Thread(target=masks_page, daemon=True)
    page.start()
    try:
        assert measuring.wait(HANG_S)
        held_while_measuring = runtime.PAGE_SLOTS.holding()
    finally:
        release.set()
        page.join(HANG_S)
    assert held_while_measuring == 0
