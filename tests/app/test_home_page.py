"""The home page: the story of the field and a table whose every cell is measured."""

from __future__ import annotations

from urllib.parse import parse_qs

import pytest
from conftest import chart, open_home, open_lesson
from streamlit.testing.v1 import AppTest

from components.i18n import strings, using_language
from components.lineage import COLUMNS, cells, lesson_for
from components.ui.runs import home as home_runs
from models.analysis.lineage import ARCHITECTURES, LENGTHS, Measured


def drawn_markdown(at: AppTest) -> list[str]:
    return [el.value for el in at.markdown]


def row_links(at: AppTest) -> list[str]:
    return [el.proto.label for el in at.get("page_link")]


def fake(architecture: str, seed: int) -> Measured:
    """Numbers no real model gives, so each can only reach the page from the measurement."""
    return Measured(
        architecture=architecture,
        depth=tuple(90_000 + seed * 10 + i for i in range(len(LENGTHS))),
        seconds=tuple(7.77 + seed + i for i in range(len(LENGTHS))),
        reach=0.000123 * (seed + 1),
        sees_later=float(seed % 2),
        memory=tuple(3_000_000 * (seed + 1) + i for i in range(len(LENGTHS))),
        reach_float64=0.000123 * (seed + 1),
        sees_later_float64=float(seed % 2),
    )


@pytest.mark.parametrize("language", ["en", "zh"])
def test_every_cell_shows_what_the_measurement_returned(monkeypatch, language):
    rows = [fake(name, i) for i, name in enumerate(ARCHITECTURES)]
    monkeypatch.setattr(home_runs, "_cached_lineage", lambda: rows)
    at = open_home(lang=language)
    shown = drawn_markdown(at)
    with using_language(language):
        for row in rows:
            for column in COLUMNS:
                assert cells(row)[column] in shown, (row.architecture, column)
    assert "90000 → 90001" in shown  # the fake depth of the first row, as drawn


def test_the_real_table_matches_the_measurements_and_links_each_row_to_its_lesson():
    at = open_home()
    measured = home_runs._cached_lineage()  # the same cached measurements the page drew
    assert [m.architecture for m in measured] == list(ARCHITECTURES)
    shown = drawn_markdown(at)
    for row in measured:
        for column in COLUMNS:
            assert cells(row)[column] in shown
    english = strings("en")
    links = row_links(at)
    for architecture in ARCHITECTURES:
        assert lesson_for(architecture) is not None, architecture  # every lesson exists
        assert english[f"home.row.{architecture}"] in links, architecture


def test_the_ngram_row_opens_the_training_lab_on_the_language_modelling_task():
    """The n-gram baseline is shown beside the language models it is measured against: the
    link chooses their task and opens the baseline's tab."""
    at = open_home()
    label = strings("en")["home.row.ngram"]
    (link,) = [el.proto for el in at.get("page_link") if el.proto.label == label]
    assert link.page.strip("/") == "training"
    query = {key: values[-1] for key, values in parse_qs(link.query_string).items()}
    assert query == {"tr_task": "lm", "tr_part": "ngram"}
    # The link's parameters, opened as a visitor's click opens them, choose that task.
    lab = open_lesson("training", **query)
    assert not lab.exception, [e.value for e in lab.exception]
    assert lab.session_state["tr_task"] == "lm"
    assert chart(lab, "tr_perplexity")["data"]  # the n-gram baseline beside the models


def test_the_story_names_every_stage_in_chinese():
    at = open_home(lang="zh")
    zh = strings("zh")
    shown = drawn_markdown(at) + [el.value for el in at.caption]
    for stage in ("ngram", "rnn", "lstm", "attention", "transformer", "bert_gpt"):
        assert f"**{zh[f'home.stage.{stage}.name']}**" in shown
        assert zh[f"home.stage.{stage}.text"] in shown
