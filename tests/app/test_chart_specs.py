"""What the browser gets for every chart of every lesson, in both languages, is the JSON
of plotly's own checked figure: the fast path (components/figure.py) through the
pinned Streamlit's `st.plotly_chart` changes no chart. (Grid charts, components/grid.py,
are not plotly's: tests/unit/test_attention_figures.py.)"""

from __future__ import annotations

import pytest
from conftest import chart_specs, every_tab, grid_specs

from components.figure import PlainFigure

SENTENCE = "The cat sat on the mat because it was warm"


@pytest.mark.parametrize("language", ["en", "zh"])
def test_every_chart_sent_is_plotly_s_checked_figure(lesson_path, language, monkeypatch):
    for at in every_tab(lesson_path, SENTENCE, lang=language):
        shown: list[PlainFigure] = []
        original = PlainFigure.to_plotly_json

        def recording(self, shown=shown, original=original):
            shown.append(self)
            return original(self)

        monkeypatch.setattr(PlainFigure, "to_plotly_json", recording)
        at.run()
        monkeypatch.undo()
        assert not at.exception, [e.value for e in at.exception]
        sent = chart_specs(at)
        assert sent or grid_specs(at), "the lesson drew no chart"
        assert len(sent) == len(shown)
        for spec, fig in zip(sent, shown, strict=True):
            assert spec == fig.json_pair()[1]
