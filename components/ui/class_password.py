"""An optional class password: a shared secret a session gives once, before any lesson.

For a server on a shared network (README, "Using it in a classroom"). The operator sets
SEQLENS_CLASS_PASSWORD; without it, or with it empty, nothing is asked. Until a session
has given it, the frame draws the language control and this box only: no lesson, no
model. The link the visitor came with (lesson, sentence, settings) stays as it was: the
controls bound to it are not drawn yet, so Streamlit leaves their parameters alone, and
they read them when they are first drawn, once the password is given.

Guessing is slow: a session has MAX_ATTEMPTS tries, and every wrong one waits
WRONG_WAIT_S while holding one lock for the whole server, so wrong passwords from any
number of sessions are answered one at a time, at most one every WRONG_WAIT_S.
"""

from __future__ import annotations

import hmac
import os
import threading
import time

import streamlit as st

from components.i18n import t

PASSWORD_ENV = "SEQLENS_CLASS_PASSWORD"  # noqa: S105 - the variable's name, not a password
MAX_ATTEMPTS = 5
WRONG_WAIT_S = 1.0
# No password a teacher reads out is longer; the box takes no more.
MAX_PASSWORD_CHARS = 200

BOX_KEY = "_class_password"
_PASSED = "_class_password_passed"
_ATTEMPTS = "_class_password_attempts"
_WRONG = "_class_password_wrong"
_WRONG_LOCK = threading.Lock()


def class_password() -> str:
    """The password this server asks for; '' when it asks for none."""
    return os.environ.get(PASSWORD_ENV, "")


def _is_the_password(given: str, password: str) -> bool:
    # Compared in constant time: how long a wrong answer takes says nothing of the password.
    return hmac.compare_digest(given.encode("utf-8"), password.encode("utf-8"))


def _check_given() -> None:
    """The box's on_change: one attempt, counted once, whatever reruns follow."""
    given = str(st.session_state.get(BOX_KEY) or "")
    st.session_state[BOX_KEY] = ""
    if not given:
        return
    st.session_state[_ATTEMPTS] = st.session_state.get(_ATTEMPTS, 0) + 1
    if _is_the_password(given, class_password()):
        st.session_state[_PASSED] = True
        st.session_state[_WRONG] = False
        return
    with _WRONG_LOCK:
        time.sleep(WRONG_WAIT_S)
    st.session_state[_WRONG] = True


def password_given() -> bool:
    """Whether this session may see the lessons (draws nothing)."""
    return not class_password() or bool(st.session_state.get(_PASSED))


def password_passed() -> bool:
    """Whether this session may see the lessons. When not, draws the password box (or
    the message that the tries are used up); the frame then stops before the page."""
    password = class_password()
    if not password or st.session_state.get(_PASSED):
        return True
    if st.session_state.get(_ATTEMPTS, 0) >= MAX_ATTEMPTS:
        st.error(t("app.password_locked"))
        return False
    st.text_input(
        t("app.password_label"),
        type="password",
        key=BOX_KEY,
        max_chars=MAX_PASSWORD_CHARS,
        help=t("app.password_help"),
        on_change=_check_given,
    )
    if st.session_state.get(_WRONG):
        st.error(t("app.password_wrong"))
    return False
