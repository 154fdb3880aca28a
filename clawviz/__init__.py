"""clawviz: inspect agent-harness RL trajectories recorded at the model endpoint.

The package is a pipeline in stage folders (docs/ARCHITECTURE.md):
`ingest` (files -> calls) -> `store` (SQLModel) -> `recon` (tree, roles, pruning, advantages;
pure) -> decisions cached in `store.decisions` -> `figures` / `ui` (the app) and `cli`.
`review` holds task curation. `settings` is the one settings table and `types` the shared
vocabulary. No module outside `clawviz.ui` imports Streamlit.
"""

__version__ = "0.2.0"
