"""The floor of the Chromium rows (bench/browser.py): a trivial Streamlit page, one Plotly chart.

`streamlit run bench/trivial_page.py`; it reads no store and draws 15 markers, so its paint time
is what Streamlit, its websocket and plotly.js cost before any clawviz code runs.
"""

import plotly.graph_objects as go
import streamlit as st

st.title("Trivial page")
st.plotly_chart(
    go.Figure(go.Scatter(x=list(range(15)), y=[i % 4 for i in range(15)], mode="markers")),
    key="trivial",
)
