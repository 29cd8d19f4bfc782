"""SeqLens performance harness: `python -m bench` (see bench/__main__.py).

- bench.server: start `streamlit run app.py` on 127.0.0.1 and a free port, watch its memory.
- bench.wire: a small client that speaks Streamlit's websocket protocol (one visitor).
- bench.rerun: one script run as that client saw it; bench.checks: whether it showed the
  visitor's sentence.
- bench.load: the bounded load runner, many visitors at once.
- bench.sentences: fresh sentences whose tokens are known in advance.
- bench.browser: the same app in headless Chromium (playwright), timed from the last key.
- The table of `python -m bench`: bench.apps (SeqLens and its peer), bench.pages (one
  visitor's reruns on a page), bench.keystrokes (keystroke → chart in Chromium),
  bench.visitors (every visitor at once), bench.phases (each app's measurements in order),
  bench.report (the rows, their targets, the machine facts), bench.figures (how a figure
  is written).

Performance is reported here, never asserted in pytest (tests/load only checks correctness).
"""
