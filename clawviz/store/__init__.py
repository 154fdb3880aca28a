"""Stage 2, the store (SQLModel over SQLite or PostgreSQL).

`models` is the schema, `db` the engine and sessions, `calls` writes and reads calls with their
content-addressed messages and blobs, `queries` the read-only frames the pages show, and
`decisions` the per-settings cache of what `clawviz.recon.pipeline` decides.
"""
