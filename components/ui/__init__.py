"""The one package that speaks Streamlit (beside app.py and the lesson files in pages/).

The frame, the shared controls and charts, the cached runs (runs/) and the lessons' parts
(parts/). Everything outside it in components/ is pure: arrays in, figures out.
"""
