"""Torch models and the numpy traces they return. Never imports streamlit."""
