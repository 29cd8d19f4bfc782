"""Part ⑤, "Trained, not only random": what the lesson's kinds of model do once trained. The
measured table (held-out accuracy on selective copying and induction; time per training
step and per generated token at two lengths), the trained selective SSM's first layer
reading one held-out selective-copying sequence, and the source articles' claims against
the table. The visitor's sentence plays no part here."""

from __future__ import annotations

import numpy as np
import streamlit as st

from components.grid import position_labels
from components.i18n import t
from components.labels import escape_label, markdown_literal
from components.recurrence.flow import model_colors
from components.recurrence.selective import state_grid, state_grid_summary
from components.recurrence.trained import (
    accuracy_figure,
    accuracy_summary,
    answers_figure,
    answers_summary,
    duration,
    kind_means,
    percent,
    reading_figure,
    reading_summary,
    timing_figure,
    timing_summary,
)
from components.summaries import number
from components.ui.charts import load_grid_charts, show_chart
from components.ui.linked import linked_slider
from components.ui.parts.recurrence.reading import Reading
from components.ui.runs import recurrence as runs
from models.training.checkpoints import CheckpointError

SEQ_KEY = "rr_seq"
COMMAND = "python -m models.training.recurrence_table"
TABLE_PATH = "assets/checkpoints/recurrence_table.json"
MEASURES = ("training_step_s", "token_whole_prefix_s", "token_carried_state_s")
NEW_KINDS = ("ssm", "linear")  # this lesson's layers, in the gradient-flow part's colours
POSITION_KINDS = ("symbol", "blank", "recall")
MARGIN = 0.02  # how close to the Transformer's accuracy counts as "within" (2 points)


def _kind(kind: str) -> str:
    return t(f"recurrence.trained.kind.{kind}")


def _task_title(table: dict, task: str) -> str:
    length = table["settings"]["tasks"][task].get("length", "?")
    return t(f"recurrence.trained.task.{task}", length=length)


def _accuracy_or_word(value) -> str:
    return t("recurrence.trained.not_trained") if value is None else percent(value)


# --- the measured table -------------------------------------------------------------------


def _table_about(table: dict) -> str:
    machine, s = table.get("machine", {}), table.get("settings", {})
    return t(
        "recurrence.trained.table_about",
        date=markdown_literal(table.get("date", "?")),
        machine=markdown_literal(
            f"{machine.get('processor', '?')}, {machine.get('platform', '?')}"
        ),
        python=markdown_literal(machine.get("python", "?")),
        torch=markdown_literal(machine.get("torch", "?")),
        threads=s.get("threads", "?"),
        repeats=s.get("repeats", "?"),
        warmup=s.get("warmup", "?"),
        command=COMMAND,
        file=TABLE_PATH,
    )


def _accuracy_chart(table: dict, kinds: list[str]) -> None:
    names = {kind: _kind(kind) for kind in kinds}
    tasks = {task: _task_title(table, task) for task in table["accuracy"]}
    accuracy = {
        tasks[task]: {names[k]: row.get(k) for k in kinds}
        for task, row in table["accuracy"].items()
    }
    chance = {tasks[task]: value for task, value in table.get("chance", {}).items()}
    colors = model_colors(list(names.values()), [names[k] for k in NEW_KINDS if k in names])
    show_chart(
        accuracy_figure(
            accuracy,
            chance,
            colors,
            t("recurrence.trained.not_trained"),
            title=t("recurrence.trained.accuracy_figure"),
            y_title=t("recurrence.trained.accuracy_axis"),
        ),
        key="rr_trained_accuracy",
        summary=accuracy_summary(accuracy, chance),
        data={"kind": kinds}
        | {task: [row.get(k) for k in kinds] for task, row in table["accuracy"].items()},
    )


