"""The attention lesson's tour, answered as a learner answers it: the chart that holds the
answer is not sent until the learner has answered; once it is, the answer read from the
numbers that chart carries is the one the tour marks right.
"""

from __future__ import annotations

import numpy as np
from conftest import APP_TIMEOUT, ROOT, chart, chart_keys, grid_values, messages
from streamlit.testing.v1 import AppTest

from components.i18n import t
from components.tours.schema import STEP_KEY, TOUR_KEY, tours

TOUR = tours()["heads"]
# The charts that draw the heads' weights, held back while a question about them is open.
WEIGHT_CHARTS = {"all_heads", "one_head", "focus"}


def _step(number: int) -> AppTest:
    """The tour's step `number` (from 1), opened from its link."""
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=APP_TIMEOUT)
    at.query_params.update({TOUR_KEY: TOUR.id, STEP_KEY: str(number)})
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    return at


def _index_of(title: str) -> int:
    return next(i for i, step in enumerate(TOUR.steps) if step.title["en"] == title)


def _choice(at: AppTest, key: str):
    """A choice's control: buttons for a few options, a list for a sentence's tokens."""
    return next(w for w in (*at.radio, *at.selectbox) if w.key == key)


def _answer(at: AppTest, index: int, value) -> AppTest:
    key = f"tour_answer_{TOUR.id}_{index}"
    widget = _choice(at, key) if TOUR.steps[index].question.kind == "choice" else None
    widget = widget or at.number_input(key=key)
    widget.set_value(value)
    return at.button(key="tour_check").click().run()


def _verdict(at: AppTest) -> bool | None:
    if at.success:
        return True
    return False if at.error else None


def test_the_focus_tokens_favourite_is_read_from_the_revealed_head_chart():
    index = _index_of("Predict where a word looks")
    at = _step(index + 1)
    # Before an answer: no chart of the heads' weights reached the page, only the note.
    assert not WEIGHT_CHARTS & chart_keys(at)
    assert messages(at).count(t("tour.answer_first")) == len(WEIGHT_CHARTS)
    assert _verdict(at) is None
    options = _choice(at, f"tour_answer_{TOUR.id}_{index}").options
    query = at.session_state["token"]
    assert options[query].endswith(":it")  # the default sentence's focus token

    at = _answer(at, index, 0)  # "0:[CLS]"
    assert chart_keys(at) >= WEIGHT_CHARTS, "answered: the charts are drawn"
    head = chart(at, "one_head")
    row = grid_values(head)[query]  # the focus token's row, as the chart carries it
    right = int(np.argmax(row))
    assert head["panels"][0]["columns"][right] == "2:animal"  # MiniLM, layer 3, head 1
    assert _verdict(at) is (right == 0)

    at = at.button(key="tour_ask_again").click().run()
    assert not WEIGHT_CHARTS & chart_keys(at), "asked again: held back again"
    at = _answer(at, index, right)
    assert _verdict(at) is True
    assert f"{row[right]:.2f}" in "\n".join(m.value for m in at.sidebar.markdown)


def test_the_number_of_sinks_is_counted_from_the_revealed_statistics_chart():
    index = _index_of("Attention sinks")
    at = _step(index + 1)
    at.text_input(key="sentence").set_value("The cat sat on the mat").run()
    assert not {"all_heads", "summary"} & chart_keys(at)

    at = _answer(at, index, 0)
    panels = {p["title"]: grid_values({"panels": [p]}) for p in chart(at, "summary")["panels"]}
    cls, sep = panels[t("heads.stat.cls")], panels[t("heads.stat.sep")]
    counted = int(((cls + sep) > 0.5).sum())
    assert 0 < counted < cls.size
    assert _verdict(at) is False  # 0 is more than two heads from any count of a few

    at = at.button(key="tour_ask_again").click().run()
    at = _answer(at, index, float(counted))
    assert _verdict(at) is True


def test_the_switch_off_task_is_done_only_once_the_similarity_falls_below_its_mark():
    index = _index_of("Switch heads off")
    at = _step(index + 1)
    task = t("tour.task")
    panel = [m.value for m in at.sidebar.markdown if task in m.value]
    assert panel and panel[0].startswith("⬜"), "one head off leaves the embedding above 0.99"
    assert "1 head(s) off" in "\n".join(m.value for m in at.sidebar.markdown)

    at.multiselect(key="ablate").set_value(list(range(12))).run()  # every head of layer 0
    cosine = float(at.metric[0].value)
    assert cosine < 0.99
    panel = [m.value for m in at.sidebar.markdown if task in m.value]
    assert panel[0].startswith("✅")
    assert f"{cosine:.4f}" in "\n".join(m.value for m in at.sidebar.markdown)


def test_the_quoted_token_count_follows_the_sentence():
    at = _step(1)
    text = "\n".join(m.value for m in at.sidebar.markdown)
    assert f"as {len(chart(at, 'one_head')['panels'][0]['columns'])} tokens" in text
    at.text_input(key="sentence").set_value("A giraffe ate the leaves").run()
    text = "\n".join(m.value for m in at.sidebar.markdown)
    assert "as 9 tokens" in text  # [CLS] a gi ##raf ##fe ate the leaves [SEP]
