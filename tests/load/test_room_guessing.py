"""Room codes are slow to guess: wrong codes from many sessions at once are answered at
most about twice a second server-wide (the app's bound, 1 / WRONG_WAIT_S), and a session
that has typed MAX_JOIN_TRIES wrong codes is refused even the right one.

The rate is measured by bench/guessing.py's tabs (websocket clients) typing codes into the
class box; the limit asserted, 2.5 a second, leaves a margin for the clock.
"""

from __future__ import annotations

import pytest

from bench.guessing import guess_rate, open_home, type_code, wrong_codes
from bench.live import LiveTab
from bench.wire import run_async
from components.classroom.codes import spaced
from components.i18n import t
from components.ui.classroom.store import MAX_JOIN_TRIES

pytestmark = pytest.mark.slow

GUESSERS = 10
GUESSING_S = 10.0


@pytest.fixture(scope="module")
def server(running_server):
    with running_server("streamlit-room-guessing") as srv:
        yield srv


def test_wrong_codes_from_ten_sessions_are_answered_at_most_two_and_a_half_a_second(server):
    result = run_async(guess_rate(server.port, GUESSERS, GUESSING_S))
    assert not result.errors, result.errors[:5]
    assert result.answered >= 5, f"only {result.answered} wrong codes answered"
    assert result.per_s <= 2.5, f"{result.per_s:.2f} wrong codes answered per second"


async def _refused_after_the_tries(port: int) -> tuple[list, object, str]:
    teacher, guesser = LiveTab(port, "teacher"), LiveTab(port, "guesser")
    try:
        await open_home(teacher)
        since = len(teacher.seen)
        await teacher.click("class_start")
        room = await teacher.wait_run(lambda r: r.full and r.codes, since, 30)
        code = room.codes[0].split("?room=", 1)[1]
        await open_home(guesser)
        codes = wrong_codes(7, {code})
        wrong = [await type_code(guesser, next(codes)) for _ in range(MAX_JOIN_TRIES)]
        right = await type_code(guesser, code)
        return wrong, right, code
    finally:
        await teacher.close()
        await guesser.close()


def test_a_session_is_refused_even_the_right_code_after_eight_wrong_ones(server):
    wrong, right, code = run_async(_refused_after_the_tries(server.port))
    assert MAX_JOIN_TRIES == 8
    assert all(run is not None for run in wrong)
    assert all(any(t("class.no_room") in body for _, body in run.alerts) for run in wrong[:-1])
    assert right is not None, "the ninth code was not answered"
    assert any(t("class.no_tries") in body for _, body in right.alerts), right.alerts
    # Not in the room: a student's page would have its leave button.
    assert "class_leave" not in right.widgets
    assert not any(spaced(code) in text for text in right.texts)
