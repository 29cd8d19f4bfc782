"""The training lab's parts, drawn one after another (pages/training.py): the run (its
controls, start and stop, progress and curves), the visitor's models, accuracy against lag,
the targets the shipped models meet, the n-gram baseline, the induction heads found, and the
visitor's sentence through the trained language models."""
