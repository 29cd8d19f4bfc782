"""The sentence box's pause is read as Streamlit reads it, without importing pandas."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from streamlit.elements.widgets import text_widgets
from streamlit.errors import StreamlitAPIException
from streamlit.time_util import time_to_seconds

from components.ui import live_pause
from components.ui.inputs import BUSY_PAUSE_MS, SENTENCE_PAUSES_MS

ROOT = Path(__file__).resolve().parents[2]
PAUSES = sorted({ms for _, ms in SENTENCE_PAUSES_MS} | {BUSY_PAUSE_MS, 0, 1, 60_000})


@pytest.fixture(autouse=True)
def _fix_applied():
    live_pause.read_pauses_without_pandas()


@pytest.mark.parametrize("ms", PAUSES)
def test_every_pause_seqlens_sets_reads_as_streamlit_reads_it(ms):
    text = f"{ms}ms"
    assert live_pause._seconds(text) == time_to_seconds(text)
    assert text_widgets._parse_text_input_live(text) == ms


@pytest.mark.parametrize(("text", "seconds"), [("0.5s", 0.5), ("1m", 60.0), ("1.5ms", 0.0015)])
def test_other_durations_go_to_streamlit(text, seconds):
    assert live_pause._seconds(text) == pytest.approx(seconds)


@pytest.mark.parametrize("text", ["soon", "ms", "-5ms", "٣ms", "²ms", "1e9ms"])
def test_what_is_not_a_duration_is_refused_as_streamlit_refuses_it(text):
    with pytest.raises(StreamlitAPIException):
        text_widgets._parse_text_input_live(text)


def test_reading_the_pause_imports_no_pandas():
    """Fails if the pinned Streamlit stops reading `live` through this module's name."""
    code = (
        "import sys\n"
        "from components.ui.live_pause import read_pauses_without_pandas\n"
        "from streamlit.elements.widgets import text_widgets\n"
        "read_pauses_without_pandas()\n"
        "assert text_widgets._parse_text_input_live('120ms') == 120\n"
        "print('pandas' in sys.modules)\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True
    )
    assert out.stdout.strip() == "False", out.stderr
