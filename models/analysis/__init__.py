"""Analyses that run on models: ablations, attention statistics, probes, costs."""
