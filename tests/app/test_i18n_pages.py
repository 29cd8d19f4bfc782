"""Every page in Simplified Chinese, driven through AppTest as a visitor would.

A link with ?lang=zh opens the page in Chinese; the choice stays when the visitor moves
between pages; nothing on screen is a raw string key. The lessons come from
components.lessons.LESSONS, so a new lesson is covered as soon as it is registered.
"""

from __future__ import annotations

import re

import pytest
from conftest import APP_TIMEOUT, OTHER_TABS, ROOT, chart_specs, grid_specs, open_lesson
from streamlit.testing.v1 import AppTest

from components.i18n import current_language, strings, using_language
from components.lessons import LESSONS

ZH = strings("zh")
EN = strings("en")
RAW_KEY = re.compile(r"^[a-z_]+(\.[a-z_0-9]+)+$")
CJK = re.compile(r"[\u4e00-\u9fff]")
# English, a CJK phrase and an emoji: the pages' notes about unknown pieces show too.
SENTENCE = "The animal didn't cross the street because it was too tired 我爱你 😀"
PAGES = ["home", *(lesson.url_path for lesson in LESSONS)]


def open_home(**query: str) -> AppTest:
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=APP_TIMEOUT)
    for name, value in query.items():
        at.query_params[name] = value
    at.run()
    return at


def open_page(page: str, sentence: str | None = None, **query: str) -> AppTest:
    if page == "home":
        if sentence is not None:
            query["sentence"] = sentence
        return open_home(**query)
    return open_lesson(page, sentence, **query)


def header_key(page: str) -> str:
    """Every page's st.header is its `<page>.title` string."""
    return f"{page}.title"


def shown_texts(at: AppTest) -> list[str]:
    """What the visitor reads: headings, prose, messages, buttons and control labels."""
    found: list[str] = []
    for kind in ("title", "header", "subheader", "markdown", "caption"):
        found += [el.value for el in getattr(at, kind)]
    for kind in ("info", "warning", "error", "success"):
        found += [el.value for el in getattr(at, kind)]
    found += [el.label for el in at.button]
    for kind in ("selectbox", "slider", "multiselect", "text_input", "segmented_control"):
        found += [el.label for el in getattr(at, kind)]
    found += [el.label for el in at.get("page_link")] if at.get("page_link") else []
    for frame in at.dataframe:
        df = frame.value
        found += [str(c) for c in df.columns]
        found += [str(v) for v in df.to_numpy().ravel() if isinstance(v, str)]
    return found


def chart_texts(at: AppTest) -> list[str]:
    """Titles, axis titles and trace names of every chart (a grid's: its panels' titles,
    axis and colour-bar titles, the name in its hover label, its save button)."""
    found: list[str] = []
    for spec in chart_specs(at):
        layout = spec.get("layout", {})
        for name, value in layout.items():
            if isinstance(value, dict) and (name.startswith(("xaxis", "yaxis")) or name == "title"):
                title = value.get("title", value) if name != "title" else value
                if isinstance(title, dict) and isinstance(title.get("text"), str):
                    found.append(title["text"])
        found += [
            a["text"] for a in layout.get("annotations", []) if isinstance(a.get("text"), str)
        ]
        found += [
            trace["name"] for trace in spec.get("data", []) if isinstance(trace.get("name"), str)
        ]
    for spec in grid_specs(at):
        for panel in spec["panels"]:
            found += [panel.get("title"), panel["x"]["title"], panel["y"]["title"]]
            found += [panel.get("colorbar", {}).get("title"), panel["hover"].get("name")]
        found += [spec["save_label"]]
    return [text for text in found if isinstance(text, str) and text]


def assert_no_failure(at: AppTest) -> None:
    assert not at.exception, [e.value for e in at.exception]
    assert ZH["app.error"] not in [el.value for el in at.error]
    assert EN["app.error"] not in [el.value for el in at.error]


def language_of(at: AppTest) -> str:
    return at.segmented_control(key="lang").value


def as_drawn(at: AppTest):
    """Run the next interaction in the language the page is drawn in.

    AppTest calls a control's format_func again in the test's own thread when it sends
    the widget states of the next run; the lessons' format_funcs call t(), which reads
    the current language of the thread that calls it (in the app, always the script's).
    """
    return using_language(language_of(at))


# --- every page in Chinese -----------------------------------------------------------------


