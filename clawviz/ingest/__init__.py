"""Stage 1, ingest: files -> parsed calls in the store.

`load` walks files and folders (exchange logs, results.jsonl, transcripts, task folders) and
writes them through `clawviz.store`; `exchange` parses one exchange record (claude-trace shape,
Anthropic / Chat Completions / Responses bodies), `sse` rebuilds streamed bodies, `results`
reads verifier results, `transcripts` reads the harnesses' own session files.
"""
