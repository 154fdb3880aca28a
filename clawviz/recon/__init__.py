"""Stage 3, reconstruction (pure: no store, no I/O).

`canonical` (match keys), `markers` (harness marker strings as data), `tree` (parent per call
by message-prefix trie), `classify` (roles and segments), `prune` (states and reasons),
`advantage` (rewards, GRPO, PPO, importance ratios), `tokens` (a kept path lined up by its
logged token ids, split where they drift, PIPELINE §6) and `pipeline` (all of it for one
episode).
"""
