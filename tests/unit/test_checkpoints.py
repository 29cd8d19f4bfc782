"""Checkpoints: safetensors + JSON, an exact round trip, and clear refusals."""

from __future__ import annotations

import json
import pickle

import pytest
import torch

from models.nets.task_models import ModelSpec, SequenceModel
from models.training import checkpoints
from models.training.checkpoints import CheckpointError

SPECS = [
    ModelSpec(kind="lstm", n_in=6, n_out=6, d_model=8),
    ModelSpec(kind="gru", n_in=2, n_out=1, d_model=8, features=True),
    ModelSpec(kind="transformer", n_in=6, n_out=6, d_model=8, n_heads=2, n_ctx=10),
    ModelSpec(kind="encdec", n_in=7, n_out=7, d_model=8, n_heads=2, n_layers=1, n_ctx=6),
    ModelSpec(kind="ssm", n_in=6, n_out=6, d_model=8, n_ctx=10, positional="none"),
    ModelSpec(kind="linear", n_in=6, n_out=6, d_model=8, n_heads=2, n_ctx=10),
]


def _trained_looking(spec: ModelSpec) -> SequenceModel:
    """A model whose every tensor differs from what (spec, seed) builds, as after training."""
    model = SequenceModel(spec, seed=4)
    g = torch.Generator().manual_seed(1)
    with torch.no_grad():
        for p in model.parameters():
            p.add_(torch.randn(p.shape, generator=g))
    return model.freeze()


@pytest.mark.parametrize("spec", SPECS, ids=lambda s: s.kind)
def test_round_trip_is_exact(tmp_path, spec):
    model = _trained_looking(spec)
    checkpoints.save(tmp_path / "m", model, task={"name": "copy", "lag": 5}, metrics={"a": 0.5})
    loaded = checkpoints.load(tmp_path / "m")
    assert loaded.model.spec == spec and loaded.model.seed == 4
    assert loaded.task == {"name": "copy", "lag": 5} and loaded.metrics == {"a": 0.5}
    before, after = model.state_dict(), loaded.model.state_dict()
    assert list(before) == list(after)
    for name in before:
        assert torch.equal(before[name], after[name]), name
    assert not any(p.requires_grad for p in loaded.model.parameters())


def _saved(tmp_path):
    model = _trained_looking(SPECS[0])
    tensors, config = checkpoints.save(tmp_path / "m", model)
    return model, tensors, config


def test_a_renamed_pickle_is_refused_without_being_unpickled(tmp_path):
    model, tensors, _ = _saved(tmp_path)
    torch.save(model.state_dict(), tensors)  # a zip of pickles, as torch.save writes
    with pytest.raises(CheckpointError, match="pickle"):
        checkpoints.load(tmp_path / "m")

    class Boom:
        def __reduce__(self):
            return (exec, ("raise SystemExit('unpickled')",))

    tensors.write_bytes(pickle.dumps(Boom()))  # a plain pickle that would run code
    with pytest.raises(CheckpointError, match="pickle"):
        checkpoints.load(tmp_path / "m")


@pytest.mark.parametrize("keep", [0, 5, 100, -1])
def test_a_truncated_file_is_refused(tmp_path, keep):
    _, tensors, _ = _saved(tmp_path)
    data = tensors.read_bytes()
    tensors.write_bytes(data[:keep] if keep >= 0 else data[:-10])
    with pytest.raises(CheckpointError, match="truncated"):
        checkpoints.load(tmp_path / "m")


def test_tensors_that_do_not_match_the_config_are_refused(tmp_path):
    _, _, config_path = _saved(tmp_path)
    config = json.loads(config_path.read_text())
    config["model"]["d_model"] = 16  # the file holds d_model 8
    config_path.write_text(json.dumps(config))
    with pytest.raises(CheckpointError, match="wrong shapes: W_U"):
        checkpoints.load(tmp_path / "m")
    config["model"].update(d_model=8, kind="gru")  # an LSTM's gates named as a GRU's
    config_path.write_text(json.dumps(config))
    with pytest.raises(CheckpointError, match="missing tensors: .*core.W_hr"):
        checkpoints.load(tmp_path / "m")


def test_a_state_space_model_described_as_linear_attention_is_refused(tmp_path):
    model = _trained_looking(SPECS[4])
    _, config_path = checkpoints.save(tmp_path / "m", model)
    config = json.loads(config_path.read_text())
    config["model"].update(kind="linear", n_heads=2)
    config_path.write_text(json.dumps(config))
    with pytest.raises(CheckpointError, match="missing tensors: .*mixer.W_Q"):
        checkpoints.load(tmp_path / "m")
    config["model"].update(kind="ssm", positional="rope")  # a stack has no rotations
    config_path.write_text(json.dumps(config))
    with pytest.raises(CheckpointError, match="positions are learned or none"):
        checkpoints.load(tmp_path / "m")


def test_renamed_tensors_are_refused(tmp_path):
    from safetensors.torch import save_file

    model, tensors, _ = _saved(tmp_path)
    renamed = {name.replace("W_U", "W_out"): t for name, t in model.state_dict().items()}
    save_file({k: v.contiguous() for k, v in renamed.items()}, str(tensors))
    with pytest.raises(CheckpointError, match="missing tensors: W_U.*does not have: W_out"):
        checkpoints.load(tmp_path / "m")


