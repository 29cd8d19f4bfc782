"""What every part of the attention lesson reads: the sentence as the chosen model read
it, and the numbers of its attention that several parts share."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from components.ui.runs.heads import CHECKPOINT_KEY, EncoderRun
from models.analysis.attention_stats import head_statistics, sink_heads, sink_positions
from models.nets.pretrained import stack_patterns


@dataclass(frozen=True)
class Reading:
    key: str  # the model's key in the cached runs (components/ui/runs/heads.py)
    text: str
    encoder: object
    run: EncoderRun
    tokens: list[str]
    patterns: np.ndarray  # [layer, head, query, key]
    stats: dict[str, np.ndarray]  # models.analysis.attention_stats.head_statistics
    # The keys counted as sinks, and the heads that are sinks on them: by the all-heads
    # summary and the head statistics alike.
    sinks: tuple[int, ...]
    n_sink: int

    @property
    def cfg(self):
        return self.encoder.cfg

    @property
    def trained(self) -> bool:
        return self.key.startswith(CHECKPOINT_KEY)

    @property
    def specials(self) -> tuple[int, ...]:
        """Special tokens ([CLS], [SEP], <s>): skipped when looking for a strongest link."""
        return self.run.special_positions


def read(key: str, text: str, encoder, run: EncoderRun) -> Reading:
    tokens = list(run.trace["tokens"])
    patterns = stack_patterns(run.trace)
    sinks = sink_positions(len(tokens), encoder.cfg.causal)
    return Reading(
        key=key,
        text=text,
        encoder=encoder,
        run=run,
        tokens=tokens,
        patterns=patterns,
        stats=head_statistics(patterns),
        sinks=sinks,
        n_sink=int(sink_heads(patterns, sinks).sum()),
    )
