"""Offline unless the operator says otherwise; imported before transformers anywhere.

The Hugging Face libraries read these switches once, when they are first imported. The
hub is reachable only when the operator sets SEQLENS_ALLOW_HUB=1 (see models/serving/catalog.py);
even then every model but the operator's chosen hub models loads with local files only.
"""

from __future__ import annotations

import os

HUB_SWITCH = "SEQLENS_ALLOW_HUB"


def hub_allowed(environ=os.environ) -> bool:
    return environ.get(HUB_SWITCH, "").strip().lower() in ("1", "true", "yes", "on")


if not hub_allowed():
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("HF_HUB_DISABLE_TELEMETRY", "1")
os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
