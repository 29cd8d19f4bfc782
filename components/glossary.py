"""The glossary: each term a lesson uses, defined in plain words, in both languages.

A term's name and definition are UI strings (assets/i18n/<language>/glossary.json:
`glossary.name.<term>`, `glossary.text.<term>`); which lesson uses which terms is data
here. The frame lists the current lesson's terms (components/ui/glossary.py); any control
can show some of them under its ? mark with `help=term_help(...)`. Pure: no st.*.
"""

from __future__ import annotations

from components.i18n import t
from components.labels import markdown_literal

# Every term, in the order the home page lists them: what a token is, then the road the
# home page tells (n-grams, recurrent networks, attention, positions, masks, the recurrences
# that came back).
TERMS: tuple[str, ...] = (
    "token",
    "ngram",
    "loss",
    "perplexity",
    "hidden_state",
    "bptt",
    "grad_norm",
    "jacobian",
    "singular_value",
    "vanishing",
    "clipping",
    "lstm_gate",
    "gru_gate",
    "attention_head",
    "qkv",
    "softmax",
    "scaled",
    "d_head",
    "w_o",
    "residual_stream",
    "cls",
    "sink",
    "ablation",
    "rollout",
    "induction_head",
    "sinusoidal",
    "learned_positions",
    "rope",
    "alibi",
    "extrapolation",
    "causal_mask",
    "padding_mask",
    "kv_cache",
    "linear_attention",
    "retention",
    "state_space",
    "parallel_scan",
)

# Each lesson's terms (by its url_path), in the order the lesson meets them.
LESSON_TERMS: dict[str, tuple[str, ...]] = {
    "heads": (
        "token",
        "cls",
        "attention_head",
        "qkv",
        "softmax",
        "d_head",
        "w_o",
        "residual_stream",
        "sink",
        "causal_mask",
        "ablation",
        "rollout",
        "induction_head",
    ),
    "positional": (
        "token",
        "qkv",
        "d_head",
        "sinusoidal",
        "learned_positions",
        "rope",
        "alibi",
        "extrapolation",
        "induction_head",
    ),
    "masks": (
        "token",
        "qkv",
        "softmax",
        "scaled",
        "d_head",
        "causal_mask",
        "padding_mask",
        "kv_cache",
    ),
    "recurrent": (
        "token",
        "hidden_state",
        "bptt",
        "grad_norm",
        "jacobian",
        "singular_value",
        "vanishing",
        "clipping",
        "lstm_gate",
        "gru_gate",
        "loss",
    ),
    "recurrence": (
        "token",
        "qkv",
        "softmax",
        "kv_cache",
        "hidden_state",
        "linear_attention",
        "retention",
        "state_space",
        "parallel_scan",
        "grad_norm",
    ),
    "training": (
        "token",
        "ngram",
        "loss",
        "perplexity",
        "attention_head",
        "induction_head",
        "lstm_gate",
    ),
}


def lesson_terms(url_path: str) -> tuple[str, ...]:
    """The terms the lesson at `url_path` uses; every term for any other page (home)."""
    return LESSON_TERMS.get(url_path, TERMS)


def term_name(term: str) -> str:
    return t(f"glossary.name.{term}")


def definition(term: str) -> str:
    return t(f"glossary.text.{term}")


def entry(term: str) -> str:
    """One term as markdown: its name in bold, then its definition, both shown as written."""
    name, text = markdown_literal(term_name(term)), markdown_literal(definition(term))
    return t("glossary.entry", name=name, text=text)


def term_help(*terms: str) -> str:
    """The definitions of `terms`, in the current language, for a control's `help=`."""
    unknown = [term for term in terms if term not in TERMS]
    if unknown:
        raise KeyError(f"not in the glossary: {unknown}")
    return "\n\n".join(entry(term) for term in terms)


def glossary_markdown(url_path: str) -> str:
    """The glossary of the page at `url_path`: each of its terms, one paragraph each."""
    return term_help(*lesson_terms(url_path))
