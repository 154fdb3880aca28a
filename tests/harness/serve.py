"""Run a scripted model server from the command line (recording scripts start it this way).

    python3 -m tests.harness.serve --scenario S.json --port 8787 --log server.jsonl

One server answers all three protocols (`/v1/chat/completions`, `/v1/messages`,
`/v1/responses`); `--protocol` only documents intent and is checked against each request
(a request of another protocol is logged and refused), so a wrong base URL shows at once.
Prints `listening on 127.0.0.1:PORT` when ready; `--port-file` also writes the port there.
Stops on SIGTERM / SIGINT.
"""

from __future__ import annotations

import argparse
import asyncio
import signal
import sys
import threading
from pathlib import Path

from .scenario import Scenario, ScenarioError
from .server import ScriptedServer, start


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python3 -m tests.harness.serve")
    ap.add_argument("--scenario", required=True)
    ap.add_argument("--port", type=int, default=0)
    ap.add_argument("--log", default="server.jsonl")
    ap.add_argument("--protocol", choices=["chat", "anthropic", "responses", "any"], default="any")
    ap.add_argument("--port-file")
    a = ap.parse_args(argv)
    try:
        scenario = Scenario.load(a.scenario)
    except (OSError, ScenarioError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2

    async def run() -> None:
        runner, srv, port = await start(scenario, a.port, a.log, protocol=a.protocol)
        print(f"listening on 127.0.0.1:{port}", flush=True)
        if a.port_file:
            Path(a.port_file).write_text(str(port))
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(sig, stop.set)
        await stop.wait()
        await runner.cleanup()

    asyncio.run(run())
    return 0


class ThreadedServer:
    """The server on a background thread (tests and Python recording scripts)."""

    def __init__(self, scenario: Scenario, log_path=None, protocol: str = "any"):
        self.scenario, self.log_path, self.protocol = scenario, log_path, protocol
        self.port = 0
        self.server: ScriptedServer | None = None
        self._ready = threading.Event()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        loop = asyncio.new_event_loop()
        self._loop = loop
        runner, self.server, self.port = loop.run_until_complete(
            start(self.scenario, 0, self.log_path, protocol=self.protocol)
        )
        self._runner = runner
        self._ready.set()
        loop.run_forever()
        loop.run_until_complete(runner.cleanup())
        loop.close()

    def __enter__(self) -> ThreadedServer:
        self._thread.start()
        self._ready.wait(10)
        return self

    def __exit__(self, *exc) -> None:
        assert self._loop is not None
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(10)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def entries(self) -> list[dict]:
        return list(self.server.entries) if self.server else []


if __name__ == "__main__":
    raise SystemExit(main())
