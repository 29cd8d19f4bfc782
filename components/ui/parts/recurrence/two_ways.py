"""Part ①, "The same output, two ways": linear attention, retention and the selective SSM on
the visitor's sentence, each computed in parallel and as a recurrence, and what each form
costs (the state it carries, its time per token, the steps training runs in a row)."""

from __future__ import annotations

import numpy as np
import streamlit as st

from components.i18n import t
from components.recurrence.two_ways import log_lines_figure, outputs_grid, timing_figure
from components.summaries import number
from components.ui.charts import load_grid_charts, show_chart
from components.ui.linked import linked_slider
from components.ui.parts.recurrence.reading import Reading, head_control, head_name
from components.ui.runs import recurrence as runs
from components.ui.tour import held_back, offer, show_held_back
from models.analysis import recurrence_cost as rc

FLOAT32_EPS = float(np.finfo(np.float32).eps)
CHUNKS = (1, 16, 4)  # retention's chunk size B: lowest, highest, default
MODELS = ("la", "ret", "ssm")


def _controls(n_heads: int) -> tuple[int, int]:
    head_col, chunk_col = st.columns(2)
    head = head_control(head_col, t("recurrence.two_ways.head"), n_heads)
    chunk = linked_slider(chunk_col, t("recurrence.two_ways.chunk"), *CHUNKS, key="rr_chunk")
    return head, chunk


def _metrics(run: dict, chunk: int) -> None:
    diffs = run["differences"]
    st.markdown(t("recurrence.two_ways.metrics_head"))
    shown = (
        ("la_metric", diffs["la"]),
        ("ret_metric", diffs["ret"]),
        ("chunk_metric", diffs["ret_chunk"]),
        ("ssm_metric", diffs["ssm"]),
    )
    for column, (name, value) in zip(st.columns(len(shown)), shown, strict=True):
        column.metric(t(f"recurrence.two_ways.{name}", chunk=chunk), f"{value:.2e}")
    # Rounding is relative: a difference means something against the outputs' size.
    out = run["outputs"]
    largest = {m: float(np.abs(out[f"{m}_parallel"]).max()) or 1.0 for m in MODELS}
    relative = [diffs["la"] / largest["la"], diffs["ret"] / largest["ret"]]
    relative += [diffs["ret_chunk"] / largest["ret"], diffs["ssm"] / largest["ssm"]]
    st.caption(
        t(
            "recurrence.two_ways.metrics_note",
            dtype=run["dtype"],
            eps=FLOAT32_EPS,
            relative=" · ".join(f"{r:.1e}" for r in relative),
        )
    )


def _outputs_chart(forms_drawn: dict, read: Reading, model: str, title: str, key: str) -> None:
    """One model's forms side by side, its summary from the numbers drawn."""
    arrays = list(forms_drawn.values())
    diff = max(float(np.abs(a - arrays[0]).max()) for a in arrays[1:])
    everything = np.stack(arrays)
    names = [f"{i}:{token}" for i, token in enumerate(read.tokens)]
    show_chart(
        outputs_grid(
            forms_drawn,
            read.tokens,
            title=title,
            token_title=t("recurrence.two_ways.token_axis"),
            dim_title=t("recurrence.two_ways.dim_axis"),
            value_title=t("recurrence.two_ways.value"),
        ),
        key=key,
        summary=t(
            "recurrence.two_ways.outputs_summary",
            model=t(f"recurrence.two_ways.{model}"),
            low=number(everything.min()),
            high=number(everything.max()),
            diff=f"{diff:.2e}",
        ),
        data={"token": names, "dimension": np.arange(arrays[0].shape[1])}
        | {name: values for name, values in forms_drawn.items()},
    )


