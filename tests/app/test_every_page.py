"""Every lesson, held to the same rules: bad input gets a message, never a traceback.

The lessons come from components.lessons.LESSONS, so a new lesson is covered as soon
as it is registered.
"""

from __future__ import annotations

import base64
import json
import math

import numpy as np
import pytest
from conftest import ROOT, chart_specs, every_chart, every_tab, grid_values, messages, open_lesson
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from models.text import MAX_CHARS

VALID = "The giraffe ate green leaves"

# (name, text, words the visitor must be told about, or None when the text is fine)
BAD_INPUTS = [
    ("empty", "", "Type a sentence"),
    ("whitespace", " \t \n ", "Type a sentence"),
    ("ten_thousand_chars", "abc " * 2500, f"only the first {MAX_CHARS}"),
    ("control_chars", "The\x00 cat\x07 sat\x1b[31m", "invisible character"),
    ("zero_width_and_rtl", "The\u200b cat\u202e sat\u200f", "invisible character"),
    ("emoji", "I love 😀 and 👩‍👩‍👧 so much", None),
    ("cjk", "我爱你，你爱我", None),
    ("combining_accents", "cafe\u0301 naïve re\u0301sume\u0301", None),
    ("html", "<img src=x onerror=alert(1)><script>alert(2)</script>", None),
    ("markdown", "**bold** [link](javascript:alert(1)) ![img](http://127.0.0.2/x.png)", None),
    ("latex", r"$\frac{a}{b}$ and $$x^2$$", None),
    ("pseudo_html_labels", "<b>bold</b> <br> <a href='x'>link</a> %{x}", None),
]


def non_finite_numbers(node) -> int:
    """Count NaN/inf in a figure dict, including plotly's base64 typed arrays."""
    if isinstance(node, float):
        return 0 if math.isfinite(node) else 1
    if isinstance(node, dict):
        if "bdata" in node and "dtype" in node:
            values = np.frombuffer(base64.b64decode(node["bdata"]), dtype=node["dtype"])
            return int((~np.isfinite(values)).sum()) if values.dtype.kind == "f" else 0
        return sum(non_finite_numbers(v) for v in node.values())
    if isinstance(node, list):
        return sum(non_finite_numbers(v) for v in node)
    return 0


def non_finite_drawn(spec: dict) -> int:
    """NaN/inf in what a chart draws: a plotly figure's data, a grid's cells."""
    if "panels" not in spec:
        return non_finite_numbers(spec["data"])
    with_cells = [i for i, panel in enumerate(spec["panels"]) if "z" in panel]
    return non_finite_numbers(spec) + sum(
        int((~np.isfinite(grid_values(spec, i))).sum()) for i in with_cells
    )


def assert_no_failure(at) -> None:
    assert not at.exception, [e.value for e in at.exception]
    assert not any(m.startswith("Something went wrong") for m in messages(at))


def rendered_markup(at) -> str:
    """Everything drawn through sinks that render markdown or HTML."""
    parts = [el.value for el in at.markdown] + messages(at)
    parts += [el.value for el in at.caption] + [el.value for el in at.subheader]
    return "\n".join(parts)


# The view of a lesson that reads the visitor's sentence, where its first view reads a
# task's own sequence instead (the recurrent lesson opens on models trained to copy), or
# no sentence at all (the training lab opens on accuracy against lag).
SENTENCE_VIEWS = {"recurrent": {"rc_weights": "constructed"}, "training": {"tr_part": "yours"}}


