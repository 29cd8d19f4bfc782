"""One-time links: a token brings a key to one session only, and nothing else brings one."""

from __future__ import annotations

import threading

import pytest

from models.serving import visitor_keys
from models.serving.visitor_keys import LinkRefused
from models.serving.visitor_store import VisitorStore


def test_a_link_brings_its_key_once_and_then_says_it_was_used(tmp_path):
    store = VisitorStore(tmp_path)
    key = store.new_key()
    token = store.mint_link(key)
    assert store.link_is_live(token)
    assert store.redeem_link(token) == key
    assert not store.link_is_live(token)
    with pytest.raises(LinkRefused) as refused:
        store.redeem_link(token)
    assert refused.value.reason == "used"


def test_two_sessions_opening_one_link_at_once_do_not_both_get_the_key(tmp_path):
    store = VisitorStore(tmp_path)
    key = store.new_key()
    for _ in range(20):
        token = store.mint_link(key)
        outcomes, start = [], threading.Barrier(4)

        def open_link(token=token, outcomes=outcomes, start=start):
            start.wait()
            try:
                outcomes.append(store.redeem_link(token))
            except LinkRefused as refused:
                outcomes.append(refused.reason)

        threads = [threading.Thread(target=open_link) for _ in range(4)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(timeout=30)
        assert sorted(outcomes) == sorted([key, "used", "used", "used"])


@pytest.mark.parametrize(
    "raw", ["", "0" * 32, "0123456789abcdef0123456789abcdef", "A" * 32, "../" * 11, None]
)
def test_a_made_up_link_brings_no_key(tmp_path, raw):
    store = VisitorStore(tmp_path)
    store.mint_link(store.new_key())
    with pytest.raises(LinkRefused) as refused:
        store.redeem_link(raw)
    assert refused.value.reason == "unknown"


def test_a_link_past_the_age_limit_brings_no_key(tmp_path):
    store = VisitorStore(tmp_path, max_age=60)
    token = store.links.mint(store.new_key(), now=1000.0)
    with pytest.raises(LinkRefused):
        store.links.redeem(token, now=1061.0)
    assert store.links.prune(now=2000.0) >= 0
    assert list((tmp_path / "links").iterdir()) == []


def test_a_key_cannot_mint_links_without_bound(tmp_path):
    store = VisitorStore(tmp_path)
    key = store.new_key()
    tokens = [store.mint_link(key) for _ in range(50)]
    live = [token for token in tokens if store.link_is_live(token)]
    assert live == tokens[-visitor_keys.MAX_LINKS_PER_KEY :]
    assert len(list((tmp_path / "links").iterdir())) == visitor_keys.MAX_LINKS_PER_KEY


def test_no_link_is_minted_for_a_key_this_server_did_not_sign(tmp_path):
    with pytest.raises(ValueError):
        VisitorStore(tmp_path).mint_link("0" * 64)


def test_the_signing_secret_can_come_from_the_environment(tmp_path, monkeypatch):
    monkeypatch.setenv(visitor_keys.SIGNING_VAR, "x" * 40)
    one, other = VisitorStore(tmp_path / "a"), VisitorStore(tmp_path / "b")
    assert other.keys.check(one.new_key())
    assert not (tmp_path / "a" / visitor_keys.SIGNING_FILE).exists()
