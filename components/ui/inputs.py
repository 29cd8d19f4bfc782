"""What a visitor's browser and links may send: the sentence box's live pause, and values
read from a shared link. Pure Python (no Streamlit), so the bench and unit tests read it too."""

from __future__ import annotations

import math

from models.text import Note

# The link's keys for the frame's own settings: the language and presenter mode.
LANGUAGE_KEY = "lang"
PRESENT_KEY = "present"
ROOM_KEY = "room"  # a class's room, as its join link names it

# How long the sentence box waits after a key before it commits (Streamlit's default is
# 250 ms), by how many visitors the server is answering. A short pause answers one
# visitor sooner: on the attention page, last key → charts redrawn took 256–263 ms with
# 60 ms against 312–349 ms with 120 ms (docs/PERFORMANCE.md). But every pause between two
# keys then sends a commit, and on a busy server each commit's rerun is mostly wasted
# work (the next key cuts it short). 40 visitors typing at once on 2 cores, last key →
# answer: 12.2 s with 120 ms, 8.4 s with 250 ms, 5.1 s with 400 ms (before pages took
# turns; `python -m bench`).
SENTENCE_PAUSES_MS = ((3, 60), (10, 250))  # (up to this many visitors, pause)
BUSY_PAUSE_MS = 400
# A visitor counts as being answered for this long after their page last ran.
ACTIVE_WINDOW_S = 20.0


def sentence_pause_ms(visitors: int) -> int:
    """The sentence box's live pause while `visitors` visitors are being answered."""
    return next((ms for most, ms in SENTENCE_PAUSES_MS if visitors <= most), BUSY_PAUSE_MS)


# --- values read from a shared link --------------------------------------------------
# A link is text anyone can edit. Each parser returns the value to use and, when the
# link's value could not be used as it was, a note saying what was used instead.


def _link_note(code: str, raw: str, **params) -> Note:
    return Note(code, params, quote=str(raw)[:80])


def parse_choice(
    raw: str, options: list, default, names: list[list[str]] | None = None
) -> tuple[object, Note | None]:
    """The option `raw` names; `names[i]` lists the texts that name option i (its
    shown label, its value), by default just str(option)."""
    names = names or [[str(option)] for option in options]
    for option, texts in zip(options, names, strict=True):
        if raw in texts:
            return option, None
    return default, _link_note("link_not_a_choice", raw, used=default)


def parse_number(raw: str, low: float, high: float, default: float) -> tuple[float, Note | None]:
    """A number within [low, high], of the same type as `default`; clamped if outside."""
    try:
        value = float(raw)
    except (TypeError, ValueError):
        value = float("nan")
    if not math.isfinite(value):
        return default, _link_note("link_not_a_number", raw, used=default)
    kind = type(default)
    clamped = min(max(value, low), high)
    clamped = kind(round(clamped)) if kind is int else kind(clamped)
    if clamped != value:
        return clamped, _link_note("link_clamped", raw, used=clamped, low=low, high=high)
    return clamped, None


def parse_choices(
    raws: list[str],
    options: list,
    default: list,
    max_count: int,
    names: list[list[str]] | None = None,
) -> tuple[list, Note | None]:
    """Several choices; unknown ones and any past `max_count` are dropped with a note."""
    chosen = []
    for raw in raws:
        value, note = parse_choice(raw, options, None, names)
        if note is None and value not in chosen:
            chosen.append(value)
    kept = chosen[:max_count]
    if len(kept) == len(raws):
        return kept, None
    return kept or list(default), _link_note(
        "link_choices_dropped", " ".join(raws), kept=len(kept), given=len(raws)
    )
