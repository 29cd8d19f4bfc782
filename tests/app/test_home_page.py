"""The home page: the story of the field and a table whose every cell is measured."""

from __future__ import annotations

import json
from urllib.parse import parse_qs

import pytest
from conftest import chart, open_home, open_lesson
from streamlit.testing.v1 import AppTest

from components.i18n import strings, using_language
from components.lessons import LESSONS
from components.lineage import CLASS_TOUR, COLUMNS, cells, lesson_for
from components.tours import schema
from components.tours.probes import PROBES, Probe
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


# --- the choice: the class tour, or the lessons freely, each with its own tour -------------


def _both(en: str, zh: str) -> dict[str, str]:
    return {"en": en, "zh": zh}


def _step(lesson: str, part: str, title: str, zh: str, **extra) -> dict:
    return {
        "lesson": lesson,
        "part": part,
        "title": _both(title, zh),
        "text": _both(f"What {title} shows.", f"{zh}展示什么。"),
        **extra,
    }


def _question() -> dict:
    return {
        "kind": "choice",
        "ask": _both("Which one?", "哪一个？"),
        "probe": "home.sample",
        "options": {"en": ["this", "that"], "zh": ["这个", "那个"]},
        "reveal": _both("It is {answer}.", "是{answer}。"),
    }


# The tests' own tour files: a class tour across four lessons (2 questions, 1 task) and the
# tours of two lessons; the other three lessons have none.
SAMPLE_TOURS = {
    CLASS_TOUR: {
        "minutes": 45,
        "title": _both("Sample class tour", "示例课堂导览"),
        "blurb": _both("Across the lessons.", "走遍各节课。"),
        "steps": [
            _step("training", "ngram", "Counting", "计数", set={"tr_task": "lm"}),
            _step("recurrent", "theory", "Fading", "消失", question=_question()),
            _step("heads", "statistics", "Heads", "注意力头", question=_question()),
            _step(
                "masks",
                "masks",
                "Masks",
                "掩码",
                task={"do": _both("Do it.", "做一下。"), "check": "home.sample"},
            ),
            _step("recurrent", "gates", "Gates", "门"),
        ],
    },
    "recurrent": {
        "lesson": "recurrent",
        "minutes": 8,
        "title": _both("Sample recurrent tour", "示例循环网络导览"),
        "blurb": _both("Why an RNN forgets.", "RNN 为什么会遗忘。"),
        "steps": [
            _step("recurrent", "distance", "Distance", "距离", set={"rc_length": "40"}),
            _step("recurrent", "clipping", "Clipping", "裁剪", question=_question()),
        ],
    },
    "heads": {
        "lesson": "heads",
        "minutes": 10,
        "title": _both("Sample heads tour", "示例注意力头导览"),
        "blurb": _both("What heads look at.", "注意力头在看什么。"),
        "steps": [_step("heads", "ablation", "Off", "关掉", set={"layer": "3", "head": "1"})],
    },
}


@pytest.fixture
def sample_tours(tmp_path, monkeypatch):
    """The app reads SAMPLE_TOURS as its tour files (and a probe they name), then forgets them."""
    for tour_id, body in SAMPLE_TOURS.items():
        (tmp_path / f"{tour_id}.json").write_text(
            json.dumps({"id": tour_id, **body}, ensure_ascii=False), encoding="utf-8"
        )
    monkeypatch.setattr(schema, "TOURS_DIR", tmp_path)
    monkeypatch.setitem(PROBES, "home.sample", Probe("home.sample", _never, ("home.sample",)))
    schema.tours.cache_clear()
    yield
    schema.tours.cache_clear()


def _never(live):
    raise AssertionError("the home page runs no probe")


def start_links(at: AppTest) -> dict[str, tuple[str, dict[str, list[str]]]]:
    """Every link on the page to a tour: label → (page, query)."""
    links = {}
    for el in at.get("page_link"):
        query = parse_qs(el.proto.query_string)
        if "tour" in query:
            links[el.proto.label] = (el.proto.page.strip("/"), query)
    return links


