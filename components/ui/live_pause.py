"""The sentence box's live pause, read by Streamlit without importing pandas.

Streamlit reads a text box's `live="120ms"` with `pandas.Timedelta`, so the first run of
any page imported pandas (and pyarrow with it) before drawing the sentence box: ~0.3 s
of a fresh server's way to its first chart, for one number. Nothing else on the
attention page needs pandas. Whole milliseconds, the only pauses SeqLens sets, are read
here; anything else still goes to Streamlit's own reader.

`tests/unit/test_live_pause.py` fails if the pinned Streamlit stops reading the pause
through `text_widgets.time_to_seconds`.
"""

from __future__ import annotations

from streamlit.elements.widgets import text_widgets

_streamlit_seconds = text_widgets.time_to_seconds


def _seconds(value, **options):
    digits = value[:-2] if isinstance(value, str) and value.endswith("ms") else ""
    if digits.isascii() and digits.isdigit():  # str.isdigit alone takes "٣" and "²"
        return int(digits) / 1000
    return _streamlit_seconds(value, **options)


def read_pauses_without_pandas() -> None:
    text_widgets.time_to_seconds = _seconds
