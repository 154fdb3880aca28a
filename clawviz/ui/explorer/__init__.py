"""The client-side Episode explorer (issue 25): `explorer.js` and `explorer.css` (plain JS and
CSS, no build step, no network), mounted in the app by `component.py` (Streamlit Components
v2) and inlined into one offline HTML file by `clawviz share` (`assets.py`, no Streamlit)."""
