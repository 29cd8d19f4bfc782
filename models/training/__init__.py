"""Training tasks, the training loop, background jobs and checkpoints."""
