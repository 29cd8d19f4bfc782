"""Which client a visitor's browser is, as far as the server can tell (its IP address),
and which session of it.

Limits that must hold per person rather than per browser tab (training runs, page slots)
are kept per client. Streamlit gives None for a connection from this machine itself; all
of those count as one client, "local".
"""

from __future__ import annotations

import secrets

import streamlit as st

from models.training.job_limits import LOCAL

# The session's own id, a secret made at its first run: a training run belongs to it (only
# it may replace or stop the run), and the sentence box counts the visitors answered by it.
SESSION_KEY = "_session"


def client_address() -> str:
    """The connection's IP address, or LOCAL for this machine (and under AppTest, which
    gives a stand-in object rather than an address)."""
    ip = st.context.ip_address
    return ip if isinstance(ip, str) and ip else LOCAL


def session_id() -> str:
    """This visitor's session, the same in every run of it."""
    return st.session_state.setdefault(SESSION_KEY, secrets.token_hex(16))
