"""Fixtures for the real-browser tests: a running `streamlit run app.py` and headless Chromium.

The browser is the system's Chromium (Playwright never downloads one here). When it or the
playwright package is missing, the browser tests skip with a hint on a developer's machine and
fail in CI (CI=true), so a broken CI image cannot pass silently.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parents[2]
ARTIFACTS = REPO_ROOT / "tests" / "artifacts"
# The tests import the lesson list; make that work however pytest was started.
if str(REPO_ROOT) not in sys.path:
    sys.path.insert(0, str(REPO_ROOT))

from bench.browser import CHROMIUM_ARGS  # noqa: E402
from bench.server import Server  # noqa: E402

DEFAULT_CHROMIUM = "/usr/bin/chromium"
SERVER_START_TIMEOUT_S = 60.0
VIEWPORT = {"width": 1400, "height": 1600}


def artifacts_dir() -> Path:
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    return ARTIFACTS


@contextlib.contextmanager
def streamlit_server(log_name: str) -> Iterator[str]:
    """`streamlit run app.py` on 127.0.0.1 and a free port (the benchmark's own server
    runner); yields the base URL once healthy."""
    server = Server(log_path=artifacts_dir() / f"{log_name}.log").start()
    try:
        try:
            server.wait_healthy(SERVER_START_TIMEOUT_S)
        except (RuntimeError, TimeoutError) as error:
            pytest.fail(f"{error}; log {server.log_path}:\n{server.log_tail()}")
        yield server.base_url
    finally:
        server.stop()


@pytest.fixture(scope="session")
def app_server() -> Iterator[str]:
    """One server shared by the tests that do not care about a fresh start."""
    with streamlit_server("streamlit-shared") as base_url:
        yield base_url


@pytest.fixture
def fresh_app_server(request: pytest.FixtureRequest) -> Iterator[str]:
    """A server no session has visited yet: what a deep link meets after a restart."""
    name = "".join(c if c.isalnum() or c in "-_" else "_" for c in request.node.name)
    with streamlit_server(f"streamlit-fresh-{name.strip('_')}") as base_url:
        yield base_url


BROWSER_HINT = (
    "Install one: `apt-get install chromium` on Debian/Ubuntu; on macOS or Windows set "
    "SEQLENS_CHROMIUM to an installed Chrome or Chromium executable"
)


def _unavailable(message: str) -> None:
    """Skip on a developer's machine; fail under CI, where a missing browser is a broken image."""
    if os.environ.get("CI") == "true":
        pytest.fail(f"browser tests cannot run in CI (CI=true): {message}", pytrace=False)
    pytest.skip(f"browser tests skipped: {message}")


@pytest.fixture(scope="session")
def browser():
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        _unavailable(
            "the playwright package is not installed: `pip install -r requirements-dev.txt` "
            "(it drives the system's Chromium and never downloads a browser)"
        )
    wanted = os.environ.get("SEQLENS_CHROMIUM", DEFAULT_CHROMIUM)
    executable = shutil.which(wanted) or wanted  # a bare command name is looked up on PATH
    if not (Path(executable).is_file() and os.access(executable, os.X_OK)):
        _unavailable(f"no Chromium executable at {executable}. {BROWSER_HINT}")
    with sync_playwright() as pw:
        chromium = pw.chromium.launch(executable_path=executable, args=CHROMIUM_ARGS)
        yield chromium
        chromium.close()


@pytest.fixture
def context(browser):
    ctx = browser.new_context(viewport=VIEWPORT)
    ctx.set_default_timeout(30_000)
    yield ctx
    ctx.close()


@pytest.fixture
def page(context):
    return context.new_page()


@pytest.fixture(scope="session")
def request_log() -> dict[str, list[tuple[str, str]]]:
    """Every request the typing and click-through tests made: test name → [(base URL, URL)]."""
    return {}
