"""The grid of every head switched off in turn, past its deadline: the visitor is told in
their language, with a way to ask again, and sees no traceback and no half-drawn grid."""

from __future__ import annotations

import pytest
from conftest import chart, messages, open_lesson

from components.i18n import t
from components.ui.runs import heads as heads_runs
from models.serving import runtime

SENTENCE = "the cat sat on the mat"


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_a_grid_past_its_deadline_says_so_and_is_measured_when_asked_again(lang, monkeypatch):
    heads_runs._every_head_measured.clear()  # measured afresh, not taken from another test
    at = open_lesson("heads", SENTENCE, view="ablation", lang=lang)
    monkeypatch.setattr(runtime, "HEAVY_DEADLINE_S", 0.0)  # past before the first pass
    at.button(key="every_head_go").click().run()
    assert not at.exception, [e.value for e in at.exception]
    told = t("heads.effect_unfinished", language=lang, seconds=0.0, done=0, total=72)
    assert told in messages(at)
    with pytest.raises(AssertionError):
        chart(at, "every_head_effect")
    monkeypatch.setattr(runtime, "HEAVY_DEADLINE_S", 60.0)
    at.button(key="every_head_retry").click().run()
    assert chart(at, "every_head_effect")
    assert told not in messages(at)
