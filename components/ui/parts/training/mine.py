"""The visitor's models: what this visitor has trained and the store keeps, and the link
that brings them back in another browser."""

from __future__ import annotations

from typing import TYPE_CHECKING

import streamlit as st

from components.i18n import t
from components.ui.visitor_links import VISITOR_FROM_LINK, visitor_link
from models.nets.task_models import KINDS

if TYPE_CHECKING:
    from models.serving.visitor_store import VisitorStore


def _label(kind: str) -> str:
    """A saved model's kind in the page's language (the kind itself, if not one we know)."""
    return t(f"training.model.{kind}") if kind in KINDS else kind


def draw(store: VisitorStore, me: str) -> None:
    st.subheader(t("training.mine.title"))
    mine = store.list(me)
    if mine:
        st.dataframe(
            {
                t("training.column.name"): [m.name for m in mine],
                t("training.column.model"): [_label(m.kind) for m in mine],
                t("training.column.metrics"): [
                    ", ".join(f"{k} {v:.4g}" for k, v in m.metrics.items()) for m in mine
                ],
            },
            hide_index=True,
        )
    st.caption(
        t(
            "training.mine.explain",
            count=len(mine),
            mb=store.max_bytes / 2**20,
            total_mb=store.max_total / 2**20,
            hours=store.max_age / 3600,
        )
    )
    if not mine and st.session_state.get(VISITOR_FROM_LINK):
        st.info(t("training.key.empty", hours=store.max_age / 3600))
    # A link only once there is something to bring back, so a session that trains nothing
    # makes none. Folded away: a page on a projector must not show the class this visitor's
    # link.
    if mine and (link := visitor_link("training")):
        with st.expander(t("training.key.title")):
            st.caption(t("training.key.explain", hours=store.max_age / 3600))
            st.code(link, language=None)
