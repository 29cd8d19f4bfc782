"""The figures of the lesson "Recurrence returns"."""
