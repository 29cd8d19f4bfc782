"""docs/DESIGN.md's glossary held to real traces of tiny models.

Every table of the glossary lists names with a shape written in symbols (`[n_heads, pos,
d_head]`) and a "When" column. For each table the tests below build the traces it describes
from tiny configs, put the configs' numbers in for the symbols, and check that every name the
table lists is in some trace (in every trace when its row says "always") with the stated shape,
and that every name a trace holds is listed.
"""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path

import numpy as np
import pytest
import torch

from models.analysis import trained_sources as ts
from models.analysis.attention_stats import head_statistics
from models.analysis.gradient_flow import (
    clip_summary,
    recurrent_gradient_flow,
    transformer_gradient_flow,
)
from models.analysis.kv_cache import generate, lm_head
from models.analysis.masks import head_steps
from models.analysis.positional import order_effect, rotation_fit
from models.analysis.trained_attention import TrainedAttention
from models.nets.hf_models import AttentionModel
from models.nets.pretrained import stack_patterns
from models.nets.recurrent import Recurrent, RecurrentConfig
from models.nets.transformer import EncoderDecoder, Transformer, TransformerConfig
from models.training import checkpoints
from models.training.train import CHECKPOINT_DIR

DESIGN = Path(__file__).resolve().parents[2] / "docs" / "DESIGN.md"
TINY = dict(d_model=8, n_heads=2, d_head=4, n_layers=2, n_ctx=16, d_vocab=11, d_mlp=12)
IDS = [1, 2, 3, 4, 5]
SOURCE = [6, 7, 8]

# --- reading the glossary ---------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class Row:
    name: str
    shape: str
    when: str


def glossary_tables(text: str) -> dict[tuple[str, int], list[Row]]:
    """Every table under the glossary, by (its `###` heading, its place under it)."""
    glossary = text.split("\n## Glossary", 1)[1].split("\n## ", 1)[0]
    tables: dict[tuple[str, int], list[Row]] = {}
    heading, count, rows = None, 0, None
    for line in glossary.splitlines():
        if line.startswith("### "):
            heading, count, rows = line[4:].strip(), 0, None
        elif line.startswith("|") and heading is not None:
            cells = [c.strip() for c in re.split(r"(?<!\\)\|", line.strip())[1:-1]]
            if cells[0] == "Name":
                rows = tables[(heading, count)] = []
                count += 1
            elif rows is not None and not set(cells[0]) <= set("-: "):
                rows.append(Row(cells[0].strip("`"), cells[1].strip("`"), cells[2]))
        else:
            rows = None
    return tables


def concrete_names(row: Row, n_layers: int) -> list[str]:
    if "{l}" in row.name:
        return [row.name.replace("{l}", str(layer)) for layer in range(n_layers)]
    return [row.name.replace("{last}", str(n_layers - 1))]


def _size(expr: str, symbols: dict) -> int:
    """A dimension written as symbols and whole numbers added or subtracted (`n_pos - k`)."""
    total, sign = 0, 1
    for part in re.findall(r"[+-]|[^\s+-]+", expr):
        if part in "+-":
            sign = 1 if part == "+" else -1
        else:
            total += sign * (int(part) if part.isdigit() else int(symbols[part]))
    return total


def _dims(spec: str, symbols: dict) -> tuple[int, ...]:
    inner = spec.strip()
    assert inner.startswith("[") and inner.endswith("]"), f"not a shape: {spec!r}"
    return tuple(_size(d, symbols) for d in inner[1:-1].split(","))


def shape_problem(value, spec: str, symbols: dict) -> str | None:
    """What is wrong with `value` for the shape `spec`, or None."""
    if spec == "scalar":
        ok = value is None or isinstance(value, (int, float)) or np.ndim(value) == 0
        return None if ok else f"not a scalar: shape {np.shape(value)}"
    if "×" in spec:  # `n × [..., rows, ...]`: a list of n arrays, `rows` per element
        count, inner = (part.strip() for part in spec.split("×", 1))
        n = _size(count, symbols)
        if len(value) != n:
            return f"{len(value)} elements, not {n}"
        for element, rows in zip(value, symbols["rows"], strict=True):
            want = _dims(inner, {**symbols, "rows": rows})
            if np.shape(element) != want:
                return f"an element of shape {np.shape(element)}, not {want}"
        return None
    want = _dims(spec, symbols)
    return None if np.shape(value) == want else f"shape {np.shape(value)}, not {want}"


