"""`clawviz record`: a streaming reverse proxy that logs every exchange as one JSONL line."""
