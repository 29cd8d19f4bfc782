"""Every use SeqLens makes of Streamlit's private internals, in this one module.

Streamlit's internals are not covered by its versioning and have moved in minor releases;
the pin to one release is what holds these two together. tests/unit/test_streamlit_patches.py
fails when any other module of the app imports `streamlit.runtime`, `streamlit.elements` or
`streamlit.web`, or calls `get_script_run_ctx`.

SEQLENS_STREAMLIT_PATCHES=0 turns every use off: each function below then takes its public
fallback, and the app still works (every page, deep links, the link's state). .ci/run runs
the app tests and a browser test of a deep link on a fresh server that way.

What each one buys:

- `correct_bound_link`: needed for correctness of shared links. A control bound to the
  link (bind="query-params") takes from a link only the label it writes itself; a link
  naming the value (`?tr_task=lm`, `?mask_kind=padding`) or the label in the other
  language sets the control (components/ui/linked.py checks it), but Streamlit drops the
  parameter from the address bar, so a link copied at once loses that setting. The public
  `st.query_params[key] = label` cannot write it back: it refuses a key bound to a control
  (StreamlitAPIException "query-param-bound-cannot-set"), and written before the control
  is drawn it is overridden, since the control reads the link as the run began and drops
  what it cannot take. Streamlit's own correction step writes it.
  tests/e2e/test_shared_links.py::test_a_link_naming_choices_by_value_keeps_them_in_the_address_bar
  fails without it. Off: the control still shows the linked value; the address bar
  drops that parameter until the visitor changes the control.
- `started_as_a_legacy_page`: needed for a steady menu. Until some session on a server has
  called st.navigation, Streamlit runs a deep link's lesson file alone (pages/ is a legacy
  page folder; components/ui/frame.py), and the frame must register its menu before it
  draws anything, or the link's settings are lost at the first change (tests/e2e/
  test_shared_links.py::test_a_deep_link_as_the_first_visit_keeps_presenter_language_and_settings).
  Streamlit's public API does not say whether a run is such a legacy run, so off, the
  frame takes every run for one and registers the menu first in every run, hidden, then
  again where it belongs: correct, but the sidebar's menu vanishes for a moment during
  reruns (1–5 times in four typed words on the attention page; never with the switch on).
  tests/e2e/test_steady_menu.py fails without it. Its cost in time, one more
  st.navigation call a run, is not measured apart.

Removed, each measured paired with and without it on 2026-12-02 (docs/PERFORMANCE.md):
the batching of a session's script events for the event loop bought 5–8 ms of the home
page's server work a rerun (25 → 30–34 ms), but keystroke → chart moved within noise
(median 217 / 222 / 190 ms with it, 212 / 240 / 203 without) and so did the 40-visitor p95
(979 / 957 / 743 ms with it, 1023 / 971 / 721 without); the swapped duration parser that
read the sentence box's pause without pandas is replaced by public API: the box takes
`live=True` until the frame has imported pandas after the first page (components/ui/
sentence.py), and a fresh server's first chart is as fast as with the patch (3.29 → 3.34 s,
three pairs).
"""

from __future__ import annotations

import os

SWITCH = "SEQLENS_STREAMLIT_PATCHES"


def patches_on(environ=None) -> bool:
    """Whether private Streamlit access is allowed: yes, unless SEQLENS_STREAMLIT_PATCHES=0."""
    return (os.environ if environ is None else environ).get(SWITCH, "1").strip() != "0"


def correct_bound_link(key: str, written: str | list[str], value_type: str) -> bool:
    """Put `written` into the address bar for `key`, a parameter bound to a control.

    `value_type` is the control's kind of value in Streamlit's widget state
    ("string_value" for one choice, "string_array_value" for several). Returns whether
    the link was written (never with the switch off).
    """
    if not patches_on():
        return False
    from streamlit.runtime.scriptrunner_utils.script_run_context import get_script_run_ctx

    with get_script_run_ctx().session_state.query_params() as params:
        params.set_corrected_value(key, written, value_type)
    return True


def started_as_a_legacy_page() -> bool:
    """Whether Streamlit runs this script as one page of a legacy pages/ folder, as it does
    until some session on this server has called st.navigation. With the switch off: True
    (see the module's docstring)."""
    if not patches_on():
        return True
    from streamlit.runtime.pages_manager import PagesManager

    return bool(PagesManager.uses_pages_directory)
