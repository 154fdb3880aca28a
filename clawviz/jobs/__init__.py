"""Use cases: the only code that both holds a store session and calls the pure stages.

`ingest` loads files into the store and analyses what they changed; `analyse` brings the
stored decisions up to date with the calls and settings. The CLI, the app and the recording
proxy's live ingest call these.
"""
