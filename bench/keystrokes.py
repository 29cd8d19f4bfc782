"""Keystroke → chart in headless Chromium: one visitor typing fresh sentences of both
lengths into the attention page (also with its tour open: `query` adds to its link)."""

from __future__ import annotations

import time

from bench import browser
from bench.apps import LONG, SHORT, App
from bench.figures import median, ms, percentile
from bench.sentences import SentenceMaker, chart_labels, minilm_tokens
from components.ui.inputs import ACTIVE_WINDOW_S


def typing_runs(
    b: browser.Browser,
    app: App,
    base_url: str,
    mk: SentenceMaker,
    n_short: int,
    n_long: int,
    query: str = "",
) -> dict[int, tuple[list[float], list[str]]]:
    def open_tab(sentence: str) -> browser.TypingBench:
        labels = chart_labels(minilm_tokens(sentence))
        return browser.TypingBench(
            b, base_url, sentence, labels, app.path, app.min_charts, query=query
        )

    # One visitor on an idle server, as the target asks: the sessions of the steps before
    # count as visitors being answered for ACTIVE_WINDOW_S, and the page would set the
    # longer pause of a busy server.
    time.sleep(ACTIVE_WINDOW_S + 1)
    s0 = mk.make(SHORT)
    tb = open_tab(s0)
    out: dict[int, tuple[list[float], list[str]]] = {SHORT: ([], []), LONG: ([], [])}
    prev = s0
    try:
        for n_tokens, count in ((SHORT, n_short), (LONG, n_long)):
            for _ in range(count):
                sentence = mk.make(n_tokens, avoid=set(prev.lower().split()))
                labels = chart_labels(minilm_tokens(sentence)[:LONG])
                try:
                    latency, _ = tb.type_sentence(sentence, labels)
                    out[n_tokens][0].append(latency)
                    prev = sentence
                except Exception as exc:  # noqa: BLE001 - counted and shown
                    out[n_tokens][1].append(f"{type(exc).__name__}: {str(exc)[:120]}")
                    tb.close()
                    tb = open_tab(s0)
                    prev = s0
    finally:
        tb.close()
    return out


def typing_text(lat: list[float], errs: list[str]) -> str:
    text = f"median {ms(median(lat))}, p95 {ms(percentile(lat, 95))} (n={len(lat)})"
    return text + (f"; {len(errs)} failed: {errs[0]}" if errs else "")
