"""SeqLens performance harness: `python -m bench` (see bench/__main__.py).

- bench.server: start `streamlit run app.py` on 127.0.0.1 and a free port, watch its memory.
- bench.wire: a small client that speaks Streamlit's websocket protocol (one visitor).
- bench.rerun: one script run as that client saw it; bench.checks: whether it showed the
  visitor's sentence.
- bench.load: the bounded load runner, many visitors at once.
- bench.sentences: fresh sentences whose tokens are known in advance.
- bench.browser: the same app in headless Chromium (playwright), timed from the last key.

Performance is reported here, never asserted in pytest (tests/load only checks correctness).
"""
