"""A visitor's trained models in a real browser: the personal link brings them back, the key
leaves the address bar at once, and a link copied from there reaches nobody's models."""

from __future__ import annotations

import pytest

from models import checkpoints
from models import trained_sources as ts
from models.train import CHECKPOINT_DIR
from models.visitor_store import VisitorStore, new_visitor

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
    store, key = VisitorStore(), new_visitor()
    lm = checkpoints.load(CHECKPOINT_DIR / ts.SHIPPED_LM)
    stem = store.save(key, "lm-transformer", lm.model, task=lm.task, metrics=lm.metrics)
    yield key, stem.name
    for model in store.list(key):
        store._delete(model.stem)


def test_the_personal_link_brings_the_models_back_and_leaves_the_address_bar(
    browser, app_server, saved_model
):
    key, name = saved_model
    owner = browser.new_page()
    owner.goto(f"{app_server}/masks?visitor={key}")
    _settle(owner)
    assert "visitor" not in owner.url  # a link copied from here hands nobody the key
    assert f"Your model {name}" in _weights_offered(owner)
    copied = owner.url
    owner.close()

    classmate = browser.new_page()
    classmate.goto(copied)
    _settle(classmate)
    assert not any(name in option for option in _weights_offered(classmate))
    classmate.close()
