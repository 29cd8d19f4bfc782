"""The attention page's pass asked for ahead: the frame starts the new sentence's pass in
the worker when a run starts (components/heads_runs.py `ask_pass_ahead`), and the page
collects it. A stand-in worker records what it is asked and answers with the server's
own pass, so the charts can be checked against the sentence."""

from __future__ import annotations

from concurrent.futures import Future

import pytest
from conftest import chart, open_lesson, record_first_arguments

from components.ui import sentence
from components.ui.runs import heads as heads_runs


class RecordingWorker:
    """Answers every pass at once with the shipped model's own trace."""

    def __init__(self):
        self.ready, self.asked, self.collected, self.submitted = True, [], [], []
        self.replaced = []
        self._ahead: dict[str, tuple] = {}

    def start(self) -> None:
        pass

    def _done(self, tokenized) -> Future:
        future: Future = Future()
        future.set_result(heads_runs.load_encoder().run_with_cache(tokenized))
        return future

    def ask_ahead(self, text, tokenized, instead_of=None) -> None:
        self.asked.append(text)
        self.replaced.append(instead_of)
        self._ahead[text] = (tokenized, self._done(tokenized))

    def take_ahead(self, text):
        found = self._ahead.pop(text, None)
        if found is not None:
            self.collected.append(text)
        return found

    def submit(self, tokenized) -> Future:
        self.submitted.append(tokenized.tokens)
        return self._done(tokenized)

    def wait(self, future):
        return future.result()


@pytest.fixture
def worker(monkeypatch) -> RecordingWorker:
    worker = RecordingWorker()
    monkeypatch.setattr(heads_runs, "shipped_model_worker", lambda: worker)
    return worker


def columns(at) -> list[str]:
    return chart(at, "one_head")["panels"][0]["columns"]


def test_each_new_sentence_is_asked_ahead_and_collected_by_the_page(worker):
    previous = "A first sentence about ahead passes"
    at = open_lesson("heads", previous)
    assert worker.asked == []  # a visitor's first run asks nothing ahead
    for text in ("The worker starts every keystroke's pass", "Then the page collects it"):
        at.text_input(key="sentence").set_value(text).run()
        assert not at.exception
        assert worker.asked[-1] == text and worker.collected[-1] == text
        assert worker.replaced[-1] == previous  # its pass ahead, if still waiting, goes
        previous = text
        tokens = heads_runs.load_encoder().tokenize(text).tokens
        assert columns(at) == [f"{i}:{token}" for i, token in enumerate(tokens)]
    # Another control, the same sentence: nothing is asked.
    asked = len(worker.asked)
    at.selectbox(key="layer").set_value(1).run()
    assert len(worker.asked) == asked and not at.exception


def test_typing_on_another_lesson_asks_no_attention_pass(worker):
    at = open_lesson("heads", "A sentence on the attention page")
    at.switch_page("pages/masks.py").run()
    at.text_input(key="sentence").set_value("Typed on the masks lesson").run()
    at.text_input(key="sentence").set_value("Typed on the masks lesson again").run()
    assert not at.exception
    assert worker.asked == []


def test_another_model_asks_nothing_ahead(worker):
    at = open_lesson("heads", "A sentence for a trained model")
    at.selectbox(key="model").set_value("trained:lm-transformer").run()
    at.text_input(key="sentence").set_value("Another sentence for the trained model").run()
    assert not at.exception
    assert worker.asked == []


def test_a_rerun_prepares_the_sentence_once_for_the_pass_ahead_and_the_page(worker, monkeypatch):
    """The frame's pass ahead and the page read one prepared sentence: cleaning a text
    twice a run doubled what a long one cost."""
    at = open_lesson("heads", "A sentence prepared once a run")
    prepared = record_first_arguments(monkeypatch, sentence, "prepare_sentence")
    text = "The next sentence is cleaned once"
    at.text_input(key="sentence").set_value(text).run()
    assert not at.exception
    assert worker.asked[-1] == text
    assert prepared == [text]
