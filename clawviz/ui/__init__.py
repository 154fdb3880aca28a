"""Streamlit-side helpers of the app (the only package that imports Streamlit): page registry and frame, cached reads, state keys, renderers, the settings form, task widgets."""
