"""The home page's cached measurements."""

from __future__ import annotations

import threading

import streamlit as st

from components.ui.runs.shared import first_time_under_spinner


@st.cache_resource(show_spinner=False, max_entries=1)
def _cached_lineage() -> list:
    from models.analysis.lineage import measure_all
    from models.serving.runtime import limit_threads

    limit_threads()
    return measure_all()


_lineage_measured = threading.Event()


def lineage_measurements() -> list:
    """The home table's measurements (models/analysis/lineage.py): made once per server, about a
    second on two cores, then shared by every visitor."""
    return first_time_under_spinner(_lineage_measured, "home.measuring", _cached_lineage)
