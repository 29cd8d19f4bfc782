"""A click on a grid chart's cell sets the page's controls, only to a cell the chart has."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from components.ui import charts

PICKS = (("layer", 6), ("head", 12))


@pytest.fixture
def state(monkeypatch) -> dict:
    session = {"layer": 3, "head": 1}
    monkeypatch.setattr(charts, "st", SimpleNamespace(session_state=session))
    return session


def click(state: dict, value) -> dict:
    state["all_heads"] = {"pick": value}
    charts._set_picked("all_heads", PICKS)
    return {name: state[name] for name, _ in PICKS}


def test_a_clicked_head_becomes_the_chosen_layer_and_head(state):
    assert click(state, [5, 10]) == {"layer": 5, "head": 10}
    assert click(state, [0, 0]) == {"layer": 0, "head": 0}


@pytest.mark.parametrize(
    "forged",
    [[6, 0], [0, 12], [-1, 2], [1.0, 2], [True, 2], ["1", "2"], [1], [1, 2, 3], None, "1,2"],
)
def test_a_cell_the_chart_does_not_have_changes_nothing(state, forged):
    assert click(state, forged) == {"layer": 3, "head": 1}
