"""Controls kept in the link: checked before they are first drawn, and written back in
their own labels."""

from __future__ import annotations

import threading
from functools import partial

import streamlit as st

from components.i18n import LANGUAGES, t, using_language
from components.ui.inputs import (
    parse_choice,
    parse_choices,
    parse_number,
)
from components.ui.sentence import show_notes
from components.ui.streamlit_patches import correct_bound_link

# --- controls kept in the link --------------------------------------------------------
# Every control is bound to the URL (Streamlit keeps the address bar in step). A link
# is text anyone can edit, and Streamlit silently drops a value a control cannot take;
# so before a control is first drawn, its value in the link is checked here, and a bad
# one (layer=99, T=1e9, nan) is clamped or replaced, with a note saying so.

_LINK_NOTES = "_link_notes"
# Values a tour step sets, as its link does (components/ui/tour.py), read in place of the
# address bar's when each control is next drawn. Streamlit refuses to write a parameter to
# the address bar while a control is bound to it, so a step hands its values over here.
_HANDED_OVER = "_link_values_handed_over"


# The link texts of every linked control drawn in this run, [] for one at its default: what
# the page shows, as its link would say it, whatever the address bar holds yet (Streamlit
# learns the browser's address only with the next run). Class mode sends the teacher's.
_drawn = threading.local()


def begin_drawn_controls() -> None:
    _drawn.values = {}


def drawn_controls() -> dict[str, list[str]]:
    return dict(getattr(_drawn, "values", {}))


def _drew(key: str, texts: list[str]) -> None:
    values = getattr(_drawn, "values", None)
    if values is not None:
        values[key] = [str(text) for text in texts]


def hand_over_link_values(values: dict[str, list[str]]) -> None:
    """Controls read `values` as if from a link, the next time each is drawn; an empty list
    sets a control to its default."""
    for key in values:
        st.session_state.pop(key, None)  # the link's value, not the one last drawn
    st.session_state[_HANDED_OVER] = dict(values)


def forget_handed_over() -> None:
    st.session_state.pop(_HANDED_OVER, None)


def _take_handed_default(key: str, default) -> bool:
    """A control handed over its default (an empty list) takes it."""
    handed_over = st.session_state.get(_HANDED_OVER, {})
    if handed_over.get(key) == [] and key not in st.session_state:
        del handed_over[key]
        st.session_state[key] = default
        return True
    return False


def _check_link(key: str, parse, default) -> list[str] | None:
    """The link's texts for `key` when they set the control's value in this run."""
    # `parse` runs only when the link holds a value for a control not yet drawn, so the
    # labels it needs (every option in every language) are built only then.
    notes = st.session_state.setdefault(_LINK_NOTES, {})
    if key in st.session_state or _take_handed_default(key, default):
        return None  # the control exists already: its value is the visitor's, not the link's
    handed_over = st.session_state.get(_HANDED_OVER, {})
    raws = handed_over.pop(key) if key in handed_over else st.query_params.get_all(key)
    if not raws:
        return None
    # Set even when valid: the link may name the value where the control shows a label.
    value, note = parse(raws)
    st.session_state[key] = value
    if note is not None:
        notes[key] = (note, value)
    return raws


def _relink(key: str, raws: list[str] | None, labels: list[str], value_type: str) -> None:
    """Put the control's own texts for its value back in the address bar.

    A bound control takes from a link only the labels it writes itself; for anything
    else (a link naming the value, `?mask_kind=padding`, or a label of the other
    language) Streamlit drops the parameter from the address bar, although the control
    shows the value the link asked for (set by _check_link). A link copied from there
    would lose that setting. Streamlit offers no public way to write a bound parameter
    (components/ui/streamlit_patches.py; with its switch off the parameter stays dropped).
    """
    if raws is None or raws == labels or not labels:
        return
    written = labels[0] if value_type == "string_value" else labels
    correct_bound_link(key, written, value_type)


def _show_link_note(key: str, value) -> None:
    """The note stays while the control still shows the value the link was changed to."""
    noted = st.session_state[_LINK_NOTES].get(key)
    if noted is not None and noted[1] == value:
        show_notes([noted[0]])
    else:
        st.session_state[_LINK_NOTES].pop(key, None)


def _labels(options: list, format_func) -> list[list[str]]:
    """Every text a link may use for each option: a bound control writes its label, in
    the language of whoever made the link; a link written by hand may use the value."""
    names = [[str(option)] for option in options]
    for language in LANGUAGES:
        with using_language(language):
            for texts, option in zip(names, options, strict=True):
                texts.append(format_func(option))
    return names


