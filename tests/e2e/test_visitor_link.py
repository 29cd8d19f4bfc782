"""A visitor's trained models in a real browser: the one-time link brings them back once, it
leaves the address bar at once, and neither the link kept in a browser's history nor one
copied from the address bar reaches anybody's models."""

from __future__ import annotations

import pytest

from models.analysis import trained_sources as ts
from models.serving.visitor_store import VisitorStore
from models.training import checkpoints
from models.training.train import CHECKPOINT_DIR

pytestmark = [pytest.mark.slow, pytest.mark.usefixtures("browser")]

IDLE = """() => {
  const app = document.querySelector('[data-testid="stApp"]');
  return app && app.getAttribute('data-test-script-state') === 'notRunning'
      && !document.querySelector('[data-stale="true"]');
}"""


def _settle(page) -> None:
    """The page has drawn its charts and its script has stopped running."""
    page.wait_for_selector('[data-testid="stPlotlyChart"]', timeout=120_000)
    page.wait_for_function(IDLE, timeout=90_000)


def _weights_offered(page) -> list[str]:
    """The Weights box's options (opening its list again if a rerun closed it)."""
    box = page.locator('.st-key-mask_weights [data-testid="stSelectbox"]')
    for _ in range(3):
        box.click()
        options = page.locator('[role="option"]')
        try:
            options.first.wait_for(state="visible", timeout=5_000)
        except Exception:  # the list closed under a rerun, or opened too early: again
            page.keyboard.press("Escape")
            page.wait_for_function(IDLE, timeout=90_000)
            continue
        offered = options.all_inner_texts()
        page.keyboard.press("Escape")
        return offered
    raise AssertionError("the Weights list never opened")


@pytest.fixture
def saved_model():
    """A Transformer saved under a fresh key, in the store the server reads."""
    store = VisitorStore()
    key = store.new_key()
    lm = checkpoints.load(CHECKPOINT_DIR / ts.SHIPPED_LM)
    stem = store.save(key, "lm-transformer", lm.model, task=lm.task, metrics=lm.metrics)
    yield store, key, stem.name
    for model in store.list(key):
        store._delete(model.stem)


def _open_in_a_new_browser(browser, url: str):
    """`url` opened in a browser context of its own (no cookies or storage shared)."""
    context = browser.new_context(viewport={"width": 1400, "height": 1600})
    page = context.new_page()
    page.goto(url)
    _settle(page)
    return context, page


def test_the_one_time_link_brings_the_models_back_once_and_leaves_the_address_bar(
    browser, app_server, saved_model
):
    store, key, name = saved_model
    link = f"{app_server}/masks?visitor={store.mint_link(key)}"
    owner_context, owner = _open_in_a_new_browser(browser, link)
    assert "visitor" not in owner.url  # a link copied from here hands nobody anything
    assert f"Your model {name}" in _weights_offered(owner)
    copied = owner.url
    owner_context.close()

    # The link as a browser's history keeps it, opened by the next person at this computer.
    later_context, later = _open_in_a_new_browser(browser, link)
    notes = later.locator('[data-testid="stAlert"]').all_inner_texts()
    assert any("This link was used already" in note for note in notes), notes
    assert not any(name in option for option in _weights_offered(later))
    later_context.close()

    classmate_context, classmate = _open_in_a_new_browser(browser, copied)
    assert not any(name in option for option in _weights_offered(classmate))
    classmate_context.close()