def _timing_chart(table: dict, kinds: list[str]) -> None:
    lengths = [str(n) for n in table["settings"]["lengths"]]
    seconds = {_kind(k): table["seconds"][k] for k in kinds}
    measures = {m: t(f"recurrence.trained.measure.{m}") for m in MEASURES}
    show_chart(
        timing_figure(
            seconds,
            measures,
            {n: t("recurrence.trained.length", length=n) for n in lengths},
            t("recurrence.trained.no_step"),
            title=t("recurrence.trained.timing_figure"),
            y_title=t("recurrence.trained.timing_axis"),
        ),
        key="rr_trained_timing",
        summary=timing_summary(seconds, measures, lengths),
        data={"kind": kinds}
        | {
            f"{m}_L{n}": [table["seconds"][k][n].get(m) for k in kinds]
            for m in MEASURES
            for n in lengths
        },
    )
    st.caption(_timing_text(table, lengths))


def _time(table: dict, kind: str, length: str, measure: str) -> str:
    value = table["seconds"].get(kind, {}).get(length, {}).get(measure)
    return "—" if value is None else duration(value)


def _timing_text(table: dict, lengths: list[str]) -> str:
    short, long = lengths[0], lengths[-1]
    return t(
        "recurrence.trained.timing_explain",
        long=long,
        short=short,
        tr_whole=_time(table, "transformer", long, "token_whole_prefix_s"),
        ssm_whole=_time(table, "ssm", long, "token_whole_prefix_s"),
        rnn_step=_time(table, "rnn", long, "token_carried_state_s"),
        tr_step=_time(table, "transformer", long, "token_carried_state_s"),
        tr_step_short=_time(table, "transformer", short, "token_carried_state_s"),
    )


# --- the trained SSM on one held-out sequence ---------------------------------------------


def _pick_sequence() -> int:
    """The held-out sequence the visitor picked, 1 … SHOWN_SEQUENCES (a link kept to it),
    as an index into the runs' list."""
    shown = linked_slider(
        st,
        t("recurrence.trained.seq"),
        1,
        runs.SHOWN_SEQUENCES,
        1,
        key=SEQ_KEY,
        help=t("recurrence.trained.seq_help", n=runs.SHOWN_SEQUENCES),
    )
    return int(shown) - 1


def _answer_marks(reading: dict, vocab: tuple[str, ...]) -> dict[int, str]:
    """What the model writes at each answer slot, and whether it is right (escaped)."""
    pairs = zip(reading["slots"], reading["predicted"], reading["truth"], strict=True)
    return {int(s): escape_label(vocab[p]) + ("<br>✓" if p == w else "<br>✗") for s, p, w in pairs}


def _reading_charts(reading: dict, vocab: tuple[str, ...], kind_names: dict) -> None:
    names = position_labels([vocab[int(i)] for i in reading["ids"]])  # text, never markup
    delta, kept, kinds = reading["delta_mean"], reading["kept_mean"], reading["kinds"]
    show_chart(
        reading_figure(
            delta,
            kept,
            [escape_label(name) for name in names],
            kinds,
            kind_names,
            _answer_marks(reading, vocab),
            titles=[t("recurrence.trained.row_delta"), t("recurrence.trained.row_kept")],
            title=t("recurrence.trained.reading_figure"),
        ),
        key="rr_trained_reading",
        summary=reading_summary(delta, kept, kinds, kind_names),
        data={"position": names, "kind": list(kinds), "delta": delta, "kept": kept},
    )
    truth, predicted = reading["truth"], reading["predicted"]
    slot_names = [t("recurrence.trained.slot", k=k + 1) for k in range(len(truth))]
    show_chart(
        answers_figure(
            reading["probabilities"],
            [escape_label(v) for v in vocab],
            truth,
            slot_names,
            t("recurrence.trained.truth"),
            title=t("recurrence.trained.answers_figure"),
        ),
        key="rr_trained_answers",
        summary=answers_summary(predicted, truth, vocab),
        data={"slot": slot_names, "truth": [vocab[w] for w in truth]}
        | {"predicted": [vocab[p] for p in predicted]}
        | {f"p_{v}": reading["probabilities"][:, i] for i, v in enumerate(vocab)},
    )
    load_grid_charts()
    show_chart(
        state_grid(
            reading["delta"], reading["kept"], names, title=t("recurrence.trained.grid_title")
        ),
        key="rr_trained_grid",
        summary=state_grid_summary(reading["delta"], reading["kept"], names),
        data={"position": names, "channel": np.arange(reading["delta"].shape[1])}
        | {"delta": reading["delta"], "kept": reading["kept"]},
    )


