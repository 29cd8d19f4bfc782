"""The frame every lesson lives in: page setup, the language, navigation, the sentence box.

app.py runs it. A lesson file starts it too when Streamlit starts that file on its
own, which happens once per server: while no session has yet called st.navigation,
Streamlit treats pages/ as a legacy page folder: it answers a deep link such as
/heads by running pages/heads.py alone, and / by running app.py as that folder's main
page. Either run registers the frame's menu before it draws anything (_become_the_app),
which makes app.py the script of every later run, then draws the frame and the page
the link names. Every later visit goes straight through app.py.
"""

from __future__ import annotations

import logging
import threading
from pathlib import Path

import streamlit as st

from components.i18n import DEFAULT_LANGUAGE, LANGUAGES, set_language, t
from components.lessons import LESSONS
from components.ui.charts import PRESENTING_KEY, fetch_chart_library, format_choices
from components.ui.class_password import password_given, password_passed
from components.ui.classroom import follow
from components.ui.classroom.panel import class_panel, fill_class_panel, join_from_link
from components.ui.client import client_address
from components.ui.glossary import glossary_button
from components.ui.inputs import LANGUAGE_KEY, PRESENT_KEY, parse_choice
from components.ui.linked import begin_drawn_controls
from components.ui.pass_ahead import ask_pass_ahead, keep_pass_ahead_for
from components.ui.sentence import (
    PAUSE_READER,
    SENTENCE_KEY,
    sentence_box,
    show_notes,
    stopped_on_purpose,
)
from components.ui.streamlit_patches import started_as_a_legacy_page
from components.ui.tour import begin_tour
from components.ui.tour_panel import finish_tour
from components.ui.training_status import show_run_in_sidebar
from models.serving.fair_slots import Run, SessionRuns, Superseded
from models.serving.runtime import (
    first_runs_in_turn,
    import_in_turn,
    runs_in_turn,
    settle_heap_once,
)
from models.text import Note

_run = threading.local()
# The session's runs, numbered (models/serving/fair_slots.py): a session holds one page slot at a
# time, and its older run, still inside torch, sees it has been superseded.
_RUNS_KEY = "_runs"
_runs_made = threading.Lock()


def inside_frame() -> bool:
    """Whether the frame is drawing the current page (each script run has its own thread)."""
    return getattr(_run, "inside", False)


# The last language drawn, in a plain session key: a widget's own value is dropped when
# Streamlit treats a run as a new page (a lesson run alone first draws the frame itself).
_CHOSEN_KEY = "_lang_chosen"


def _language_in_link(raw: str) -> str | None:
    """The language a link names: by code as written by hand (zh, ZH, zh-CN, zh_Hans,
    en-GB) or by the name the control itself writes to the link (简体中文)."""
    by_name = {name: code for code, name in LANGUAGES.items()}
    if raw.strip() in by_name:
        return by_name[raw.strip()]
    primary = raw.strip().lower().replace("_", "-").split("-")[0]
    return primary if primary in LANGUAGES else None


def _keep_choices_across_languages() -> None:
    """Hand every keyed choice back to the browser in the new language's labels.

    A selectbox shows, and sends back, the label of its choice ("可学习"), not the value
    ("learned"). When the language changes, the browser would keep showing the old label
    and, on the next rerun, send a label no option has any more: Streamlit would then
    quietly reset the control to its default. Setting each choice to its own value
    before the page draws it makes Streamlit send it again, labelled anew.
    """
    for key in list(st.session_state.keys()):
        if not isinstance(key, str) or key.startswith(("_", "$$")):
            continue
        if key in (LANGUAGE_KEY, SENTENCE_KEY):
            continue
        value = st.session_state[key]
        is_choice = isinstance(value, str) or (
            isinstance(value, list) and value and all(isinstance(v, str) for v in value)
        )
        if is_choice:
            st.session_state[key] = value


