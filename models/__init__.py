"""Torch models and the numpy traces they return. Never imports streamlit."""

from models.serving.runtime import math_threads_from_environment

math_threads_from_environment()  # before any module of the package imports torch
