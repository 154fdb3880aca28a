"""The Streamlit side of the app (the only package that imports Streamlit).

`pages` (page registry) and `frame` (deep links keep the app frame), `state` (keys, settings,
URL), `data` (cached reads), `render` and `inspector` (showing log text safely),
`settings_form`, `tasks_widgets`.
"""