# Each page on its first view, and the training lab's other tabs: it drew them all on one
# load before its measured results were tabs.
VIEWS = [(page, {}) for page in PAGES] + [("training", view) for view in OTHER_TABS["training"]]


def view_id(view: tuple[str, dict]) -> str:
    page, query = view
    return "-".join([page, *query.values()])


@pytest.fixture(scope="module", params=VIEWS, ids=view_id)
def zh_page(request) -> tuple[str, AppTest]:
    """Each page (or view) opened once from a ?lang=zh link, shared by the checks below."""
    page, query = request.param
    return page, open_page(page, SENTENCE, lang="zh", **query)


def test_page_opens_in_chinese_without_error(zh_page):
    page, at = zh_page
    assert_no_failure(at)
    assert language_of(at) == "zh"
    assert [h.value for h in at.header] == [ZH[header_key(page)]]
    assert at.caption[0].value == ZH["app.tagline"]
    assert at.text_input(key="sentence").label == ZH["app.sentence_label"]


def test_no_element_shows_a_raw_string_key(zh_page):
    _, at = zh_page
    raw = [text for text in shown_texts(at) + chart_texts(at) if RAW_KEY.match(text.strip())]
    assert raw == []
    keys_on_screen = [text for text in shown_texts(at) if text.strip() in EN]
    assert keys_on_screen == []


def test_no_text_shows_a_placeholder_left_unfilled(zh_page):
    """A string drawn without its parameters shows "{count}" to the class."""
    _, at = zh_page
    unfilled = [text for text in shown_texts(at) if re.search(r"\{[a-z_]+\}", text)]
    assert unfilled == []


def test_multiselects_prompt_in_chinese(zh_page):
    _, at = zh_page
    for box in at.multiselect:
        assert box.placeholder == ZH["app.choices_placeholder"], box.key


def test_every_heading_caption_message_and_label_is_chinese(zh_page):
    """Each string the page draws through t() is the Chinese one (SeqLens is a name)."""
    _, at = zh_page
    only_english = set(EN.values()) - set(ZH.values())  # not names such as SeqLens, RoPE
    drawn = set(shown_texts(at))
    assert sorted(drawn & only_english) == []
    assert {text for text in drawn if CJK.search(text)} & set(ZH.values()), "no Chinese string"


def test_lesson_pages_draw_their_charts_in_chinese(zh_page):
    page, at = zh_page
    if page == "home":
        assert chart_specs(at) == grid_specs(at) == []
        return
    titles = chart_texts(at)
    assert titles, "no chart drawn"
    assert any(CJK.search(title) for title in titles)


def test_home_lists_every_lesson_in_chinese():
    at = open_home(lang="zh")
    assert_no_failure(at)
    captions = [c.value for c in at.caption]
    for lesson in LESSONS:
        assert ZH[lesson.blurb_key] in captions
    assert ZH["home.intro"] in [m.value for m in at.markdown]


# --- choosing and keeping the language --------------------------------------------------


def test_without_a_lang_in_the_link_the_page_is_english():
    at = open_lesson("heads", "The cat sat on the mat")
    assert_no_failure(at)
    assert language_of(at) == "en"
    assert [h.value for h in at.header] == [EN["heads.title"]]


@pytest.mark.parametrize("code", ["ZH", "zh-CN", "zh_Hans", "简体中文"])
def test_a_link_may_name_chinese_by_code_variant_or_by_name(code):
    at = open_home(lang=code)
    assert_no_failure(at)
    assert language_of(at) == "zh"
    assert [h.value for h in at.header] == [ZH["home.title"]]


@pytest.mark.parametrize("code", ["fr", "xx-none", "<script>", "english"])
def test_an_unknown_language_in_the_link_gives_english(code):
    at = open_home(lang=code)
    assert_no_failure(at)
    assert language_of(at) == "en"
    assert [h.value for h in at.header] == [EN["home.title"]]


def language_in_link(at: AppTest) -> str | None:
    value = at.query_params.get("lang")
    return value[-1] if isinstance(value, list) else value


@pytest.mark.parametrize("code", ["zh", "ZH", "zh-CN", "简体中文"])
def test_the_link_keeps_the_language_under_its_code(code):
    """A link copied the moment the page has loaded opens in the same language."""
    at = open_home(lang=code)
    assert language_in_link(at) == "zh"