# A control's format_func and on_click stay in the session's widget state, also while a
# visitor who left is kept for a reconnect (two minutes). A function written in a page
# refers to the page's whole namespace, every trace and figure of its last run (about
# 2.5 MB a visitor on the attention page), so controls get functions from this module.


def _label_of(labels: dict, option) -> str:
    return labels.get(option, str(option))


def kept_labels(options: list, format_func):
    """`format_func` as a lookup of the labels it gives in this run."""
    return partial(_label_of, {option: format_func(option) for option in options})


def set_state(values: dict) -> None:
    """A button's on_click: put `values` into the session state."""
    st.session_state.update(values)


def linked_selectbox(where, label: str, options, default, key: str, format_func=str, **extra):
    options = list(options)
    raws = _check_link(
        key,
        lambda raws: parse_choice(raws[-1], options, default, _labels(options, format_func)),
        default,
    )
    label_of = kept_labels(options, format_func)
    value = where.selectbox(
        label,
        options,
        index=options.index(default),
        key=key,
        format_func=label_of,
        bind="query-params",
        **extra,
    )
    # Streamlit keeps a default out of the address bar.
    shown = [label_of(value)] if value != default else []
    _drew(key, shown)
    _relink(key, raws and raws[-1:], shown, "string_value")
    _show_link_note(key, value)
    return value


def linked_slider(where, label: str, low, high, default, key: str, **options):
    _check_link(key, lambda raws: parse_number(raws[-1], low, high, default), default)
    value = where.slider(label, low, high, default, key=key, bind="query-params", **options)
    _drew(key, [f"{value:g}"] if value != default else [])
    _show_link_note(key, value)
    return value


def linked_multiselect(
    where, label: str, options, default: list, key: str, max_selections: int, format_func=str
):
    options = list(options)
    raws = _check_link(
        key,
        lambda raws: parse_choices(
            raws, options, default, max_selections, _labels(options, format_func)
        ),
        list(default),
    )
    label_of = kept_labels(options, format_func)
    value = where.multiselect(
        label,
        options,
        default=default,
        key=key,
        max_selections=max_selections,
        format_func=label_of,
        placeholder=t("app.choices_placeholder"),  # Streamlit's own is English only
        bind="query-params",
    )
    labels = [label_of(option) for option in value] if value != default else []
    _drew(key, labels)
    _relink(key, raws, labels, "string_array_value")
    _show_link_note(key, value)
    return value


def linked_tabs(where, options, default, key: str, format_func, opened_by: dict | None = None):
    """Tabs of which only the open one is drawn: (its option, its container).

    Content under a closed tab is neither computed nor sent, so a keystroke redraws one
    tab, not all of them. Streamlit keeps the open tab's label, in the language it was
    shown in: a label of the other language (a shared link, a switch of language) is
    read as the same tab. `opened_by` maps an option to the keys of the controls inside
    its tab: a link that sets one of them, and names no tab, opens that tab."""
    options = list(options)
    shown = [format_func(option) for option in options]

    def label_named(raw: str):
        return parse_choice(raw, shown, format_func(default), _labels(options, format_func))

    raws = _check_link(key, lambda raws: label_named(raws[-1]), format_func(default))
    if key not in st.session_state:
        for option, keys in (opened_by or {}).items():
            if any(control in st.query_params for control in keys):
                st.session_state[key] = format_func(option)
                break
    kept = st.session_state.get(key)
    if kept is not None and kept not in shown:
        st.session_state[key] = label_named(kept)[0]
    tabs = where.tabs(shown, default=format_func(default), key=key, bind="query-params")
    index = next(i for i, tab in enumerate(tabs) if tab.open)
    open_tab = [shown[index]] if options[index] != default else []
    _drew(key, open_tab)
    _relink(key, raws and raws[-1:], open_tab, "string_value")
    _show_link_note(key, shown[index])
    return options[index], tabs[index]


def linked_text(where, label: str, default: str, key: str, **options) -> str:
    """A text box kept in the link; a value handed over (a class's teacher's) is taken as
    typed. Streamlit checks nothing a link holds for a text box but its length (max_chars)."""
    handed_over = st.session_state.get(_HANDED_OVER, {})
    if key in handed_over:
        raws = handed_over.pop(key)
        st.session_state[key] = raws[-1] if raws else default
    value = where.text_input(label, value=default, key=key, bind="query-params", **options)
    _drew(key, [value] if value != default else [])
    return value
