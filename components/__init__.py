"""The figure builders and the plain helpers they use: numpy arrays and labels in, figures
out. No Streamlit, no torch, nothing of models/ (tests/unit/test_layering.py); the
Streamlit side is components/ui/.
"""
