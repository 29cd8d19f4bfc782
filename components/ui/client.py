"""Which client a visitor's browser is, as far as the server can tell: its IP address.

Limits that must hold per person rather than per browser tab (training runs, page slots)
are kept per client. Streamlit gives None for a connection from this machine itself; all
of those count as one client, "local".
"""

from __future__ import annotations

import streamlit as st

from models.training.job_limits import LOCAL


def client_address() -> str:
    """The connection's IP address, or LOCAL for this machine (and under AppTest, which
    gives a stand-in object rather than an address)."""
    ip = st.context.ip_address
    return ip if isinstance(ip, str) and ip else LOCAL
