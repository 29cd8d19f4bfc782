"""Lesson: RNN, LSTM and GRU, live, and how far a gradient travels back through time."""

import streamlit as st

from components.i18n import t
from components.ui.frame import enter_lesson
from components.ui.parts import open_part
from components.ui.parts.recurrent import (
    clipping,
    controls,
    distance,
    gates,
    reading,
    theory,
    units,
)
from components.ui.parts.recurrent.flow import NETWORK_KEY, Flow, show_breaks
from components.ui.runs import recurrent as runs
from components.ui.runs.shared import load_transformer
from components.ui.sentence import sentence_or_stop

enter_lesson()


st.header(t("recurrent.title"))
st.caption(t("recurrent.lead"))
sentence = sentence_or_stop()

# Shared controls: the weights, r and the loss step in one row; below it, folded side by
# side, the lesson's longer explanation and the other settings (the input, how weights are
# built, clipping).
row = st.container()
about, more = st.columns(2)
with about.expander(t("recurrent.about"), icon=":material/menu_book:"):
    st.markdown(t("recurrent.intro", d_model=load_transformer().cfg.d_model))
    st.markdown(t("recurrent.parts_hint"))
chosen = controls.draw(row, more.expander(t("recurrent.controls.more"), icon=":material/tune:"))
read = reading.draw(chosen, sentence)

# The cached run -------------------------------------------------------------------------
# The exact spectra of every step's Jacobian are the costliest numbers here. Where the
# inputs follow the visitor's typing they are computed once asked for, and from then on
# at every keystroke of the visit; a task's sequence or a synthetic one does not change
# as the visitor types, so there they are always computed (once, then cached).
follows_typing = read.ids is not None
spectra_on = not follows_typing or bool(st.session_state.get(theory.SPECTRA_KEY))
result = runs.flows(
    ids=read.ids,
    length=read.n_steps,
    tau=read.tau,
    s=chosen.s,
    spectra=spectra_on,
    folder=chosen.folder,
)
flow = Flow(controls=chosen, reading=read, result=result, spectra_on=spectra_on)
show_breaks(flow)

# The parts, one tab each, in the order each builds on the one before it: only the open
# one is drawn, from the one run above.
part, tab = open_part(
    "recurrent",
    # A link that sets a part's control (as links made before the tabs did) opens its tab.
    # The unit part draws the same network control: such a link opens the first of the two.
    opened_by={"clipping": (NETWORK_KEY,)},
)
with tab:
    if part == "distance":
        distance.draw(flow)
    elif part == "theory":
        theory.draw(flow)
    elif part == "clipping":
        clipping.draw(flow)
    elif part == "units":
        units.draw(flow)
    else:
        gates.draw(flow)
