"""The training tour on the lab's live run: the bigram question holds its chart back and is
judged by the chart's own numbers; a quote follows the sentence; the task is done only when
the sentence does what it asks. Each step is opened by its link, as a shared link opens it."""

from __future__ import annotations

from collections import Counter

from conftest import APP_TIMEOUT, ROOT, chart, chart_keys, messages
from streamlit.testing.v1 import AppTest

from components.i18n import t
from components.tours.schema import STEP_KEY, TOUR_KEY
from models.training.tasks import make_task

TRAIN = make_task("lm").split()[0]


def _step(step: int, sentence: str | None = None, language: str = "en") -> AppTest:
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=APP_TIMEOUT)
    at.query_params.update({"lang": language, TOUR_KEY: "training", STEP_KEY: str(step)})
    at.run()
    if sentence is not None:  # typed once the step is open
        at.text_input(key="sentence").set_value(sentence).run()
    assert not at.exception, [e.value for e in at.exception]
    return at


def _panel(at: AppTest) -> str:
    return "\n".join(m.value for m in at.sidebar.markdown)


def test_the_bigram_question_holds_its_chart_back_and_is_judged_by_the_chart_s_numbers():
    at = _step(1, "Lin said")
    assert "tr_ngram_next" not in chart_keys(at)
    assert t("tour.answer_first", "en") in messages(at)
    radio = at.sidebar.radio(key="tour_answer_training_0")
    follows = Counter(TRAIN[i + 1] for i in range(len(TRAIN) - 1) if TRAIN[i] == "L")
    counted = follows.most_common(1)[0][0]
    assert counted in radio.options  # the likeliest follower, among the sentence's letters
    assert set(radio.options) - {counted} <= set("Lin␣sad")
    radio.set_value(radio.options.index(counted))
    at.sidebar.button(key="tour_check").click().run()
    assert [s.value for s in at.sidebar.success] == [t("tour.right", "en", given=counted)]
    drawn = chart(at, "tr_ngram_next")  # shown once answered, with the answer on top
    assert drawn["data"][0]["x"][0] == counted


def test_a_wrong_prediction_is_marked_wrong():
    at = _step(1, "Lin said")
    radio = at.sidebar.radio(key="tour_answer_training_0")
    wrong = next(i for i, option in enumerate(radio.options) if option != "i")
    follows = Counter(TRAIN[i + 1] for i in range(len(TRAIN) - 1) if TRAIN[i] == "L")
    assert follows.most_common(1)[0][0] == "i"  # "Lin", the story's boy
    radio.set_value(wrong)
    at.sidebar.button(key="tour_check").click().run()
    assert not at.sidebar.success
    assert [e.value for e in at.sidebar.error] == [
        t("tour.wrong", "en", given=radio.options[wrong])
    ]


def test_the_second_step_quotes_the_length_of_the_sentence_typed():
    at = _step(2)
    for sentence in ("The river", "老师笑了，她就点亮这盏灯"):
        at.text_input(key="sentence").set_value(sentence).run()
        assert f"Your sentence has {len(sentence)} characters." in _panel(at)
    at.text_input(key="sentence").set_value("Hi").run()  # no 4-gram to count
    assert "Of its 4-grams (runs of four characters), – never occur" in _panel(at)
    assert "nan" not in _panel(at)


def test_the_task_is_done_only_once_every_4_gram_of_the_sentence_is_in_the_story():
    at = _step(3)
    assert "⬜" in _panel(at) and "✅" not in _panel(at)
    at.text_input(key="sentence").set_value("the river and the lamp").run()
    assert "✅" in _panel(at)
    assert TRAIN.find("the river and the lamp") == -1  # not a copy: every 4-gram is
    at.text_input(key="sentence").set_value("the river and the zebra").run()
    assert "⬜" in _panel(at)


def test_the_lag_and_heads_questions_hold_their_charts_back():
    for step, held in ((4, "tr_lag_accuracy"), (6, "tr_heads")):
        at = _step(step, language="zh")
        assert held not in chart_keys(at)
        assert t("tour.answer_first", "zh") in messages(at)