def _metrics(reading: dict) -> None:
    means = kind_means(reading["delta_mean"], reading["kinds"])
    shown = {
        "symbol": number(means.get("symbol", float("nan"))),
        "blank": number(means.get("blank", float("nan"))),
        "right": f"{reading['right']} / {len(reading['slots'])}",
    }
    for column, (name, value) in zip(st.columns(len(shown)), shown.items(), strict=True):
        label, about = (t(f"recurrence.trained.metric_{name}{end}") for end in ("", "_help"))
        column.metric(label, value, help=about)


def _explain_reading(reading: dict, overall: dict, vocab, accuracy, has_positions: bool) -> str:
    kinds = reading["kinds"]
    here, kept_here = (kind_means(reading[k], kinds) for k in ("delta_mean", "kept_mean"))
    symbol, blank = here.get("symbol", float("nan")), here.get("blank", float("nan"))
    every, kept_all = overall["delta"], overall["kept"]
    larger = symbol > blank and every["symbol"] > every["blank"]
    measured = t(
        "recurrence.trained.explain_larger" if larger else "recurrence.trained.explain_not_larger",
        symbol=number(symbol),
        blank=number(blank),
        n_symbol=int((kinds == "symbol").sum()),
        n_blank=int((kinds == "blank").sum()),
        ratio=number(symbol / blank) if blank > 0 else "∞",
        kept_symbol=number(kept_here.get("symbol", float("nan"))),
        kept_blank=number(kept_here.get("blank", float("nan"))),
        n_held=overall["n_sequences"],
        symbol_all=number(every["symbol"]),
        blank_all=number(every["blank"]),
        recall_all=number(every["recall"]),
        kept_symbol_all=number(kept_all["symbol"]),
        kept_blank_all=number(kept_all["blank"]),
    )
    low, high = (number(overall["blank_range"][end]) for end in ("low", "high"))
    content = t(
        "recurrence.trained.explain_positions"
        if has_positions
        else "recurrence.trained.explain_content",
        blanks=t("recurrence.trained.blanks_same", delta=low)
        if low == high
        else t("recurrence.trained.blanks_range", low=low, high=high),
    )
    answers = t(
        "recurrence.trained.explain_answers",
        n=len(reading["truth"]),
        right=reading["right"],
        written=" ".join(markdown_literal(vocab[p]) for p in reading["predicted"]),
        truth=" ".join(markdown_literal(vocab[w]) for w in reading["truth"]),
        accuracy=_accuracy_or_word(accuracy),
    )
    paper = t("recurrence.trained.explain_paper")
    return t(
        "recurrence.trained.explain",
        paper=paper,
        measured=measured,
        content=content,
        answers=answers,
    )


