"""The positional-encoding lesson, driven through AppTest as a visitor would."""

from __future__ import annotations

import json

import numpy as np
from conftest import chart, chart_specs, messages, open_lesson, texts

from components.positional import scheme_label
from models.analysis import positional as pe
from models.nets.transformer import TransformerConfig

# The lesson's tabs and the charts each draws; only the open tab is drawn.
TABS = {
    "sentence": {"pe_heatmap", "pe_order_max", "pe_order_tokens"},
    "sinusoidal": {
        "pe_similarity_sinusoidal",
        "pe_similarity_learned",
        "pe_rotation_matrix",
        "pe_rotation_errors",
    },
    "rope": {"pe_rope_grid", "pe_rope_decay", "pe_extrapolation"},
    "trained": {"pe_trained_before", "pe_trained_after", "pe_trained_offset"},
}
CHARTS = set().union(*TABS.values())


def _drawn(at) -> set[str]:
    return {el.proto.id.rsplit("-", 1)[-1] for el in at.get("plotly_chart")}


def _every_tab(sentence: str, **query):
    """The lesson opened on each of its tabs by a link, in turn: (tab, AppTest)."""
    for tab in TABS:
        yield tab, open_lesson("positional", sentence, pe_view=tab, **query)


def _no_failure(at) -> None:
    assert not at.exception, [e.value for e in at.exception]
    assert not any(m.startswith("Something went wrong") for m in messages(at))


def _all_finite(spec: dict) -> bool:
    text = json.dumps(spec)
    return "NaN" not in text and "Infinity" not in text


def test_cjk_and_emoji_draw_every_chart_and_name_the_unknown_token():
    for tab, opened in _every_tab("我爱你 🙂 dog bites man"):
        _no_failure(opened)
        assert _drawn(opened) == TABS[tab], tab
        assert all(_all_finite(spec) for spec in chart_specs(opened))
    at = open_lesson("positional", "我爱你 🙂 dog bites man")
    assert _drawn(at) == TABS["sentence"]  # the tab a visitor first sees
    assert "我 · 爱 · 你 · [UNK] · dog · bites · man" in texts(at)
    assert any("[UNK]" in m for m in messages(at))
    assert "🙂" in texts(at)  # the hidden text is quoted through an inert sink
    tokens = chart(at, "pe_order_tokens")["data"][0]["x"]
    assert tokens[:3] == ["0:我", "1:爱", "2:你"]


def test_order_blindness_is_measured_live():
    at = open_lesson("positional", "dog bites man")
    _no_failure(at)
    bars = chart(at, "pe_order_max")["data"][0]
    # The bars are named in the visitor's language, not by the schemes' codes.
    named = dict(zip(bars["x"], _values(bars["y"]), strict=True))
    errors = {code: named[scheme_label(code)] for code in pe.SCHEMES}
    assert errors["none"] < 1e-5
    assert errors["sinusoidal"] > 1e-2 and errors["rope"] > 1e-2 and errors["learned"] > 1e-2


def test_the_order_bars_are_named_in_chinese():
    at = open_lesson("positional", "dog bites man", lang="zh")
    _no_failure(at)
    assert chart(at, "pe_order_max")["data"][0]["x"] == ["正弦", "可学习", "RoPE", "ALiBi", "无"]
    assert [trace["name"] for trace in chart(at, "pe_order_tokens")["data"]][:2] == [
        "正弦",
        "可学习",
    ]
    assert "man · bites · dog" in texts(at)


def test_a_512_token_input_is_capped_with_a_note_and_still_draws():
    at = open_lesson("positional", "a b " * 300)
    _no_failure(at)
    assert any("Truncated to 512 tokens" in m and "600" in m for m in messages(at))
    assert len(chart(at, "pe_order_tokens")["data"][0]["x"]) == 512
    for tab, opened in _every_tab("a b " * 300):
        _no_failure(opened)
        assert len(chart_specs(opened)) == len(TABS[tab])
        assert all(_all_finite(spec) for spec in chart_specs(opened))


def test_controls_come_from_the_link_and_open_their_tab():
    at = open_lesson("positional", "dog bites man", pe_offset="17")
    _no_failure(at)
    assert _drawn(at) == TABS["sinusoidal"]
    assert chart(at, "pe_rotation_matrix")["layout"]["title"]["text"] == "M_k for k = 17"
    at = open_lesson("positional", "dog bites man", pe_shift="1000")
    _no_failure(at)
    assert _drawn(at) == TABS["rope"]
    assert "1000" in chart(at, "pe_rope_grid")["layout"]["title"]["text"]
    at = open_lesson("positional", "dog bites man", pe_view="trained", pe_shift="1000")
    assert _drawn(at) == TABS["trained"]  # a tab the link names wins


def test_a_tab_is_named_in_either_language_and_a_keystroke_redraws_only_it():
    at = open_lesson("positional", "dog bites man", lang="zh", pe_view="RoPE, ALiBi and length")
    _no_failure(at)
    assert [tab.label for tab in at.tabs] == [
        "你的句子：编码表与词序",
        "相似度与平移",
        "RoPE、ALiBi 与长度",
        "训练之后",
    ]
    assert _drawn(at) == TABS["rope"]
    assert "307" in chart(at, "pe_rope_grid")["layout"]["title"]["text"]  # 8 positions at least
    at.text_input("sentence").input(
        "one two three four five six seven eight nine ten eleven twelve"
    ).run()
    _no_failure(at)
    assert _drawn(at) == TABS["rope"]
    assert "311" in chart(at, "pe_rope_grid")["layout"]["title"]["text"]  # one per token


