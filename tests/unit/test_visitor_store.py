"""Visitors' trained models: their own folder, a size cap, an age limit."""

from __future__ import annotations

import hashlib
import json
import os
import stat
from pathlib import Path

import pytest

from models.nets.task_models import ModelSpec, SequenceModel
from models.serving import visitor_store
from models.serving.visitor_store import StoreRefused, VisitorStore
from models.training import checkpoints

MODEL = SequenceModel(ModelSpec(kind="rnn", n_in=4, n_out=4, d_model=8)).freeze()


def _one_model_bytes(tmp_path) -> int:
    store = VisitorStore(tmp_path / "sizing")
    stem = store.save(store.new_key(), "m", MODEL)
    return sum(path.stat().st_size for path in checkpoints.paths(stem))


def test_models_are_kept_per_visitor_and_load_back(tmp_path):
    store = VisitorStore(tmp_path)
    alice, bob = store.new_key(), store.new_key()
    stem = store.save(alice, "copy-lag5-rnn", MODEL, task={"name": "copy", "lag": 5})
    assert stem.parent == store.folder(alice)
    assert [m.kind for m in store.list(alice)] == ["rnn"] and store.list(bob) == []
    loaded = store.load(alice, store.list(alice)[0].name)
    assert loaded.task == {"name": "copy", "lag": 5}
    with pytest.raises(checkpoints.CheckpointError):
        store.load(bob, store.list(alice)[0].name)


def test_past_the_size_cap_the_oldest_models_go(tmp_path):
    one = _one_model_bytes(tmp_path)
    store = VisitorStore(tmp_path / "store", max_bytes=int(2.5 * one))
    visitor = store.new_key()
    for i in range(5):
        store.save(visitor, f"m{i}", MODEL)
    names = [m.name.split("-", 1)[1] for m in store.list(visitor)]
    assert names == ["m4", "m3"]
    assert store.size(visitor) <= store.max_bytes


def test_models_past_the_age_limit_are_pruned(tmp_path):
    store = VisitorStore(tmp_path, max_age=60)
    visitor = store.new_key()
    store.save(visitor, "old", MODEL)
    saved_at = store.list(visitor)[0].saved_at
    assert store.prune(now=saved_at + 30) == 0
    assert store.prune(now=saved_at + 61) == 1
    assert store.list(visitor) == [] and not store.folder(visitor).exists()


