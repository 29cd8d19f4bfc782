"""The bench's figures as the table writes them: medians and percentiles, milliseconds,
bytes, whether a target was met, a measurement that failed."""

from __future__ import annotations

import statistics


def ms(seconds: float | None) -> str:
    return "n/a" if seconds is None else f"{seconds * 1000:.0f} ms"


def kb(n: float | None) -> str:
    if n is None:
        return "n/a"
    return f"{n / 1e6:.2f} MB" if n >= 1e6 else f"{n / 1e3:.0f} kB"


def verdict(ok: bool | None) -> str:
    return "" if ok is None else ("yes" if ok else "**no**")


def median(values: list[float]) -> float | None:
    return statistics.median(values) if values else None


def percentile(values: list[float], q: float) -> float | None:
    """Linear-interpolated percentile (q in 0..100); None for no values."""
    if not values:
        return None
    if len(values) == 1:
        return values[0]
    return statistics.quantiles(values, n=100, method="inclusive")[int(q) - 1]


def failed(value) -> str:
    return f"failed: {type(value).__name__}: {str(value)[:160]}"