@pytest.mark.parametrize(
    "text, message",
    [
        ("{not json", "not a JSON file"),
        ('{"format": "other"}', "not a SeqLens checkpoint"),
        ('{"format": "seqlens.checkpoint", "version": 99}', "version 99"),
        ('{"format": "seqlens.checkpoint", "version": 1, "model": {"kind": "cnn"}}', "no model"),
    ],
)
def test_a_bad_description_is_refused(tmp_path, text, message):
    _, _, config_path = _saved(tmp_path)
    config_path.write_text(text)
    with pytest.raises(CheckpointError, match=message):
        checkpoints.load(tmp_path / "m")


def test_missing_files_are_named(tmp_path):
    with pytest.raises(CheckpointError, match="m.json: no such file"):
        checkpoints.load(tmp_path / "m")
    _, tensors, _ = _saved(tmp_path)
    tensors.unlink()
    with pytest.raises(CheckpointError, match="m.safetensors: no such file"):
        checkpoints.load(tmp_path / "m")


def test_a_header_length_that_starts_like_a_pickle_still_reads():
    from safetensors.torch import save as save_tensors

    # The length's low byte is 0x80 for some header sizes: that alone is not a pickle.
    for width in range(1, 400):
        data = save_tensors({"x" * width: torch.zeros(1)})
        if data[0] == 0x80:
            assert set(checkpoints.check_header(data, "f")) == {"x" * width}
            return
    raise AssertionError("no header length with a 0x80 low byte was tried")


def _planted(tmp_path, **model) -> None:
    """A small real checkpoint whose description then claims the model `model` says."""
    _, _, config_path = _saved(tmp_path)
    config = json.loads(config_path.read_text())
    config["model"].update(model)
    config_path.write_text(json.dumps(config))


@pytest.fixture
def forbid_real_models(monkeypatch):
    """Call it, and from then on a SequenceModel may be built only on the meta device
    (shapes without storage)."""
    from models.nets import task_models

    real_init = task_models.SequenceModel.__init__

    def only_on_meta(self, *args, **kwargs):
        if torch.get_default_device().type != "meta":
            raise AssertionError("a model was built before the tensors were checked")
        real_init(self, *args, **kwargs)

    return lambda: monkeypatch.setattr(task_models.SequenceModel, "__init__", only_on_meta)


def test_a_planted_huge_description_is_refused_before_anything_is_built(
    tmp_path, forbid_real_models
):
    # 200 layers of d_model 512 beside a 7.7 KB tensor file: ~2.5 GB of float32 if built.
    _planted(tmp_path, kind="transformer", n_layers=200, d_model=512, n_heads=8, n_ctx=512)
    forbid_real_models()
    assert (tmp_path / "m.safetensors").stat().st_size < 10_000
    with pytest.raises(CheckpointError, match="n_layers must be between 1 and 8"):
        checkpoints.load(tmp_path / "m")


def test_a_large_description_within_the_limits_is_checked_against_the_header_first(
    tmp_path, forbid_real_models
):
    _planted(tmp_path, kind="transformer", n_layers=8, d_model=512, n_heads=8, n_ctx=2048)
    forbid_real_models()
    with pytest.raises(CheckpointError, match="does not match its JSON description"):
        checkpoints.load(tmp_path / "m")


@pytest.mark.parametrize(
    "setting, value, message",
    [
        ("d_model", 8.0, "d_model must be a whole number"),
        ("d_model", "8", "d_model must be a whole number"),
        ("n_in", True, "n_in must be a whole number"),
        ("n_layers", 0, "n_layers must be between 1"),
        ("n_ctx", 10**30, "n_ctx must be between 1"),
        ("kind", ["lstm"], "kind must be text"),
        ("features", "no", "features must be true or false"),
    ],
)
def test_a_description_s_settings_must_be_sizes_of_the_right_type(
    tmp_path, setting, value, message
):
    _planted(tmp_path, **{setting: value})
    with pytest.raises(CheckpointError, match=message):
        checkpoints.load(tmp_path / "m")


@pytest.mark.parametrize(
    "damage",
    [
        lambda header: header["W_U"].update(shape=["x"]),
        lambda header: header["W_U"].update(shape=[2**62, 2**62]),
        lambda header: header["W_U"].update(dtype="F64"),
        lambda header: header.update(W_U=[1, 2]),
        lambda header: header["W_U"].update(data_offsets=["a", None]),
    ],
    ids=["text-shape", "huge-shape", "dtype", "entry-not-object", "offsets"],
)
def test_a_damaged_tensor_header_is_a_checkpoint_error(tmp_path, damage):
    import struct

    _, tensors, _ = _saved(tmp_path)
    data = tensors.read_bytes()
    (size,) = struct.unpack("<Q", data[:8])
    header = json.loads(data[8 : 8 + size])
    damage(header)
    raw = json.dumps(header).encode()
    tensors.write_bytes(struct.pack("<Q", len(raw)) + raw + data[8 + size :])
    with pytest.raises(CheckpointError):
        checkpoints.load(tmp_path / "m")


@pytest.mark.parametrize(
    "text",
    [
        "[" * 100_000,
        '{"format": "seqlens.checkpoint", "version": 1, "model": [1, 2]}',
        '{"format": "seqlens.checkpoint", "version": 1, "model": {"kind": "lstm"}, "seed": 1.5}',
        '{"format": "seqlens.checkpoint", "version": 1, "pad": "' + "x" * 300_000 + '"}',
    ],
    ids=["deep", "model-not-object", "float-seed", "oversized"],
)
def test_a_malformed_description_is_a_checkpoint_error(tmp_path, text):
    _, _, config_path = _saved(tmp_path)
    config_path.write_text(text)
    with pytest.raises(CheckpointError):
        checkpoints.load(tmp_path / "m")