def table_problems(rows: list[Row], traces: list[tuple[dict, dict]]) -> list[str]:
    """Where `rows` and `traces` ((trace, symbols) each) disagree."""
    problems = []
    seen: set[str] = set()
    for trace, symbols in traces:
        listed = {}
        for row in rows:
            for name in concrete_names(row, symbols.get("n_layers", 1)):
                listed[name] = row
        for key in trace:
            if key not in listed:
                problems.append(f"{key}: in the trace, not in the glossary")
        for name, row in listed.items():
            if name not in trace:
                if row.when == "always":
                    problems.append(f"{name}: listed as always there, missing")
                continue
            seen.add(row.name)
            wrong = shape_problem(trace[name], row.shape, symbols)
            if wrong:
                problems.append(f"{name}: {wrong} (glossary: {row.shape})")
    problems += [f"{row.name}: in no trace" for row in rows if row.name not in seen]
    return problems


@pytest.fixture(scope="module")
def tables():
    return glossary_tables(DESIGN.read_text(encoding="utf-8"))


CHECKED = {
    ("Transformer", 0),
    ("Attention models", 0),
    ("Recurrent", 0),
    ("Gradient flow", 0),
    ("Gradient flow", 1),
    ("One head's steps", 0),
    ("Head statistics", 0),
    ("Positional facts", 0),
    ("KV cache", 0),
}


def test_every_glossary_table_is_checked_here(tables):
    assert set(tables) == CHECKED
    assert all(tables.values())


# --- the traces ---------------------------------------------------------------------------


def transformer_symbols(cfg: TransformerConfig, **sizes) -> dict:
    return {name: getattr(cfg, name) for name in TINY} | sizes


def split_prefixed(cache: dict, prefix: str) -> dict:
    return {k.removeprefix(prefix): v for k, v in cache.items() if k.startswith(prefix)}


@pytest.fixture(scope="module")
def transformer_traces():
    """(trace, symbols) of an encoder with added sinusoids, a RoPE decoder (no position
    vectors) and an encoder-decoder's two halves (cross-attention)."""
    out = []
    for positional, causal in (("sinusoidal", False), ("rope", True)):
        cfg = TransformerConfig(**TINY, positional=positional, causal=causal)
        _, cache = Transformer(cfg, seed=1).run_with_cache(IDS)
        out.append((cache, transformer_symbols(cfg, pos=len(IDS))))
    model = EncoderDecoder(TransformerConfig(**TINY), seed=2)
    _, cache = model.run_with_cache(SOURCE, IDS)
    cfg = model.decoder.cfg
    out.append((split_prefixed(cache, "encoder."), transformer_symbols(cfg, pos=len(SOURCE))))
    decoder = split_prefixed(cache, "decoder.")
    out.append((decoder, transformer_symbols(cfg, pos=len(IDS), source_pos=len(SOURCE))))
    assert len(cache) == len(out[-2][0]) + len(decoder)
    return out


def test_the_transformer_table_is_the_transformers_trace(tables, transformer_traces):
    assert table_problems(tables[("Transformer", 0)], transformer_traces) == []


def test_a_shape_edited_in_the_doc_is_caught(tables, transformer_traces):
    rows = [
        dataclasses.replace(row, shape="[pos, n_heads, d_head]")
        if row.name == "blocks.{l}.attn.hook_q"
        else row
        for row in tables[("Transformer", 0)]
    ]
    problems = table_problems(rows, transformer_traces)
    assert problems and all("attn.hook_q" in p for p in problems)
    unlisted = [row for row in tables[("Transformer", 0)] if row.name != "hook_output"]
    assert table_problems(unlisted, transformer_traces)


def attention_symbols(model, trace: dict) -> dict:
    cfg = model.cfg
    return dict(
        pos=len(trace["tokens"]), n_layers=cfg.n_layers, n_heads=cfg.n_heads, d_model=cfg.d_model
    )


@pytest.fixture(scope="module")
def bert_trace(tmp_path_factory):
    from models.nets.tiny import save_tiny_model

    folder = save_tiny_model("bert", tmp_path_factory.mktemp("models") / "tiny-bert")
    model = AttentionModel(folder)
    trace = model.run_with_cache(model.tokenize("the cat sat on the mat"))
    return trace, attention_symbols(model, trace)


def test_the_attention_models_table_is_what_both_kinds_of_model_return(tables, bert_trace):
    trained = TrainedAttention(checkpoints.load(CHECKPOINT_DIR / ts.SHIPPED_INDUCTION))
    trace = trained.run_with_cache(trained.tokenize("anything"))
    traces = [bert_trace, (trace, attention_symbols(trained, trace))]
    assert table_problems(tables[("Attention models", 0)], traces) == []


