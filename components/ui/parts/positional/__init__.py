"""The positional-encoding lesson's parts, one a tab: sentence (the table over the visitor's
sentence, and reordering it), sinusoidal (similarity by offset, shift as rotation), rope
(RoPE, ALiBi and length) and trained (what training makes of a learned table)."""