def _reading(table: dict | None) -> None:
    st.markdown(f"#### {t('recurrence.trained.reading_title')}")
    try:
        checkpoint = runs.trained_ssm()
    except CheckpointError:
        st.info(
            t("recurrence.trained.missing_model", file="assets/checkpoints/selective_copy-L32-ssm")
        )
        return
    task, spec = runs.selective_copy_task(), checkpoint.model.spec
    accuracy = (table or {}).get("accuracy", {}).get("selective_copy", {}).get("ssm")
    layer = checkpoint.model.core.blocks[0].mixer.cfg
    st.caption(
        t(
            "recurrence.trained.reading_lead",
            n_layers=spec.n_layers,
            d_model=spec.d_model,
            d_inner=layer.d_inner,
            d_state=layer.d_state,
            steps=checkpoint.config.get("training", {}).get("steps", "?"),
            accuracy=_accuracy_or_word(accuracy),
        )
    )
    reading, vocab = runs.trained_reading(_pick_sequence()), task.vocab
    sequence, truth = (" ".join(vocab[i] for i in reading[k]) for k in ("ids", "truth"))
    st.text(t("recurrence.trained.sequence", sequence=sequence, truth=truth))
    kind_names = {kind: t(f"recurrence.trained.position.{kind}") for kind in POSITION_KINDS}
    _metrics(reading)
    _reading_charts(reading, vocab, kind_names)
    overall, has_positions = runs.trained_delta_by_kind(), spec.positional != "none"
    st.markdown(_explain_reading(reading, overall, vocab, accuracy, has_positions))


# --- the claims ---------------------------------------------------------------------------


def _verdict(table: dict) -> str:
    accuracy = table["accuracy"]
    close, below, above = [], [], []
    for task, row in accuracy.items():
        reference = row.get("transformer")
        for kind in NEW_KINDS:
            value = row.get(kind)
            if value is None or reference is None:
                continue
            difference = value - reference
            pair = t(
                "recurrence.trained.verdict_pair",
                kind=_kind(kind),
                task=_task_title(table, task),
                difference=f"{100 * difference:+.2f}",
            )
            bucket = close if abs(difference) <= MARGIN else below if difference < 0 else above
            bucket.append(pair)
    none, comma = t("recurrence.trained.verdict_none"), t("recurrence.trained.list_separator")
    return t(
        "recurrence.trained.verdict",
        margin=round(100 * MARGIN),
        close=comma.join(close) or none,
        below=comma.join(below) or none,
        above=comma.join(above) or none,
    )


def _claims(table: dict) -> str:
    accuracy = table["accuracy"]
    lengths = [str(n) for n in table["settings"]["lengths"]]
    by_task = {
        f"{kind}_{short}": _accuracy_or_word(accuracy.get(task, {}).get(kind))
        for task, short in (("selective_copy", "sc"), ("induction", "ind"))
        for kind in ("ssm", "linear", "transformer", "lstm", "gru", "rnn")
    }
    return t(
        "recurrence.trained.claims",
        **by_task,
        **runs.trained_sizes(table),
        verdict=_verdict(table),
        long=lengths[-1],
        ssm_train=_time(table, "ssm", lengths[-1], "training_step_s"),
        transformer_train=_time(table, "transformer", lengths[-1], "training_step_s"),
        sc_len=_context(table, "selective_copy"),
        ind_len=_context(table, "induction"),
    )


def _context(table: dict, task: str) -> int | str:
    settings = table["settings"]["tasks"][task]
    return settings.get("length", 0) + settings.get("n_copy", 0) or "?"


def draw(read: Reading) -> None:
    del read  # the trained models read their task's own sequences, not the sentence
    st.subheader(t("recurrence.trained.title"))
    task = runs.selective_copy_task()
    st.caption(
        t(
            "recurrence.trained.lead",
            n_copy=task.n_copy,
            n_symbols=task.n_symbols,
            length=task.length,
        )
    )
    st.caption(t("recurrence.trained.sentence_note"))
    st.markdown(f"#### {t('recurrence.trained.table_title')}")
    table = runs.trained_table()
    if table is None:
        st.info(t("recurrence.trained.table_missing", file=TABLE_PATH, command=COMMAND))
    else:
        st.markdown(_table_about(table))
        kinds = list(table["settings"]["kinds"])
        _accuracy_chart(table, kinds)
        _timing_chart(table, kinds)
    _reading(table)
    if table is not None:
        st.markdown(_claims(table))
