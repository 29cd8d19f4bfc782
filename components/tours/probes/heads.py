"""Probes of this lesson: what its tour steps quote, ask and check, from its parts' offers."""

from __future__ import annotations
