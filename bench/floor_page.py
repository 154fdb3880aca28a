"""Floors between `bench/trivial_page.py` and the Episode page (bench/browser.py, row `floors`).

`streamlit run bench/floor_page.py` with `CLAWVIZ_FLOOR_PAGE`:

- `frame`: the trivial page's one Plotly chart inside an app frame like clawviz's (`st.navigation`
  with six pages in the sidebar, a sidebar with the store's captions and plain text boxes);
- `widgets`: the same frame and chart, plus one of each element type the Episode page's first
  view draws (title, markdown, metrics in columns, an expander with radios and a checkbox, a
  page link, a segmented control, a toggle, a selectbox, badges in a horizontal container, a
  button, captions, an info box) with a few words each: no store, no clawviz code.

The Episode page cannot paint for less than what its own element types cost Streamlit's front
end, whatever it puts in them; these pages measure that.
"""

import os
from pathlib import Path

import plotly.graph_objects as go
import plotly.io
import streamlit as st

MODE = os.environ.get("CLAWVIZ_FLOOR_PAGE", "frame")
FIGURE = os.environ.get("CLAWVIZ_FLOOR_FIGURE")
"""Optional: a plotly JSON file drawn instead of the trivial chart (`widgets` mode)."""


def chart() -> None:
    if FIGURE:
        # A figure the Episode page drew (plotly JSON), with the page's selection wiring.
        fig = plotly.io.from_json(Path(FIGURE).read_text())
        st.plotly_chart(fig, key="floor", on_select="rerun", selection_mode="points",
                        config={"displaylogo": False, "scrollZoom": True})  # fmt: skip
        return
    st.plotly_chart(
        go.Figure(go.Scatter(x=list(range(15)), y=[i % 4 for i in range(15)], mode="markers")),
        key="floor",
    )


def widgets() -> None:
    st.title("Episode e-1")
    st.markdown("**Task** t · **Harness** h · **Model** m · **Attempt** 1 · **Calls** 15")
    cols = st.columns([1, 1, 1, 3])
    cols[0].metric("Reward", "0.47")
    cols[1].metric("GRPO advantage", "-1.41")
    cols[2].metric("Status", "dropped")
    with st.expander("Export for training"):
        st.radio("Format", ["sft", "rl"], key="f")
        st.checkbox("Include dropped episodes", key="d")
    st.page_link(PAGES[1], label="Workspace diff of this attempt")
    c1, c2, _ = st.columns([2, 2, 3])
    c1.segmented_control("Colour by", ["state", "reward"], default="state", key="c")
    c2.toggle("Collapse auxiliary threads", key="t")
    chart()
    st.caption("Click a node to inspect it.")
    st.segmented_control("Section", ["Call", "Paths", "Compare"], default="Call", key="s")
    st.selectbox("Call", ["call 1", "call 2"], key="call")
    line = st.container(horizontal=True)
    line.badge("main", color="gray")
    line.badge("kept", color="green")
    st.button("Inspect call 3", key="b")
    st.info("No response was recorded for this call.")


def page() -> None:
    if MODE == "widgets":
        widgets()
    else:
        st.title("Trivial page in the frame")
        chart()


def other() -> None:
    st.write("another page")


PAGES = [
    st.Page(page, title="Episode", url_path="episode", default=True),
    *(st.Page(other, title=t, url_path=t.lower()) for t in ("Runs", "Workspace", "Tasks")),
    *(st.Page(other, title=t, url_path=t.lower()) for t in ("Ingest", "Settings")),
]
nav = st.navigation(PAGES)
with st.sidebar:  # as app.py draws it
    st.caption("Store")
    st.text("sqlite:///store.db")
    st.caption("24 episodes · 220 calls · 25 files")
    st.caption("Settings hash (decisions shown)")
    st.text("c39ed588405797eb")
nav.run()
