"""The class password (components/class_password.py): until a session gives it, no
lesson is drawn and no model runs; once given, the page opens as its link said, in the
link's language."""

from __future__ import annotations

import pytest
from conftest import chart_keys, messages, open_lesson, record_first_arguments

from components.i18n import t
from components.ui import class_password
from components.ui.runs import heads as heads_runs

PASSWORD = "blue giraffe"
LINKED = "The linked sentence about a giraffe"


@pytest.fixture
def password(monkeypatch) -> str:
    monkeypatch.setenv(class_password.PASSWORD_ENV, PASSWORD)
    monkeypatch.setattr(class_password, "WRONG_WAIT_S", 0.0)
    return PASSWORD


@pytest.fixture
def models_run(monkeypatch) -> list[str]:
    """Every attention model a page asked for."""
    return record_first_arguments(monkeypatch, heads_runs, "attention_model")


def password_box(at):
    return at.text_input(key=class_password.BOX_KEY)


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_a_wrong_password_draws_no_lesson_and_runs_no_model(password, models_run, lang):
    at = open_lesson("heads", LINKED, lang=lang)
    assert password_box(at).label == t("app.password_label", language=lang)
    password_box(at).set_value("red giraffe").run()
    assert not at.exception, [e.value for e in at.exception]
    assert t("app.password_wrong", language=lang) in messages(at)
    assert not chart_keys(at)
    assert not [box for box in at.text_input if box.key == "sentence"]
    assert models_run == []


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_the_right_password_opens_the_linked_page_as_linked(password, lang):
    at = open_lesson("heads", LINKED, lang=lang, layer="2")
    password_box(at).set_value(password).run()
    assert not at.exception, [e.value for e in at.exception]
    assert at.text_input(key="sentence").value == LINKED
    assert at.query_params["sentence"] == LINKED
    assert at.query_params["lang"] == lang
    assert at.selectbox(key="layer").value == 2
    assert "one_head" in chart_keys(at)
    assert at.title[0].value == t("app.title", language=lang)
    # Asked once a session: another run, another page, no box.
    at.switch_page("pages/masks.py").run()
    assert not [box for box in at.text_input if box.key == class_password.BOX_KEY]


def test_tries_run_out_after_max_attempts(password, models_run):
    at = open_lesson("heads", LINKED)
    for attempt in range(class_password.MAX_ATTEMPTS):
        password_box(at).set_value(f"guess {attempt}").run()
    assert t("app.password_locked") in messages(at)
    assert not [box for box in at.text_input if box.key == class_password.BOX_KEY]
    assert models_run == []


def test_without_a_password_nothing_is_asked(monkeypatch):
    monkeypatch.delenv(class_password.PASSWORD_ENV, raising=False)
    at = open_lesson("heads", LINKED)
    assert not [box for box in at.text_input if box.key == class_password.BOX_KEY]
    assert at.text_input(key="sentence").value == LINKED