def _outputs(run: dict, read: Reading, head: int, chunk: int) -> None:
    out = run["outputs"]
    parallel, recurrent = t("recurrence.two_ways.parallel"), t("recurrence.two_ways.recurrent")
    la_col, ret_col = st.columns([2, 3])
    with la_col:
        _outputs_chart(
            {parallel: out["la_parallel"][head], recurrent: out["la_recurrent"][head]},
            read,
            "la",
            t("recurrence.two_ways.la_title", head=head_name(head)),
            "rr_la_forms",
        )
    with ret_col:
        _outputs_chart(
            {
                parallel: out["ret_parallel"][head],
                recurrent: out["ret_recurrent"][head],
                t("recurrence.two_ways.chunkwise", chunk=chunk): out["ret_chunkwise"][head],
            },
            read,
            "ret",
            t("recurrence.two_ways.ret_title", head=head_name(head)),
            "rr_ret_forms",
        )
    _outputs_chart(
        {
            t("recurrence.two_ways.scan"): out["ssm_parallel"],
            t("recurrence.two_ways.loop"): out["ssm_sequential"],
        },
        read,
        "ssm",
        t("recurrence.two_ways.ssm_title", n=out["ssm_parallel"].shape[1]),
        "rr_ssm_forms",
    )


def _state_chart(run: dict, n: int, n_heads: int, d_head: int) -> dict:
    """The state carried against L, by formula; returns the formula's numbers at L = n."""
    lengths = rc.lengths_with(n)
    floats = rc.state_floats(lengths, n_heads, d_head, **run["ssm"])
    names = {model: t(f"recurrence.two_ways.{model}") for model in (*MODELS, "kv")}
    curves = {
        names["la"]: floats["linear_attention"],
        names["ret"]: floats["retention"],
        names["ssm"]: floats["ssm"],
        names["kv"]: floats["kv_cache"],
    }
    at = {name: int(values[lengths == n][0]) for name, values in floats.items()}
    offer("recurrence.state", n=n, lengths=lengths, floats=floats)
    if held_back("rr_state"):  # it answers the tour step's question
        show_held_back()
        return at
    show_chart(
        log_lines_figure(
            curves,
            lengths,
            n,
            t("recurrence.two_ways.your_length", n=n),
            title=t("recurrence.two_ways.state_title"),
            x_title=t("recurrence.two_ways.length_axis"),
            y_title=t("recurrence.two_ways.floats_axis"),
            # Retention's and the SSM's states are the same size here: drawn apart.
            dashes={names["ret"]: "dot", names["ssm"]: "dashdot", names["kv"]: "dash"},
        ),
        key="rr_state",
        summary=t(
            "recurrence.two_ways.state_summary",
            n=n,
            la=at["linear_attention"],
            ret=at["retention"],
            ssm=at["ssm"],
            kv=at["kv_cache"],
            long=int(lengths[-1]),
            kv_long=int(floats["kv_cache"][-1]),
        ),
        data={"length": lengths} | {name: values for name, values in floats.items()},
    )
    return at


def _state_measured(run: dict, at: dict, n: int) -> None:
    measured = run["state_floats"]
    agree = all(measured[name] == at[name] for name in at)
    st.caption(
        t(
            "recurrence.two_ways.state_measured",
            n=n,
            la=measured["linear_attention"],
            ret=measured["retention"],
            ssm=measured["ssm"],
            kv=measured["kv_cache"],
        )
        + " "
        + t("recurrence.two_ways.state_agree" if agree else "recurrence.two_ways.state_differ")
    )


def _times(n: int) -> dict[int, dict]:
    with st.spinner(t("recurrence.two_ways.measuring")):
        return {length: runs.per_token_times(length) for length in sorted({n, rc.LONG_LENGTH})}


def _time_chart(times: dict[int, dict]) -> None:
    names = {model: t(f"recurrence.two_ways.{model}") for model in MODELS}
    keys = dict(zip(MODELS, rc.MODELS, strict=True))
    series = {}
    for length, measured in times.items():
        for form in ("step", "parallel"):
            label = t(f"recurrence.two_ways.{form}_series", n=length)
            series[label] = {names[m]: measured[f"{keys[m]}_{form}_s"] for m in MODELS}
    long = times[max(times)]
    show_chart(
        timing_figure(
            series,
            title=t("recurrence.two_ways.time_title"),
            y_title=t("recurrence.two_ways.time_axis"),
        ),
        key="rr_time",
        summary=t(
            "recurrence.two_ways.time_summary",
            n=max(times),
            **{
                f"{m}_{form}": number(1e6 * long[f"{keys[m]}_{form}_s"])
                for m in MODELS
                for form in ("step", "parallel")
            },
        ),
        data={
            "series": list(series),
            **{names[m]: [1e6 * series[s][names[m]] for s in series] for m in MODELS},
        },
    )
    st.caption(t("recurrence.two_ways.time_note", repeats=long["repeats"], threads=long["threads"]))