def recurrent_model(cell: str) -> Recurrent:
    return Recurrent(RecurrentConfig(cell=cell, num_inputs=5, num_hiddens=6), seed=1)


X = torch.randn(7, 5, generator=torch.Generator().manual_seed(0))
RECURRENT_SYMBOLS = dict(T=7, num_inputs=5, num_hiddens=6)


def test_the_recurrent_table_is_every_cells_trace(tables):
    traces = []
    for cell in ("rnn", "lstm", "gru"):
        model = recurrent_model(cell)
        traces.append((model.run_with_cache(X)[1], RECURRENT_SYMBOLS))
        traces.append((model.forward_numpy(X.numpy()), RECURRENT_SYMBOLS))
    assert table_problems(tables[("Recurrent", 0)], traces) == []


@pytest.fixture(scope="module")
def flows(tables):
    """Gradient flow of each recurrent cell (one with spectra) without the names the
    recurrent table lists, and of the Transformer."""
    recurrent_names = {row.name for row in tables[("Recurrent", 0)]}
    traces = []
    for cell, spectra in (("rnn", False), ("lstm", True), ("gru", True)):
        flow = recurrent_gradient_flow(recurrent_model(cell), X, tau=5, spectra=spectra)
        assert recurrent_names & set(flow) >= {"H"}
        rest = {k: v for k, v in flow.items() if k not in recurrent_names}
        traces.append((rest, {**RECURRENT_SYMBOLS, "J": len(flow.get("jacobian_steps", []))}))
    cfg = TransformerConfig(**TINY)
    embeddings = torch.randn(6, cfg.d_model, generator=torch.Generator().manual_seed(1))
    flow = transformer_gradient_flow(Transformer(cfg), embeddings, tau=4)
    traces.append((flow, dict(T=6, num_inputs=cfg.d_model)))
    return traces


def test_the_gradient_flow_table_is_what_both_flows_return(tables, flows):
    assert table_problems(tables[("Gradient flow", 0)], flows) == []


def test_the_clipping_table_is_clip_summary(tables, flows):
    flow, _ = flows[0]
    summary = clip_summary(flow["grad_X_rows"], flow["tau"], 0.1)
    traces = [(summary, {"tau": flow["tau"]})]
    assert table_problems(tables[("Gradient flow", 1)], traces) == []


def test_the_steps_table_is_one_heads_steps_in_self_and_cross_attention(tables, transformer_traces):
    encoder, symbols = transformer_traces[0]
    self_steps = head_steps(encoder, "blocks.1.attn", 1, encoder["blocks.1.ln1.hook_normalized"])
    decoder, cross = transformer_traces[3]
    cross_steps = head_steps(
        decoder, "blocks.0.cross_attn", 0, decoder["blocks.0.ln_cross.hook_normalized"]
    )
    traces = [
        (self_steps, {**symbols, "key_pos": symbols["pos"]}),
        (cross_steps, {**cross, "key_pos": cross["source_pos"]}),
    ]
    assert table_problems(tables[("One head's steps", 0)], traces) == []


def test_the_head_statistics_table_is_head_statistics(tables, bert_trace):
    trace, symbols = bert_trace
    traces = [(head_statistics(stack_patterns(trace)), symbols)]
    assert table_problems(tables[("Head statistics", 0)], traces) == []


def test_the_positional_table_is_rotation_fit_and_order_effect(tables):
    fit = rotation_fit(3, 8, 12)
    rng = np.random.default_rng(0)
    outputs, perm = rng.standard_normal((5, 8)), np.array([4, 3, 2, 1, 0])
    effect = order_effect(outputs, outputs[perm], perm)
    traces = [(fit, dict(k=3, d_model=8, n_pos=12)), (effect, dict(pos=5))]
    assert table_problems(tables[("Positional facts", 0)], traces) == []


def test_the_kv_cache_table_is_a_generations_fields(tables):
    cfg = TransformerConfig(**TINY, causal=True)
    generation = generate(Transformer(cfg), lm_head(cfg), [1, 2, 3], 4)
    fields = {f.name: getattr(generation, f.name) for f in dataclasses.fields(generation)}
    symbols = dict(n_prompt=3, n_new=4, d_head=cfg.d_head, rows=list(generation.cache_rows))
    assert table_problems(tables[("KV cache", 0)], [(fields, symbols)]) == []
