"""Every part of every lesson, in both languages: it answers the default sentence, an edited
one, an empty box, hostile text and a very long text with the right words and no failure,
and stays the part the link opened.

The parts come from the lessons' tabs (conftest.OTHER_TABS): a part added to a lesson is
covered once its link is listed there.
"""

from __future__ import annotations

import pytest
from conftest import OTHER_TABS, chart_keys, messages, open_lesson

from components.i18n import LANGUAGES, t
from components.lessons import LESSONS
from models.text import MAX_CHARS

DEFAULT = "The animal didn't cross the street because it was too tired"
EDITED = "The giraffe ate green leaves"
HOSTILE = "<img src=x onerror=alert(1)><script>alert(2)</script> **bold** [a](javascript:x)"
LONG = " ".join(["zebra"] * 500)  # 2,999 characters: past the cap, inside the box


def _views():
    for lesson in LESSONS:
        for view in [{}, *OTHER_TABS.get(lesson.url_path, [])]:
            name = "-".join(f"{k}={v}" for k, v in view.items()) or "first"
            yield pytest.param(lesson.url_path, view, id=f"{lesson.url_path}-{name}")


def _rendered_markup(at) -> str:
    parts = [el.value for el in at.markdown] + messages(at)
    return "\n".join(parts + [el.value for el in at.caption] + [el.value for el in at.subheader])


def _answered(at) -> None:
    assert not at.exception, [e.value for e in at.exception]
    failed = t("app.error")
    assert not any(m == failed for m in messages(at)), messages(at)


@pytest.mark.parametrize("language", list(LANGUAGES))
@pytest.mark.parametrize(("lesson_path", "view"), list(_views()))
def test_each_part_answers_default_edited_empty_hostile_and_long_text(lesson_path, view, language):
    at = open_lesson(lesson_path, DEFAULT, lang=language, **view)
    _answered(at)
    drawn = chart_keys(at)
    assert drawn, "the part draws its charts on the default sentence"

    box = at.text_input(key="sentence")
    box.set_value(EDITED).run()
    _answered(at)
    assert chart_keys(at) == drawn, "an edited sentence redraws the same part"

    box.set_value("").run()
    _answered(at)
    assert t("note.empty_text", language=language) in messages(at)

    box.set_value(HOSTILE).run()
    _answered(at)
    for payload in ("onerror", "<script", "javascript:", "<img"):
        assert payload not in _rendered_markup(at)
    assert chart_keys(at) == drawn, "hostile text is drawn as text, in the same part"

    # A very long text, as a link brings it (the box itself takes at most READ_CHARS).
    at = open_lesson(lesson_path, LONG, lang=language, **view)
    _answered(at)
    cut = t("note.truncated_chars", language=language, original=len(LONG), cap=MAX_CHARS)
    assert cut in messages(at)
    assert chart_keys(at) == drawn, "a long text is cut, and the same part drawn from it"