def language_selector() -> str:
    """The visitor's language, kept in the session and in the link.

    Drawn before anything else, and made current at once: every string of this run,
    the menu's page titles included, is then in that language. The label names itself
    in both languages, so either reader finds it on a projected screen.

    The control is not bound to the link by Streamlit: a bound control accepts only its
    own label (?lang=简体中文) and drops a hand-written ?lang=zh from the address bar as
    soon as the page loads, so a link copied at once would open in English. The link is
    kept here instead (see _keep_language_in_link). Whenever the control has no value yet
    (a new session, or a run Streamlit treats as a new page), it gets one before it is
    drawn: the link's language if the link names one, else the one last drawn.
    """
    current = st.session_state.get(LANGUAGE_KEY)
    previous = st.session_state.get(_CHOSEN_KEY)
    if current in LANGUAGES and previous in LANGUAGES and current != previous:
        _keep_choices_across_languages()
    if current not in LANGUAGES:
        raws = st.query_params.get_all(LANGUAGE_KEY)
        current = _language_in_link(raws[-1]) if raws else None
        current = current or st.session_state.get(_CHOSEN_KEY) or DEFAULT_LANGUAGE
    # Set on every run, so no run can quietly fall back to the default.
    st.session_state[LANGUAGE_KEY] = current
    choice = st.segmented_control(
        "🌐 Language · 语言",
        options=list(LANGUAGES),
        format_func=LANGUAGES.__getitem__,
        default=DEFAULT_LANGUAGE,
        required=True,
        key=LANGUAGE_KEY,
        label_visibility="collapsed",
        width="content",
    )
    language = set_language(choice)
    st.session_state[_CHOSEN_KEY] = language
    _keep_language_in_link(language)
    return language


def _keep_language_in_link(language: str) -> None:
    """The link says the language by its code (?lang=zh), whatever spelling it came with.

    Once a link names a language, or the page is in another language than the default,
    the address bar carries it: a link copied at any moment opens in the same language.
    """
    raws = st.query_params.get_all(LANGUAGE_KEY)
    if (raws or language != DEFAULT_LANGUAGE) and raws != [language]:
        st.query_params[LANGUAGE_KEY] = language


# The toggle's own key, and the last value drawn (kept as the language's is, see
# language_selector); the link's parameter itself is written by presenter_toggle.
_PRESENT_TOGGLE = "_present_toggle"
_PRESENT_CHOSEN = PRESENTING_KEY
# What a link may say for presenter mode, off then on (compared in lower case).
PRESENT_WORDS = [["0", "false", "no", "off"], ["1", "true", "yes", "on"]]
# Style sheets: constant files shipped with the app, never built from anything a visitor
# sends (tests/unit/test_frame_config.py holds every st.html call to that). The layout one
# keeps a tablet-width screen usable; the presenter one is for a projector.
STYLES = Path(__file__).resolve().parent.parent.parent / "assets" / "styles"
LAYOUT_CSS = STYLES / "layout.css"
PRESENTER_CSS = STYLES / "presenter.css"


def presenter_toggle() -> tuple[bool, Note | None]:
    """Presenter mode, for a projector: large text, no sidebar, one chart per screen.

    Kept in the link as ?present=1. The toggle is not bound to the link by Streamlit, whose
    switches read only ?present=true and drop any other spelling from the address bar;
    the link is kept here instead, so a teacher's ?present=1 stays in the address bar.
    """
    raws = st.query_params.get_all(PRESENT_KEY)
    note = None
    if _PRESENT_TOGGLE not in st.session_state:
        # A new session, or a run Streamlit treats as a new page (see language_selector):
        # the link's choice if it makes one, else the one last drawn.
        if raws:
            value, note = parse_choice(
                raws[-1].strip().lower(), [False, True], False, PRESENT_WORDS
            )
        else:
            value = st.session_state.get(_PRESENT_CHOSEN, False)
        st.session_state[_PRESENT_TOGGLE] = value
    present = st.toggle(t("app.present"), key=_PRESENT_TOGGLE, help=t("app.present_help"))
    if present and raws != ["1"]:
        st.query_params[PRESENT_KEY] = "1"
    elif not present and raws:
        del st.query_params[PRESENT_KEY]
    st.session_state[_PRESENT_CHOSEN] = present
    if present:
        st.html(PRESENTER_CSS)
    return present, note


def _menu() -> list:
    """Home and every lesson, titled in the current language. Built anew every run: a
    session's runs may overlap for a moment (a new key arrives while the last run ends),
    and st.navigation marks the very page object it returns as the one that may run."""
    home = st.Page("pages/home.py", title=t("nav.home"), icon="🏠", default=True)
    return [home] + [
        st.Page(lesson.file, title=t(lesson.title_key), url_path=lesson.url_path, icon=lesson.icon)
        for lesson in LESSONS
    ]


