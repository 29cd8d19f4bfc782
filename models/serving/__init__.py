"""Serving: caches, model catalog, worker processes, slots, visitor storage."""
