"""The model choice in a real browser: a server whose operator set a models folder."""

from __future__ import annotations

import re
from urllib.parse import parse_qs, urlsplit

import pytest
from browser_helpers import (
    FIRST_CHART_TIMEOUT_MS,
    RERUN_TIMEOUT_MS,
    assert_page_healthy,
    expect,
    outside_requests,
    record_requests,
    screenshot,
    wait_for_charts,
    wait_for_tick_words,
    wait_until_idle,
)
from conftest import artifacts_dir

from bench.server import Server
from components.i18n import t
from models.nets.tiny import save_tiny_model

pytestmark = [pytest.mark.slow, pytest.mark.usefixtures("browser")]


@pytest.fixture(scope="module")
def models_server(tmp_path_factory):
    root = tmp_path_factory.mktemp("models")
    save_tiny_model("llama", root / "tiny-llama")
    server = Server(
        log_path=artifacts_dir() / "streamlit-models.log",
        env={"SEQLENS_MODELS_DIR": str(root), "SEQLENS_USE_HF_CACHE": "0"},
    ).start()
    try:
        server.wait_healthy(60.0)
        yield server.base_url
    finally:
        server.stop()


def choose_model(page, base_url: str, option: str) -> None:
    """Open the attention lesson on MiniLM, then pick the model whose label matches `option`."""
    page.goto(f"{base_url}/heads?sentence=the+cat+sat+on+the+mat")
    wait_for_charts(page, FIRST_CHART_TIMEOUT_MS)
    wait_for_tick_words(page, "one_head", ["[CLS]", "cat"], RERUN_TIMEOUT_MS)
    wait_until_idle(page)
    page.locator(".st-key-model").click()
    page.get_by_role("option", name=re.compile(option)).click()


def open_about_the_model(page) -> None:
    """The model's description (and a trained model's jumps to its heads) sits folded in an
    expander under the opening; open it as a learner would."""
    about = page.locator('[data-testid="stExpander"] summary', has_text=t("heads.about"))
    expect(about).to_be_visible()
    about.click()


def test_choosing_a_model_from_the_operators_folder_redraws_the_heads(
    page, models_server, request_log
):
    seen = record_requests(page, models_server, request_log, "model-choice")
    choose_model(page, models_server, r"^tiny-llama · Llama")

    wait_for_tick_words(page, "one_head", ["<s>", "cat", "mat"], RERUN_TIMEOUT_MS)
    wait_until_idle(page)
    open_about_the_model(page)
    expect(page.get_by_text(re.compile("4 query heads share 2 key/value heads"))).to_be_visible()
    expect(page.get_by_text(re.compile("^Causal mask"))).to_be_visible()
    page.wait_for_function(
        "() => new URLSearchParams(location.search).get('model') !== null",
        timeout=RERUN_TIMEOUT_MS,
    )
    assert parse_qs(urlsplit(page.url).query)["model"][0].startswith("tiny-llama")
    page.locator(".st-key-summary").scroll_into_view_if_needed()
    screenshot(page, "model-choice-llama")
    assert_page_healthy(page)
    assert outside_requests(seen) == []


def test_choosing_the_trained_induction_model_draws_its_heads_and_jumps_to_them(
    page, app_server, request_log
):
    seen = record_requests(page, app_server, request_log, "trained-model-choice")
    choose_model(page, app_server, r"^Induction model · SeqLens")

    # Its task's own symbols, not the sentence: t0 … t31.
    wait_for_tick_words(page, "one_head", ["t23", "t6"], RERUN_TIMEOUT_MS)
    wait_until_idle(page)
    open_about_the_model(page)
    expect(page.get_by_text(re.compile("reads its task's own held-out sequence"))).to_be_visible()
    jump = page.get_by_role("button", name=re.compile(r"^Induction head: layer \d+, head \d+"))
    layer, head = re.findall(r"\d+", jump.inner_text())
    jump.click()
    wait_until_idle(page)
    # The chosen head (it opened on layer 1, head 1) is the measured one now.
    expect(
        page.get_by_role("heading", name=f"Layer {layer}, head {head}", exact=True)
    ).to_be_visible()
    page.wait_for_function(
        "() => (new URLSearchParams(location.search).get('model') || '').startsWith('Induction')",
        timeout=RERUN_TIMEOUT_MS,
    )
    screenshot(page, "model-choice-induction")
    assert_page_healthy(page)
    assert outside_requests(seen) == []
