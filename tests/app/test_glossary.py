"""The glossary in the frame's top bar: on every lesson, in both languages, a popover that
lists exactly the lesson's terms with their definitions (on the home page, every term)."""

from __future__ import annotations

import json
import re

import pytest
from conftest import ROOT, open_home, open_lesson
from streamlit.testing.v1.element_tree import Block, Markdown

from components.glossary import LESSON_TERMS, TERMS
from components.labels import markdown_literal

CJK = re.compile(r"[\u4e00-\u9fff]")


def strings(language: str) -> dict[str, str]:
    """The glossary's strings as shipped, read from the file itself."""
    path = ROOT / "assets" / "i18n" / language / "glossary.json"
    return json.loads(path.read_text(encoding="utf-8"))


def glossary(at) -> tuple[str, str]:
    """The glossary popover's label and the markdown it lists the terms in."""

    def walk(node):
        for child in (getattr(node, "children", None) or {}).values():
            yield child
            yield from walk(child)

    popovers = [
        node for node in walk(at._tree) if isinstance(node, Block) and node.type == "popover"
    ]
    assert len(popovers) == 1, "one glossary on the page"
    (popover,) = popovers
    bodies = [node.value for node in walk(popover) if type(node) is Markdown]  # not captions
    assert len(bodies) == 1
    return popover.proto.popover.label, bodies[0]


def listed_terms(body: str, language: str) -> list[str]:
    """Which terms the glossary lists, in order, recognised by their shipped name and
    definition (each shown exactly as written)."""
    shipped = strings(language)
    found = []
    for paragraph in body.split("\n\n"):
        for term in TERMS:
            name = markdown_literal(shipped[f"glossary.name.{term}"])
            text = markdown_literal(shipped[f"glossary.text.{term}"])
            if f"**{name}**" in paragraph and paragraph.endswith(text):
                found.append(term)
    return found


@pytest.mark.parametrize("language", ["en", "zh"])
def test_each_lesson_lists_its_own_terms_in_the_pages_language(lesson_path, language):
    at = open_lesson(lesson_path, "The cat sat on the mat", lang=language)
    assert not at.exception, [e.value for e in at.exception]
    label, body = glossary(at)
    assert label == strings(language)["glossary.button"]
    assert listed_terms(body, language) == list(LESSON_TERMS[lesson_path])
    assert bool(CJK.search(body)) == (language == "zh")


@pytest.mark.parametrize("language", ["en", "zh"])
def test_the_home_page_lists_every_term(language):
    at = open_home(lang=language)
    label, body = glossary(at)
    assert label == strings(language)["glossary.button"]
    assert listed_terms(body, language) == list(TERMS)


def test_the_glossary_follows_a_change_of_language_and_stays_in_presenter_mode():
    at = open_lesson("recurrent", "The cat sat on the mat", present="1")
    assert listed_terms(glossary(at)[1], "en") == list(LESSON_TERMS["recurrent"])
    at.segmented_control(key="lang").set_value("zh").run()
    assert not at.exception, [e.value for e in at.exception]
    label, body = glossary(at)
    assert label == strings("zh")["glossary.button"]
    assert listed_terms(body, "zh") == list(LESSON_TERMS["recurrent"])
    assert "Backpropagation" not in body and "随时间反向传播" in body
