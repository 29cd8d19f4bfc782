"""The load test drives a real `streamlit run app.py` with bench/wire.py's client."""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parents[2]
# bench/ and components/ are imported from the repository root however pytest was started.
if str(REPO_ROOT) not in sys.path:
    sys.path.insert(0, str(REPO_ROOT))


@contextlib.contextmanager
def _running_server(log_name: str, **options) -> Iterator:
    from bench.server import RESULTS_DIR, Server

    srv = Server(log_path=RESULTS_DIR / f"{log_name}.log", **options)
    try:
        srv.start().wait_healthy()
        yield srv
    finally:
        srv.stop()


@pytest.fixture(scope="session")
def running_server():
    """`with running_server("log-name", env=…, extra_args=…) as srv:` starts `streamlit run
    app.py` on 127.0.0.1 (bench/server.py), waits until it answers, and stops it after;
    its log is bench/results/<log-name>.log."""
    return _running_server