def _values(y) -> list[float]:
    """Plotly 7 may send arrays as base64 (`bdata`)."""
    if isinstance(y, dict):
        import base64

        dtype = np.dtype(y["dtype"])
        return list(np.frombuffer(base64.b64decode(y["bdata"]), dtype=dtype))
    return list(y)


def test_the_example_pairs_are_tabled_with_each_encodings_distance_measured_anew():
    from models.nets.tokenizer import Tokenizer
    from models.nets.transformer import Transformer, TransformerConfig

    at = open_lesson("positional", "dog bites man")
    table = at.dataframe[0].value
    assert list(table.columns) == ["pair", "encoding", "distance of mean outputs"]
    tokenizer = Tokenizer()
    expected = []
    for first, second in (("dog bites man", "man bites dog"), ("我爱你", "你爱我")):
        for scheme in pe.SCHEMES:
            cfg = TransformerConfig(d_vocab=tokenizer.vocab_size, positional=scheme)
            model = Transformer(cfg, seed=0)
            a, b = (model(tokenizer.encode(s).ids).detach().numpy() for s in (first, second))
            distance = np.linalg.norm(a.mean(axis=0) - b.mean(axis=0))
            expected.append((f"{first} / {second}", scheme_label(scheme), distance))
    assert [tuple(row[:2]) for row in table.itertuples(index=False)] == [e[:2] for e in expected]
    np.testing.assert_allclose(table.iloc[:, 2], [e[2] for e in expected], rtol=1e-4, atol=1e-6)
    assert table.loc[table["encoding"] == scheme_label("none"), table.columns[2]].max() < 1e-4
    captions = " ".join(c.value for c in at.caption)
    assert "Two classic pairs, run live" in captions and "\n\n" in captions


def test_the_length_chart_draws_alibi_as_a_bias_below_not_as_a_similarity_of_zero():
    at = open_lesson("positional", "dog bites man", pe_view="rope", pe_built="32")
    _no_failure(at)
    spec = chart(at, "pe_extrapolation")
    (alibi,) = [trace for trace in spec["data"] if trace["name"] == "ALiBi"]
    assert alibi.get("yaxis") == "y2"
    assert spec["layout"]["yaxis2"]["title"]["text"] == "bias added to the score"
    distances = np.asarray(_values(alibi["x"]))
    np.testing.assert_allclose(_values(alibi["y"]), -(2.0**-8) * distances)
    above = [trace for trace in spec["data"] if trace.get("yaxis", "y") == "y"]
    assert {trace["name"] for trace in above} == {"sinusoidal", "learned", "RoPE", "none"}
    # The caption's ALiBi numbers, at distance 4 × 32: the two gentlest of the model's heads.
    slopes = pe.alibi_slopes(TransformerConfig(d_vocab=1).n_heads)
    (caption,) = [c.value for c in at.caption if c.value.startswith("Above, how alike")]
    assert f"e^(−m·r) = {np.exp(-slopes[-1] * 128):.2f}" in caption
    assert f"next gentlest (m = {slopes[-2]:.4f}) gives {np.exp(-slopes[-2] * 128):.2f}" in caption


def test_the_rotation_caption_names_the_offsets_it_measured():
    at = open_lesson("positional", "dog bites man", pe_view="sinusoidal")
    _no_failure(at)
    (caption,) = [c.value for c in at.caption if c.value.startswith("For every pos")]
    cfg = TransformerConfig(d_vocab=1)
    last = cfg.n_ctx // 2 - 1
    measured = pe.max_rotation_error(pe.sinusoidal_table(cfg.n_ctx, cfg.d_model), range(last + 1))
    assert f"over every k from 0 to {last} at once: {measured:.1e}" in caption


def test_the_trained_table_s_neighbour_cosines_are_quoted_not_called_random():
    """Training the induction model takes its neighbouring position vectors from a mean
    cosine near 0 to about 0.3: the caption quotes both numbers and claims nothing else."""
    from models.analysis import trained_sources as ts
    from models.training import checkpoints
    from models.training.train import CHECKPOINT_DIR

    trained = checkpoints.load(CHECKPOINT_DIR / "induction-transformer").model
    near = {
        when: float(ts.cosine_by_offset(ts.position_cosines(m.core.W_pos.numpy()))[1])
        for when, m in (("before", ts.untrained(trained)), ("after", trained))
    }
    assert near["after"] > 0.2 > abs(near["before"])
    at = open_lesson("positional", "dog bites man", pe_trained="induction-transformer")
    _no_failure(at)
    (caption,) = [c.value for c in at.caption if c.value.startswith("Each heatmap")]
    assert "still look random" not in caption
    assert f"{near['before']:.2f} before training and {near['after']:.2f} after" in caption


def test_the_first_chart_follows_the_sentence_typed():
    at = open_lesson("positional", "dog bites man")
    first = chart(at, "pe_heatmap")["layout"]["xaxis2"]
    assert first["ticktext"][:3] == ["0:dog", "1:bites", "2:man"]
    at.text_input(key="sentence").set_value("the cat sat on the warm mat").run()
    typed = chart(at, "pe_heatmap")
    assert typed["layout"]["xaxis2"]["ticktext"][:7] == [
        f"{i}:{w}" for i, w in enumerate(["the", "cat", "sat", "on", "the", "warm", "mat"])
    ]
    ends = {shape["x0"] for shape in typed["layout"]["shapes"]}
    assert ends == {6.5}, "the sentence's end moved with it"
