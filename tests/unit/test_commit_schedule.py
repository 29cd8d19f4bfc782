"""The load client's model of a live text box: when it commits while someone types."""

from __future__ import annotations

import pytest

from bench.wire import commit_schedule


def test_a_pause_longer_than_the_live_pause_commits_what_was_typed_so_far():
    # Keys at 0, 0.1, 0.4 and 0.5 s: the 0.3 s gap commits two keys at 0.35 s.
    commits = commit_schedule([0.1, 0.3, 0.1], 0.25)
    assert [typed for _, typed in commits] == [2, 4]
    assert [at for at, _ in commits] == pytest.approx([0.35, 0.75])


def test_quick_typing_commits_once_after_the_last_key():
    [(at, typed)] = commit_schedule([0.05] * 9, 0.25)
    assert typed == 10 and at == pytest.approx(0.45 + 0.25)


def test_a_single_key_commits_after_the_pause():
    assert commit_schedule([], 0.12) == [(0.12, 1)]


@pytest.mark.parametrize("pause", [0.0, 0.1, 0.25, 1.0])
def test_every_schedule_ends_with_the_whole_text_one_pause_after_the_last_key(pause):
    gaps = [0.08, 0.3, 0.12, 0.5, 0.2]
    commits = commit_schedule(gaps, pause)
    assert commits[-1] == pytest.approx((sum(gaps) + pause, len(gaps) + 1))
    times = [at for at, _ in commits]
    assert times == sorted(times)
    # A shorter pause never commits less often.
    assert len(commits) >= len(commit_schedule(gaps, pause + 0.1))
