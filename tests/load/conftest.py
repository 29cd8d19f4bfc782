"""The load test drives a real `streamlit run app.py` with bench/load.py's client."""

from __future__ import annotations

import sys
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[2]
# bench/ and components/ are imported from the repository root however pytest was started.
if str(REPO_ROOT) not in sys.path:
    sys.path.insert(0, str(REPO_ROOT))
