"""Visitors' trained models: their own folder, a size cap, an age limit."""

from __future__ import annotations

import uuid

import pytest

from models import checkpoints
from models.task_models import ModelSpec, SequenceModel
from models.visitor_store import VisitorStore, new_visitor, parse_visitor

MODEL = SequenceModel(ModelSpec(kind="rnn", n_in=4, n_out=4, d_model=8)).freeze()


def _visitor() -> str:
    return uuid.uuid4().hex


def test_models_are_kept_per_visitor_and_load_back(tmp_path):
    store = VisitorStore(tmp_path)
    alice, bob = _visitor(), _visitor()
    stem = store.save(alice, "copy-lag5-rnn", MODEL, task={"name": "copy", "lag": 5})
    assert stem.parent == tmp_path / alice
    assert [m.kind for m in store.list(alice)] == ["rnn"] and store.list(bob) == []
    loaded = store.load(alice, store.list(alice)[0].name)
    assert loaded.task == {"name": "copy", "lag": 5}
    with pytest.raises(checkpoints.CheckpointError):
        store.load(bob, store.list(alice)[0].name)


def test_past_the_size_cap_the_oldest_models_go(tmp_path):
    one = len(
        checkpoints.paths(VisitorStore(tmp_path).save(_visitor(), "m", MODEL))[0].read_bytes()
    )
    store = VisitorStore(tmp_path, max_bytes=int(2.5 * (one + 400)))
    visitor = _visitor()
    for i in range(5):
        store.save(visitor, f"m{i}", MODEL)
    names = [m.name.split("-", 1)[1] for m in store.list(visitor)]
    assert names == ["m4", "m3"]
    assert store.size(visitor) <= store.max_bytes


def test_models_past_the_age_limit_are_pruned(tmp_path):
    store = VisitorStore(tmp_path, max_age=60)
    visitor = _visitor()
    store.save(visitor, "old", MODEL)
    saved_at = store.list(visitor)[0].saved_at
    assert store.prune(now=saved_at + 30) == 0
    assert store.prune(now=saved_at + 61) == 1
    assert store.list(visitor) == [] and not (tmp_path / visitor).exists()


@pytest.mark.parametrize("visitor", ["../etc", "abc", "A" * 32, ""])
def test_only_random_hex_ids_name_a_folder(tmp_path, visitor):
    with pytest.raises(ValueError):
        VisitorStore(tmp_path).folder(visitor)


@pytest.mark.parametrize("name", ["../x", "a/b", "", "x" * 200])
def test_model_names_cannot_leave_the_folder(tmp_path, name):
    store = VisitorStore(tmp_path)
    with pytest.raises(ValueError):
        store.save(_visitor(), name, MODEL)
    with pytest.raises(checkpoints.CheckpointError):
        store.load(_visitor(), name)


def test_a_new_visitor_key_is_32_random_hex_digits():
    keys = {new_visitor() for _ in range(100)}
    assert len(keys) == 100
    assert all(parse_visitor(key) == key and len(key) == 32 for key in keys)


@pytest.mark.parametrize(
    "raw",
    [
        "",
        "abc",
        "0" * 31,
        "0" * 33,
        "../" + "0" * 29,
        "0" * 16 + "/" + "0" * 15,
        "0" * 31 + "g",
        "0" * 31 + "\x00",
        "０" * 32,  # full-width digits are not hex digits
        "0" * 32 + "\n" + "0" * 32,
    ],
)
def test_a_link_s_key_that_is_not_32_hex_digits_is_refused(raw):
    assert parse_visitor(raw) is None


def test_a_link_s_key_is_forgiven_its_case_and_surrounding_spaces(tmp_path):
    key = new_visitor()
    assert parse_visitor(f"  {key.upper()} ") == key
    assert VisitorStore(tmp_path).folder(parse_visitor(key.upper())) == tmp_path / key


def test_the_models_of_one_run_share_their_time_stamp(tmp_path):
    store, visitor = VisitorStore(tmp_path), new_visitor()
    names = [store.save(visitor, f"copy-lag5-{k}", MODEL, "093000").name for k in ("rnn", "gru")]
    assert names == ["093000-copy-lag5-rnn", "093000-copy-lag5-gru"]
    assert store.save(visitor, "copy-lag5-rnn", MODEL, "093000").name == "093000-copy-lag5-rnn-2"
    for stamp in ("9300", "../../x", "0930001"):
        with pytest.raises(ValueError):
            store.save(visitor, "m", MODEL, stamp)
