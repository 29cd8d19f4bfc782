"""A sentence far longer than any page reads, from a link or left in the session: the
page uses its first MAX_CHARS characters and says so, and the box takes no more than
READ_CHARS, so the text a rerun cleans is bounded wherever it came from."""

from __future__ import annotations

from conftest import APP_TIMEOUT, ROOT, messages, open_lesson
from streamlit.testing.v1 import AppTest

from components.i18n import t
from models import text as text_module
from models.text import MAX_CHARS, READ_CHARS

# Streamlit ignores a whole query string of more than 524,288 characters, and refuses
# a client's message over 1 MB: a link just under both still reaches the box.
LINK_CHARS = 500_000
LESSON = "positional"


def the_page_used_the_first_max_chars(at: AppTest) -> bool:
    cut = f"only the first {MAX_CHARS} are used"
    return any(cut in message for message in messages(at))


def test_a_half_megabyte_link_sentence_is_cut_to_the_box_and_to_max_chars():
    at = open_lesson(LESSON, "word " * (LINK_CHARS // 5))
    assert not at.exception, [e.value for e in at.exception]
    box = at.text_input(key="sentence")
    assert box.proto.max_chars == READ_CHARS
    assert len(box.value) <= READ_CHARS
    assert the_page_used_the_first_max_chars(at)
    # The link's text arrived cut to the box's length, so the note says "at least".
    expected = t("note.truncated_chars_at_least", cap=MAX_CHARS, original=READ_CHARS)
    assert expected in messages(at)


def test_a_long_sentence_in_the_session_is_cut_before_cleaning(monkeypatch):
    # No client can put more in the session: a message over 1 MB closes its websocket
    # (server.maxWidgetStateSize; tests/load/test_big_sentence.py sends 8 MB).
    normalized: list[int] = []
    real_normalize = text_module.unicodedata.normalize

    def recording(form: str, text: str) -> str:
        normalized.append(len(text))
        return real_normalize(form, text)

    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=APP_TIMEOUT)
    at.session_state["sentence"] = "x" * LINK_CHARS
    monkeypatch.setattr(text_module.unicodedata, "normalize", recording)
    at.run()
    at.switch_page(f"pages/{LESSON}.py").run()
    assert not at.exception, [e.value for e in at.exception]
    assert normalized and max(normalized) <= READ_CHARS
    assert the_page_used_the_first_max_chars(at)
    assert len(at.text_input(key="sentence").value) <= READ_CHARS


def test_the_masks_second_sentence_box_takes_at_most_read_chars():
    at = open_lesson("masks", "A short first sentence")
    # The class code's box takes a code, far shorter (tests/app/test_class_mode.py).
    boxes = [box for box in at.text_input if box.key not in ("sentence", "_class_code_box")]
    assert boxes and all(box.proto.max_chars == READ_CHARS for box in boxes)
