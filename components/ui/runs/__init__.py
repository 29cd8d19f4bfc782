"""The cached runs: every st.cache_data and st.cache_resource that wraps models/, one module
per lesson (shared.py: the loaders several lessons use). Models are loaded once per process
and only ever read; cached arrays are read-only.
"""
