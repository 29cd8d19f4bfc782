"""The parts of the lesson "Recurrence returns": linear attention, retention and a selective
state space, beside the RNN and the Transformer."""