def subheaders(at: AppTest) -> list[str]:
    return [el.value for el in at.subheader]


@pytest.mark.parametrize("language", ["en", "zh"])
def test_the_page_offers_the_class_tour_and_free_exploring_before_anything_else(
    sample_tours, language
):
    at = open_home(lang=language)
    text = strings(language)
    # The two choices are the page's first sections, the class tour first.
    assert subheaders(at)[:2] == [
        text["home.choice.tour"].format(minutes=45),
        text["home.choice.free"],
    ]
    shown = drawn_markdown(at) + [el.value for el in at.caption]
    title, blurb = SAMPLE_TOURS[CLASS_TOUR]["title"], SAMPLE_TOURS[CLASS_TOUR]["blurb"]
    colon = ": " if language == "en" else "："
    assert f"**{title[language]}**{colon}{blurb[language]}" in shown
    # What it covers at a glance, counted from the file: 5 steps, 2 questions, 1 task, and
    # the lessons its steps open, in its order.
    facts = {
        "en": "45 min · 5 steps · 2 questions · 1 task · "
        "Training lab → Recurrent networks → Attention heads → Masks, step by step",
        "zh": "45 分钟 · 5 步 · 2 个问题 · 1 项任务 · "
        "训练实验室 → 循环神经网络 → 注意力头 → 掩码与逐步注意力",
    }
    assert facts[language] in shown
    steps = [line for text_ in drawn_markdown(at) for line in text_.split("\n")]
    first = {
        "en": "1. Counting (Training lab · The n-gram baseline)",
        "zh": "1. 计数（训练实验室 · " + strings("zh")["training.part.ngram"] + "）",
    }
    assert first[language] in steps
    assert any(line.startswith("5. ") for line in steps)


@pytest.mark.parametrize("language", ["en", "zh"])
def test_each_tour_link_opens_its_first_step_with_its_part_and_controls(sample_tours, language):
    at = open_home(lang=language)
    text = strings(language)
    links = start_links(at)
    expected = {
        f"**{text['home.choice.start']}**": (
            "training",
            {"tour": [CLASS_TOUR], "step": ["1"], "tr_part": ["ngram"], "tr_task": ["lm"]},
        ),
        text["home.tour.take"].format(minutes=8): (
            "recurrent",
            {"tour": ["recurrent"], "step": ["1"], "rc_part": ["distance"], "rc_length": ["40"]},
        ),
        text["home.tour.take"].format(minutes=10): (
            "heads",
            {"tour": ["heads"], "step": ["1"], "view": ["ablation"], "layer": ["3"], "head": ["1"]},
        ),
    }
    for _, query in expected.values():  # the link keeps the language, as every link does
        query["lang"] = [language]
    assert {
        label: (page, {k: v for k, v in q.items() if k != "sentence"})
        for label, (page, q) in links.items()
    } == expected


def test_a_lesson_without_a_tour_offers_only_the_lesson(sample_tours):
    """Under the two choices, in order: the class tour, then each lesson followed by its
    own tour where it has one (the samples: recurrent and heads)."""
    at = open_home()
    drawn = [
        (link.page.strip("/"), parse_qs(link.query_string).get("tour", [""])[0])
        for link in links_in(at, "choice")
    ]
    assert drawn == [
        ("training", CLASS_TOUR),
        ("recurrent", ""),
        ("recurrent", "recurrent"),
        ("heads", ""),
        ("heads", "heads"),
        ("positional", ""),
        ("masks", ""),
        ("recurrence", ""),
        ("training", ""),
    ]


def test_a_tour_link_keeps_the_sentence_and_the_presenter_mode(sample_tours):
    at = open_home(sentence="My cat sat on the warm laptop", present="1")
    for page, query in start_links(at).values():
        assert query["sentence"] == ["My cat sat on the warm laptop"], page
        assert query["present"] == ["1"], page


