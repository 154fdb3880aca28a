"""Plotly figures of the app, one module per page (no Streamlit here).

`layout` (pure tree layout), `tree` (the Episode tree), `tokens` (the token view), `runs` (the
Runs charts), `palette` (the one palette).
"""
