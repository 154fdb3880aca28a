"""The command line, `python3 -m clawviz ...`: `main` (parser and log commands), `tasks` (task
commands) and `explain` (one episode call by call)."""
