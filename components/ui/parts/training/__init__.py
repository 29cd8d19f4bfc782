"""The training lab's parts (pages/training.py). Drawn on every run, above the tabs: the run
(its controls, start and stop, progress and curves) and the visitor's models. One tab each,
what training measured: accuracy against lag (with the targets the shipped models meet),
the n-gram baseline, the induction heads found, and the visitor's sentence through the
trained language models."""
