"""The training lab's parts (pages/training.py). One tab each, what training measured: the
n-gram baseline on the visitor's sentence (first), accuracy against lag (with the targets
the shipped models meet), the induction heads found, and the visitor's sentence through the
trained language models. Drawn on every run, below the tabs: the run (its controls, start
and stop, progress and curves) and the visitor's models."""