def _become_the_app() -> None:
    """In a legacy page's run, make the controls drawn next the app's own.

    Streamlit ties a control's identity, and its binding to the link, to the script that
    is current when the control is drawn. In a legacy page's run that is the page of
    pages/, so the frame's controls would be taken for other controls by the next run,
    through app.py, and reset there: the link's presenter mode, language and sentence
    would be lost at the first change. Registering the menu before anything is drawn
    makes app.py the current script (and the script of every later run); the menu is
    registered again, titled in the visitor's language, once the frame knows it.
    """
    st.navigation(_menu(), position="hidden")


def begin_run() -> Run:
    """This run of the visitor's session: the newest from now on."""
    with _runs_made:  # a session's first two runs at once share one SessionRuns
        runs = st.session_state.get(_RUNS_KEY)
        if runs is None:
            runs = st.session_state[_RUNS_KEY] = SessionRuns(client_address())
    return runs.begin()


def run_app() -> None:
    this_run = begin_run()
    begin_drawn_controls()
    stopped_on_purpose()  # forgotten from this thread's last run
    ask_pass_ahead()
    # A legacy page's run: app.py as that folder's main page, or a lesson file on its own
    # (see the module's docstring; components/ui/streamlit_patches.py says how it is known).
    if started_as_a_legacy_page():
        _become_the_app()
    st.set_page_config(page_title="SeqLens", page_icon="🔭", layout="wide")
    st.html(LAYOUT_CSS)
    fetch_chart_library()
    # A student following the teacher takes the teacher's view before anything is drawn.
    teachers_page = None
    if password_given():
        join_from_link()
        teachers_page = follow.take_teachers_view()
    # The title and, at its right, the language control, drawn first (see language_selector);
    # the title goes into its slot once the language is known.
    top_bar = st.container(horizontal=True, vertical_alignment="center", gap="medium")
    with top_bar:
        heading = st.container()
        language_selector()
        present, present_note = presenter_toggle()
    if present_note is not None:
        show_notes([present_note])
    # Streamlit's own switches for the rest: the menu moves to the top bar, the sidebar
    # (which then holds only the image and data format choices) starts collapsed.
    st.set_page_config(initial_sidebar_state="collapsed" if present else "auto")
    page = st.navigation(_menu(), position="top" if present else "sidebar")
    follow.switch_to_teachers_page(teachers_page, page)
    glossary_button(top_bar, page.url_path)  # beside the presenter switch
    keep_pass_ahead_for(page.url_path)
    heading.title(t("app.title"))
    heading.caption(t("app.tagline"))
    if not password_passed():
        return
    class_place = class_panel(present)
    sentence_box(page.url_path)
    tour_panel = begin_tour(page.url_path, present)
    format_choices()
    if page.url_path != "training":  # the lab asks about its run itself
        show_run_in_sidebar()
    _run.inside = True
    try:
        with first_runs_in_turn(page.url_path), runs_in_turn(this_run):
            completed = False
            try:
                page.run()
                completed = True
            finally:  # also when the page stopped early (an empty sentence): the tour stays
                finish_tour(tour_panel)
                # A run cut short by a newer one has shown less than its page does.
                if completed or stopped_on_purpose():
                    follow.after_lesson(page.url_path)
                fill_class_panel(class_place)
        # Drawn: what the sentence box's pause is read with can come in now (sentence.py).
        import_in_turn(PAUSE_READER)
        # What the page's first run imported and cached stays out of every later
        # collection (models/serving/runtime.py explains the cost it saves on every rerun).
        settle_heap_once(page.url_path)
    except Superseded:
        pass  # the visitor's newer run, already started, draws the page
    except Exception:
        # Visitors get a plain message and keep their sentence; the details go to the log.
        logging.getLogger("seqlens").exception("page %s failed", page.url_path)
        st.error(t("app.error"))
        follow.shown_taken_view()
    finally:
        _run.inside = False


def enter_lesson() -> None:
    """First line of every lesson: when Streamlit ran the file alone, draw the frame instead."""
    if not inside_frame():
        run_app()
        st.stop()