def test_the_class_tour_link_lands_on_its_first_step(sample_tours):
    at = open_home()
    ((page, query),) = [
        link
        for label, link in start_links(at).items()
        if label == f"**{strings('en')['home.choice.start']}**"
    ]
    lesson = open_lesson(page, **{key: values[-1] for key, values in query.items()})
    assert not lesson.exception, [e.value for e in lesson.exception]
    assert lesson.session_state["tr_task"] == "lm"
    shown = [el.value for el in lesson.markdown] + [el.value for el in lesson.caption]
    steps = len(SAMPLE_TOURS[CLASS_TOUR]["steps"])
    assert any(strings("en")["tour.step_of"].format(step=1, steps=steps) in s for s in shown)


def test_without_tour_files_the_page_still_offers_every_lesson(tmp_path, monkeypatch):
    monkeypatch.setattr(schema, "TOURS_DIR", tmp_path)
    schema.tours.cache_clear()
    try:
        at = open_home()
    finally:
        schema.tours.cache_clear()
    assert start_links(at) == {}
    assert strings("en")["home.choice.free"] in subheaders(at)
    labels = [el.proto.label for el in at.get("page_link")]
    assert all(strings("en")[lesson.title_key] in labels for lesson in LESSONS)


# --- the road: the menu, the lesson list and the stage cards in one order -------------------

ROAD = ["recurrent", "heads", "positional", "masks", "recurrence", "training"]


@pytest.mark.parametrize("language", ["en", "zh"])
def test_the_menu_follows_the_road_from_rnns_to_attention(language):
    """The pages as the app gave them to st.navigation, in the menu's order (AppTest keeps
    the registered menu in `_registered_pages`, an ordered dict)."""
    at = open_home(lang=language)
    menu = [(page["url_pathname"], page["page_name"]) for page in at._registered_pages.values()]
    text = strings(language)
    assert menu == [("", text["nav.home"])] + [(path, text[f"nav.{path}"]) for path in ROAD]


def links_in(at: AppTest, key: str) -> list:
    """The page links inside the page's container of this key, in the order drawn."""

    def find(node):
        for child in getattr(node, "children", {}).values():
            if getattr(child, "proto", None) is not None and str(
                getattr(child.proto, "id", "")
            ).endswith(f"-{key}"):
                return child
            found = find(child)
            if found is not None:
                return found
        return None

    block = find(at.main)
    assert block is not None, key
    return [el.proto for el in block.get("page_link")]


@pytest.mark.parametrize("language", ["en", "zh"])
def test_the_home_page_lists_the_lessons_in_the_menus_order(language):
    at = open_home(lang=language)
    text = strings(language)
    titles = {text[lesson.title_key]: lesson.url_path for lesson in LESSONS}
    for key in ("choice", "lessons"):  # under "explore freely", and with their descriptions
        lessons = [link for link in links_in(at, key) if "tour=" not in link.query_string]
        assert [titles[link.label] for link in lessons] == ROAD, key
        assert [link.page.strip("/") for link in lessons] == ROAD, key


@pytest.mark.parametrize("language", ["en", "zh"])
def test_each_stage_card_opens_its_lesson_in_the_menus_order(language):
    at = open_home(lang=language)
    text = strings(language)
    cards = links_in(at, "story")
    assert [card.page.strip("/") for card in cards] == [
        "training",
        "recurrent",
        "recurrent",
        "heads",
        "positional",
        "masks",
    ]
    ngram, *others = cards
    # The n-gram has no lesson of its own: its card opens the training lab's n-gram part.
    assert ngram.label == f"{text['nav.training']} · {text['training.part.ngram']}"
    assert parse_qs(ngram.query_string) == {"tr_task": ["lm"], "tr_part": ["ngram"]}
    assert [card.label for card in others] == [
        text["nav.recurrent"],
        text["nav.recurrent"],
        text["nav.heads"],
        text["nav.positional"],
        text["nav.masks"],
    ]
    assert all(card.query_string == "" for card in others)