@pytest.mark.parametrize(("name", "text", "told"), BAD_INPUTS, ids=[b[0] for b in BAD_INPUTS])
def test_bad_input_gets_a_message_then_valid_input_draws(lesson_path, name, text, told):
    at = open_lesson(lesson_path, text, **SENTENCE_VIEWS.get(lesson_path, {}))
    assert_no_failure(at)
    if told is not None:
        assert any(told in m for m in messages(at)), messages(at)
    if name in ("empty", "whitespace"):
        assert every_chart(at) == []
    # Hostile text never reaches a sink that renders markup. (Grid charts draw their
    # labels as canvas text: tests/e2e/test_grid_charts.py.)
    for payload in ("onerror", "<script", "javascript:", "127.0.0.2", "<b>"):
        assert payload not in rendered_markup(at)
    for spec in chart_specs(at):
        for trace in spec["data"]:
            for axis in ("x", "y"):
                labels = trace.get(axis)
                if isinstance(labels, list):
                    assert not any("<" in str(label) for label in labels)
    assert all(non_finite_drawn(spec) == 0 for spec in every_chart(at))
    at.text_input(key="sentence").set_value(VALID).run()
    assert_no_failure(at)
    specs = every_chart(at)
    assert specs, "valid input after bad input draws charts"
    assert any("leaves" in json.dumps(spec) for spec in specs)


GARBAGE = ["nan", "1e9", "-1", "abc", "", "999999999999999999999"]


def bound_widget_keys(at) -> list[str]:
    kinds = ("selectbox", "slider", "number_input", "select_slider", "radio", "checkbox")
    keys = []
    for kind in kinds:
        for widget in getattr(at, kind, []):
            key = getattr(widget, "key", None)
            if key and not key.startswith("$$"):
                keys.append(key)
    return keys


@pytest.mark.parametrize("garbage", GARBAGE)
def test_garbage_in_the_link_is_replaced_with_a_visible_note(lesson_path, garbage):
    keys = [k for k in bound_widget_keys(open_lesson(lesson_path)) if k != "preset"]
    assert keys, "every lesson keeps its controls in the link"
    at = open_lesson(lesson_path, VALID, **{key: garbage for key in keys})
    assert_no_failure(at)
    assert every_chart(at)
    link_notes = [m for m in messages(at) if m.startswith("The link")]
    assert len(link_notes) == len(keys), (keys, link_notes)
    # The value the visitor typed is quoted as plain text, never inside a message.
    if garbage:
        assert garbage[:80] in [el.value for el in at.text]


def test_every_lesson_offers_its_own_examples(lesson_path):
    by_language = json.loads((ROOT / "assets" / "presets.json").read_text(encoding="utf-8"))
    examples = by_language["en"]  # the page opens in English; 中文 lists its own examples
    assert examples.get(lesson_path), f"assets/presets.json has no examples for {lesson_path}"
    at = open_lesson(lesson_path)
    preset = at.selectbox(key="preset")
    assert preset.options == examples[lesson_path]
    preset.select(examples[lesson_path][-1]).run()
    assert_no_failure(at)
    assert at.text_input(key="sentence").value == examples[lesson_path][-1]
    assert every_chart(at)


# Any text at all: every page answers with charts or a message, never a failure.
@settings(
    max_examples=12,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(text=st.text(max_size=300))
def test_any_text_is_answered_without_failure(lesson_path, text):
    at = open_lesson(lesson_path, text)
    assert_no_failure(at)
    specs = every_chart(at)
    assert specs or any("Type a sentence" in m for m in messages(at))
    assert all(non_finite_drawn(spec) == 0 for spec in specs)


def test_a_lesson_that_draws_grid_charts_sends_their_renderer_once_before_them(lesson_path):
    for at in every_tab(lesson_path, VALID):
        assert_no_failure(at)
        elements = [el.proto for el in at.get("bidi_component")]
        names = [el.component_name for el in elements]
        if "seqlens_grid" not in names:
            continue
        assert names.count("seqlens_grid_code") == 1
        assert names.index("seqlens_grid_code") < names.index("seqlens_grid")
        code = elements[names.index("seqlens_grid_code")].js_content
        assert "window.__seqlensGrid = render" in code
        # Each chart carries only the hand-over to it, not the renderer again.
        for element in elements:
            if element.component_name == "seqlens_grid":
                assert len(element.js_content) < 400 and "__seqlensGrid" in element.js_content