def _steps_chart(n: int, chunk: int) -> dict:
    lengths = rc.lengths_with(n)
    steps = rc.sequential_steps(lengths, chunk)
    labels = {
        "recurrent": t("recurrence.two_ways.recurrent_steps"),
        "parallel": t("recurrence.two_ways.parallel_steps"),
        "scan": t("recurrence.two_ways.scan_steps"),
        "chunkwise": t("recurrence.two_ways.chunk_steps", chunk=chunk),
    }
    at = {name: int(values[lengths == n][0]) for name, values in steps.items()}
    last = {name: int(values[-1]) for name, values in steps.items()}
    offer("recurrence.steps", n=n, lengths=lengths, steps=steps)
    show_chart(
        log_lines_figure(
            {labels[name]: values for name, values in steps.items()},
            lengths,
            n,
            t("recurrence.two_ways.your_length", n=n),
            title=t("recurrence.two_ways.steps_title"),
            x_title=t("recurrence.two_ways.steps_length_axis"),
            y_title=t("recurrence.two_ways.steps_axis"),
        ),
        key="rr_steps",
        summary=t(
            "recurrence.two_ways.steps_summary",
            n=n,
            chunk=chunk,
            long=int(lengths[-1]),
            **{name: at[name] for name in at},
            **{f"{name}_long": last[name] for name in last},
        ),
        data={"length": lengths} | dict(steps),
    )
    return last


def draw(read: Reading) -> None:
    cfg = runs.lesson_transformer().cfg
    n = read.n_tokens
    st.subheader(t("recurrence.two_ways.title"))
    st.caption(t("recurrence.two_ways.lead"))
    head, chunk = _controls(cfg.n_heads)
    run = runs.two_ways(read.ids, chunk)
    # The outputs first, then their differences: the lesson's first chart starts in view.
    load_grid_charts()
    _outputs(run, read, head, chunk)
    _metrics(run, chunk)

    st.subheader(t("recurrence.two_ways.cost_title"))
    state_col, time_col = st.columns(2)
    with state_col:
        at = _state_chart(run, n, cfg.n_heads, cfg.d_head)
        _state_measured(run, at, n)
    with time_col:
        times = _times(n)
        _time_chart(times)
    steps_col, text_col = st.columns(2)
    with steps_col:
        last = _steps_chart(n, chunk)
    long = times[rc.LONG_LENGTH]
    diffs = run["differences"]
    offer("recurrence.two_ways", n=n, differences=diffs, chunk=chunk, times=times)
    if held_back("rr_state"):  # the explanation quotes the KV cache at the longest length
        return
    long_state = rc.state_floats([last["recurrent"]], cfg.n_heads, cfg.d_head, **run["ssm"])
    text_col.markdown(
        t(
            "recurrence.two_ways.explain",
            la=f"{diffs['la']:.1e}",
            ret=f"{diffs['ret']:.1e}",
            ssm=f"{diffs['ssm']:.1e}",
            la_state=run["state_floats"]["linear_attention"],
            long=last["recurrent"],
            kv_long=int(long_state["kv_cache"][0]),
            time_length=rc.LONG_LENGTH,
            la_step=number(1e6 * long["linear_attention_step_s"]),
            la_parallel=number(1e6 * long["linear_attention_parallel_s"]),
            scan_long=last["scan"],
        )
    )
    _claims(text_col, run, times, n)


def _claims(where, run: dict, times: dict, n: int) -> None:
    """What the source articles say of these models, beside what this page measures."""
    short, long = times[n], times[rc.LONG_LENGTH]
    where.markdown(
        t(
            "recurrence.two_ways.claims",
            retention=run["state_floats"]["retention"],
            n=n,
            long=rc.LONG_LENGTH,
            step_short=number(1e6 * short["retention_step_s"]),
            step_long=number(1e6 * long["retention_step_s"]),
        )
    )
