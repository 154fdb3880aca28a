"""Task curation: benchmark tasks, checkers, workspaces and sign-off.

`tasks` (task folders, the review queue, the difficulty filter), `checker` (runs a task's
checker on a workspace), `workspace` (before/after diff), `archive` (safe extraction) and
`signoff` (the append-only review history).
"""
