"""Guided tours: steps through the lessons, read from assets/tours/*.json (plain data).

`schema` reads and checks the files; `probes` computes, from what the open part drew in
this run, every number a step quotes, every question's answer and every task's check.
Pure: no streamlit, no torch (components/ui/tour.py draws the tour).
"""
