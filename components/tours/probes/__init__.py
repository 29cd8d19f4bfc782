"""Probes: what a tour step reads from the live run.

A part that a tour can open offers the numbers its charts draw (`components.ui.tour.offer`,
under a name such as "heads.focus"). A probe is a pure function of those offers and of the
parameters the tour file gives it; it returns what a step quotes (a number or a text), a
question's answer (`Choice`, `Number`) or whether a task is done (a bool). A probe reads
the offers and nothing else, so every quoted number and every answer comes from the run
the learner sees, on the learner's sentence.

Each lesson's probes are in their own module here, registered by `probe`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any


class MissingLive(LookupError):
    """A probe asked for an offer the open part did not make in this run."""


class Live:
    """What the open part offered in this run: offer name → its values (a mapping)."""

    def __init__(self, offers: Mapping[str, Mapping[str, Any]] | None = None):
        self._offers = dict(offers or {})

    def need(self, name: str) -> Mapping[str, Any]:
        try:
            return self._offers[name]
        except KeyError:
            raise MissingLive(name) from None

    def has(self, name: str) -> bool:
        return name in self._offers

    def names(self) -> tuple[str, ...]:
        return tuple(self._offers)


@dataclass(frozen=True)
class Choice:
    """A multiple-choice answer: `right` indexes `options`. Options built from the run
    (the visitor's tokens, say) are given here; an empty `options` means the tour file's."""

    right: int
    options: tuple[str, ...] = ()


@dataclass(frozen=True)
class Number:
    """A number question's answer, and how far from it an answer still counts as right:
    within `relative` of it, or within `absolute`, whichever is wider."""

    value: float
    relative: float = 0.1
    absolute: float = 0.0

    def accepts(self, given: float) -> bool:
        margin = max(self.relative * abs(self.value), self.absolute)
        return abs(float(given) - self.value) <= margin


@dataclass(frozen=True)
class Probe:
    name: str
    function: Callable[..., Any]
    # The offers it reads: the tour files' checks match them to the part a step opens.
    reads: tuple[str, ...] = field(default=())

    def __call__(self, live: Live, params: Mapping[str, Any] | None = None):
        return self.function(live, **dict(params or {}))


PROBES: dict[str, Probe] = {}


def probe(name: str, reads: tuple[str, ...]):
    """Register a probe under `name` (`<lesson>.<what>`); `reads` names its offers."""

    def register(function):
        if name in PROBES:
            raise ValueError(f"probe {name!r} is registered twice")
        if not reads:
            raise ValueError(f"probe {name!r} reads nothing from the live run")
        PROBES[name] = Probe(name, function, tuple(reads))
        return function

    return register


def run_probe(name: str, live: Live, params: Mapping[str, Any] | None = None):
    return PROBES[name](live, params)


# Every lesson's probes, registered on import.
from components.tours.probes import (  # noqa: E402,F401
    heads,
    masks,
    positional,
    recurrence,
    recurrent,
    training,
)