def test_choosing_a_language_writes_it_into_the_link():
    at = open_lesson("heads", "The cat sat on the mat")
    assert language_in_link(at) is None  # English, the default: nothing to say
    at.segmented_control(key="lang").set_value("zh").run()
    assert language_in_link(at) == "zh"
    with as_drawn(at):
        at.segmented_control(key="lang").set_value("en").run()
    assert language_in_link(at) == "en"


def test_an_empty_language_in_the_link_gives_english():
    """?lang= leaves the control with nothing chosen (Streamlit seeds it empty); the
    page is English and stays usable."""
    at = open_lesson("heads", "The cat sat on the mat", lang="")
    assert_no_failure(at)
    assert language_of(at) in (None, "en")
    assert [h.value for h in at.header] == [EN["heads.title"]]
    at.segmented_control(key="lang").set_value("zh").run()
    assert [h.value for h in at.header] == [ZH["heads.title"]]


def test_choosing_chinese_redraws_the_page_in_chinese():
    at = open_lesson("positional", "The cat sat on the mat")
    assert [h.value for h in at.header] == [EN["positional.title"]]
    at.segmented_control(key="lang").set_value("zh").run()
    assert_no_failure(at)
    assert [h.value for h in at.header] == [ZH["positional.title"]]
    assert at.text_input(key="sentence").value == "The cat sat on the mat"
    with as_drawn(at):
        at.segmented_control(key="lang").set_value("en").run()
    assert_no_failure(at)
    assert [h.value for h in at.header] == [EN["positional.title"]]


def test_changing_language_keeps_every_choice_on_the_page():
    """The choices survive the change of labels (learned ↔ 可学习) and the next rerun."""
    at = open_lesson("positional", "The cat sat on the mat", pe_table="learned", pe_order="rotate")
    assert (at.session_state["pe_table"], at.session_state["pe_order"]) == ("learned", "rotate")
    at.segmented_control(key="lang").set_value("zh").run()
    assert_no_failure(at)
    assert [h.value for h in at.header] == [ZH["positional.title"]]
    for _ in range(2):
        assert (at.session_state["pe_table"], at.session_state["pe_order"]) == ("learned", "rotate")
        assert at.selectbox(key="pe_table").options == [
            ZH["positional.scheme.sinusoidal"],
            ZH["positional.scheme.learned"],
        ]
        with as_drawn(at):
            at.run()
        assert_no_failure(at)


def test_the_language_chosen_on_one_page_survives_switching_pages():
    """Chosen with the control (no lang in the link), kept by the session on every page."""
    at = open_lesson("heads", "The cat sat on the mat")
    assert language_of(at) == "en"
    at.segmented_control(key="lang").set_value("zh").run()
    assert [h.value for h in at.header] == [ZH["heads.title"]]
    for lesson in [*LESSONS, *LESSONS]:
        with as_drawn(at):
            at.switch_page(lesson.file).run()
        assert_no_failure(at)
        assert language_of(at) == "zh", lesson.url_path
        assert at.session_state["lang"] == "zh"
        assert [h.value for h in at.header] == [ZH[header_key(lesson.url_path)]]
        assert at.text_input(key="sentence").value == "The cat sat on the mat"


def test_a_chinese_link_stays_chinese_from_home_through_every_lesson():
    at = open_home(lang="zh")
    assert [h.value for h in at.header] == [ZH["home.title"]]
    for lesson in LESSONS:
        with as_drawn(at):
            at.switch_page(lesson.file).run()
        assert_no_failure(at)
        assert [h.value for h in at.header] == [ZH[header_key(lesson.url_path)]]


def test_a_script_run_in_chinese_leaves_other_sessions_in_english():
    chinese = open_home(lang="zh")
    english = open_home()
    assert [h.value for h in chinese.header] == [ZH["home.title"]]
    assert [h.value for h in english.header] == [EN["home.title"]]
    # The test process itself (another thread) never picked up a session's language.
    assert current_language() == "en"


def test_a_link_made_in_one_language_opens_the_same_view_in_the_other():
    # A Chinese visitor's link holds the Chinese label of the choice it shares.
    at = open_lesson("positional", "dog bites man", pe_table="可学习")
    assert at.selectbox(key="pe_table").value == "learned"
    assert not [el.value for el in at.warning if "link" in el.value.lower()]
    with using_language("zh"):
        label = strings("zh")["positional.scheme.sinusoidal"]
    at = open_lesson("positional", "dog bites man", lang="zh", pe_table="learned")
    assert at.selectbox(key="pe_table").value == "learned"
    assert label  # the zh file names the default choice too