def test_many_fresh_keys_cannot_fill_the_disk_past_the_global_caps(tmp_path):
    one = _one_model_bytes(tmp_path)
    root = tmp_path / "store"  # caps of 3.5 models' worth of bytes and 5 visitors' folders
    store = VisitorStore(root, max_total=3 * one + one // 2, max_keys=5)
    keys = [store.new_key() for _ in range(12)]
    for i, key in enumerate(keys):
        store.save(key, f"m{i}", MODEL)
        assert store.total_bytes() <= store.max_total
    folders = [p for p in root.iterdir() if p.is_dir() and p.name != "links"]
    assert len(folders) <= 3  # the byte cap binds first here: the oldest folders are gone
    assert [m.name.split("-", 1)[1] for m in store.list(keys[-1])] == ["m11"]  # newest stays
    assert store.list(keys[0]) == []  # oldest out


def test_the_global_caps_are_constants_an_operator_can_set():
    import subprocess
    import sys

    env = {
        **os.environ,
        "SEQLENS_VISITOR_TOTAL_MB": "64",
        "SEQLENS_VISITOR_MAX_KEYS": "40",
        "SEQLENS_VISITOR_MIN_FREE_MB": "100",
    }
    code = (
        "from models.serving import visitor_store as v; "
        "print(v.MAX_TOTAL_BYTES, v.MAX_KEYS, v.MIN_FREE_BYTES)"
    )
    shown = subprocess.run(
        [sys.executable, "-c", code],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        cwd=Path(__file__).resolve().parents[2],
        check=True,
    ).stdout.split()
    assert shown == [str(64 * 2**20), "40", str(100 * 2**20)]


def test_saving_is_refused_when_the_disk_is_nearly_full(tmp_path, monkeypatch):
    store = VisitorStore(tmp_path, min_free=512 * 2**20)
    monkeypatch.setattr(
        visitor_store.shutil, "disk_usage", lambda _: type("U", (), {"free": 100 * 2**20})()
    )
    key = store.new_key()
    with pytest.raises(StoreRefused, match="100 MB free") as refused:
        store.save(key, "m", MODEL)
    assert refused.value.reason == "disk_low"
    assert refused.value.params == {"free_mb": 100, "margin_mb": 512}
    assert store.list(key) == [] and not store.folder(key).exists()


def test_the_store_is_private_to_this_user(tmp_path):
    root = tmp_path / "store"
    store = VisitorStore(root)
    key = store.new_key()
    stem = store.save(key, "m", MODEL)
    store.mint_link(key)
    folders = [root, stem.parent, root / "links"]
    assert all(stat.S_IMODE(os.lstat(p).st_mode) == 0o700 for p in folders)
    files = [*checkpoints.paths(stem), root / "secret", *(root / "links").iterdir()]
    assert files and all(stat.S_IMODE(os.lstat(p).st_mode) == 0o600 for p in files)


def test_a_store_folder_others_can_write_is_tightened(tmp_path):
    root = tmp_path / "store"
    root.mkdir()
    os.chmod(root, 0o777)  # noqa: S103  (the folder an attacker would want)
    store = VisitorStore(root)
    assert not store.problem
    assert stat.S_IMODE(os.lstat(root).st_mode) == 0o700


def test_the_default_store_is_a_folder_of_this_user_not_the_shared_temp(monkeypatch, tmp_path):
    monkeypatch.delenv("SEQLENS_VISITOR_MODELS", raising=False)
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    assert visitor_store.default_root() == tmp_path / "state" / "seqlens" / "visitor-models"
    monkeypatch.setenv("SEQLENS_VISITOR_MODELS", str(tmp_path / "chosen"))
    assert visitor_store.default_root() == tmp_path / "chosen"


def test_a_store_folder_of_another_user_is_refused(tmp_path, monkeypatch):
    root = tmp_path / "store"
    root.mkdir(mode=0o700)
    monkeypatch.setattr(os, "getuid", lambda: os.lstat(root).st_uid + 1)
    store = VisitorStore(root)
    assert "belongs to user" in store.problem
    with pytest.raises(StoreRefused, match="belongs to user"):
        store.save(store.new_key(), "m", MODEL)
    assert list(root.iterdir()) == []


def test_a_symlink_planted_as_the_store_is_never_followed(tmp_path):
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (tmp_path / "store").symlink_to(elsewhere)
    store = VisitorStore(tmp_path / "store")
    assert "symlink" in store.problem
    key = store.new_key()
    with pytest.raises(StoreRefused, match="symlink"):
        store.save(key, "m", MODEL)
    assert store.list(key) == []
    assert list(elsewhere.iterdir()) == []  # nothing written through it, not even the secret


def test_a_symlink_planted_as_a_visitor_folder_is_never_followed(tmp_path):
    root = tmp_path / "store"
    store = VisitorStore(root)
    key = store.new_key()
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    store.folder(key).symlink_to(elsewhere)
    with pytest.raises(StoreRefused, match="symlink"):
        store.save(key, "m", MODEL)
    assert list(elsewhere.iterdir()) == []
    # A model put there some other way is not read through the link either.
    checkpoints.save(elsewhere / "m", MODEL)
    assert store.list(key) == []
    with pytest.raises(checkpoints.CheckpointError):
        store.load(key, "m")


def test_a_symlinked_model_file_is_not_read(tmp_path):
    store = VisitorStore(tmp_path / "store")
    key = store.new_key()
    stem = store.save(key, "m", MODEL)
    outside = tmp_path / "outside.json"
    outside.write_bytes(checkpoints.paths(stem)[1].read_bytes())
    checkpoints.paths(stem)[1].unlink()
    checkpoints.paths(stem)[1].symlink_to(outside)
    assert store.list(key) == []
    with pytest.raises(checkpoints.CheckpointError, match="could not be read"):
        store.load(key, stem.name)


def test_folder_names_reveal_no_key(tmp_path):
    root = tmp_path / "store"
    store = VisitorStore(root)
    keys = [store.new_key() for _ in range(3)]
    for key in keys:
        store.save(key, "m", MODEL)
    names = {p.name for p in root.iterdir()}
    assert not any(key in name or name in key for key in keys for name in names)
    assert {hashlib.sha256(key.encode()).hexdigest() for key in keys} <= names


@pytest.mark.parametrize(
    "visitor", ["../etc", "abc", "A" * 32, "", "0" * 32, "0123456789abcdef" * 2, "0" * 64]
)
def test_only_keys_this_server_signed_name_a_folder(tmp_path, visitor):
    with pytest.raises(ValueError):
        VisitorStore(tmp_path).folder(visitor)


def test_a_key_signed_by_another_server_is_refused(tmp_path):
    mine, theirs = VisitorStore(tmp_path / "mine"), VisitorStore(tmp_path / "theirs")
    with pytest.raises(ValueError):
        mine.folder(theirs.new_key())
    assert VisitorStore(tmp_path / "mine").keys.check(mine.new_key())  # same secret, restarted


@pytest.mark.parametrize("name", ["../x", "a/b", "", "x" * 200])
def test_model_names_cannot_leave_the_folder(tmp_path, name):
    store = VisitorStore(tmp_path)
    with pytest.raises(ValueError):
        store.save(store.new_key(), name, MODEL)
    with pytest.raises(checkpoints.CheckpointError):
        store.load(store.new_key(), name)


def test_new_visitor_keys_are_distinct_and_signed(tmp_path):
    store = VisitorStore(tmp_path)
    keys = {store.new_key() for _ in range(100)}
    assert len(keys) == 100 and all(store.keys.check(key) for key in keys)


def test_a_malformed_description_is_skipped_by_the_listing(tmp_path):
    store = VisitorStore(tmp_path)
    key = store.new_key()
    good = store.save(key, "good", MODEL)
    for text in (
        '{"format": "seqlens.checkpoint", "version": 1, "model": {"d_model": 8.5}}',
        "[" * 100_000,
        '{"format": "seqlens.checkpoint", "version": 1, "saved_at": "x"}',
    ):
        store.folder(key).joinpath(f"bad{len(text)}.json").write_text(text)
    assert [m.stem for m in store.list(key)] == [good]


def test_the_models_of_one_run_share_their_time_stamp(tmp_path):
    store = VisitorStore(tmp_path)
    visitor = store.new_key()
    names = [store.save(visitor, f"copy-lag5-{k}", MODEL, "093000").name for k in ("rnn", "gru")]
    assert names == ["093000-copy-lag5-rnn", "093000-copy-lag5-gru"]
    assert store.save(visitor, "copy-lag5-rnn", MODEL, "093000").name == "093000-copy-lag5-rnn-2"
    for stamp in ("9300", "../../x", "0930001"):
        with pytest.raises(ValueError):
            store.save(visitor, "m", MODEL, stamp)


def test_token_files_hold_no_key_once_used(tmp_path):
    store = VisitorStore(tmp_path)
    key = store.new_key()
    store.redeem_link(store.mint_link(key))
    for path in (tmp_path / "links").iterdir():
        assert key not in path.read_text() and key not in path.name
        assert json.loads(path.read_text()).keys() == {"expires"}


def test_a_store_inside_a_folder_others_can_rename_in_is_refused(tmp_path):
    shared = tmp_path / "shared"
    shared.mkdir()
    os.chmod(shared, 0o777)  # noqa: S103  (writable by all, and not sticky as /tmp is)
    store = VisitorStore(shared / "store")
    assert "other users may rename" in store.problem
    with pytest.raises(StoreRefused):
        store.save(store.new_key(), "m", MODEL)


def test_a_symlink_planted_as_the_links_folder_is_never_followed(tmp_path):
    from models.serving.visitor_keys import LinkRefused

    store = VisitorStore(tmp_path / "store")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (tmp_path / "store" / "links").symlink_to(elsewhere)
    key = store.new_key()
    with pytest.raises(StoreRefused, match="symlink"):
        store.mint_link(key)
    with pytest.raises(LinkRefused):
        store.redeem_link("A" * 32)
    assert store.prune() == 0 and list(elsewhere.iterdir()) == []
