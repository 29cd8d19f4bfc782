"""Every chart of every lesson says in one line what it shows, in the page's language,
and offers the numbers behind it, as CSV or JSON (the format chosen in the sidebar).

The lessons come from components.lessons.LESSONS, so a lesson added later is held to
this as soon as it is registered.
"""

from __future__ import annotations

import re

import pytest
from conftest import every_tab, open_lesson
from streamlit.testing.v1.element_tree import Block, Caption, DownloadButton, UnknownElement

CJK = re.compile(r"[\u4e00-\u9fff]")
SENTENCE = "The animal didn't cross the street because it was too tired"


def _walk(node):
    children = getattr(node, "children", None) or {}
    siblings = list(children.values())
    for index, child in enumerate(siblings):
        yield child, siblings, index
        yield from _walk(child)


def chart_furniture(at) -> dict[str, tuple[str | None, set[str]]]:
    """Each chart's key (plotly or grid) → (the summary drawn under it, the download files
    beside it)."""
    found = {}
    for node, siblings, index in _walk(at._tree):
        if not isinstance(node, UnknownElement):
            continue
        grid = node.type == "bidi_component" and node.proto.component_name == "seqlens_grid"
        if node.type != "plotly_chart" and not grid:
            continue
        key = node.proto.id.rsplit("-", 1)[-1]
        summary, files = None, set()
        below = siblings[index + 1] if index + 1 < len(siblings) else None
        if isinstance(below, Block):
            for item, _, _ in _walk(below):
                if isinstance(item, Caption):
                    summary = item.value
                elif isinstance(item, DownloadButton):
                    files.add(item.proto.id.rsplit("-", 1)[-1])
        found[key] = (summary, files)
    return found


@pytest.mark.parametrize("language", ["en", "zh"])
def test_every_chart_has_a_summary_and_its_numbers_to_download(lesson_path, language):
    charts = {}
    for at in every_tab(lesson_path, SENTENCE, lang=language):
        assert not at.exception, [e.value for e in at.exception]
        charts.update(chart_furniture(at))
    assert charts, f"{lesson_path} draws no chart"
    for key, (summary, files) in charts.items():
        assert summary and summary.strip(), f"{lesson_path}: chart {key} has no summary"
        # Computed from the chart's numbers: it quotes at least one of them.
        assert re.search(r"\d", summary), f"{lesson_path}: {key}: {summary!r}"
        if language == "zh":
            assert CJK.search(summary), f"{lesson_path}: {key} is summarised in English"
        assert files == {f"{key}.csv"}, f"{lesson_path}: chart {key}: {files}"


def test_the_data_format_chosen_in_the_sidebar_is_every_chart_s(lesson_path):
    at = open_lesson(lesson_path, SENTENCE)
    at.button_group(key="data_format").set_value("json").run()
    assert not at.exception, [e.value for e in at.exception]
    charts = chart_furniture(at)
    assert charts
    for key, (_, files) in charts.items():
        assert files == {f"{key}.json"}, f"{lesson_path}: chart {key}: {files}"
