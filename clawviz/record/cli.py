"""`python3 -m clawviz record --upstream URL --listen HOST:PORT --out DIR`."""

from __future__ import annotations

import argparse
import sys
from typing import Any


def _listen(value: str) -> tuple[str, int]:
    host, sep, port = value.rpartition(":")
    if not sep or not port.isdigit():
        raise argparse.ArgumentTypeError(f"--listen wants HOST:PORT, got {value!r}")
    return host or "127.0.0.1", int(port)


def _positive_int(value: str) -> int:
    try:
        n = int(value)
    except ValueError:
        n = 0
    if n < 1:
        raise argparse.ArgumentTypeError(f"wants a whole number >= 1, got {value!r}")
    return n


def _positive_float(value: str) -> float:
    try:
        x = float(value)
    except ValueError:
        x = 0.0
    if not (0 < x < float("inf")):
        raise argparse.ArgumentTypeError(f"wants a positive number of seconds, got {value!r}")
    return x


def cmd_record(args: argparse.Namespace) -> int:
    import asyncio  # here, not at module level: every other command builds this parser too

    if args.workers > 1:
        return _run_workers(args)

    from clawviz.record.proxy import serve

    host, port = args.listen
    db_url = getattr(args, "db", None)
    if db_url:
        from clawviz.store import get_engine

        try:
            get_engine(db_url)  # open (or create) the store before the first exchange
        except Exception as exc:  # noqa: BLE001 - a clear message instead of a traceback
            print(f"error: store {db_url}: {exc}", file=sys.stderr)
            return 1
    try:
        import uvloop  # about halves the proxy's CPU per forwarded chunk (bench/proxy.py)

        factory = uvloop.new_event_loop
    except ImportError:
        factory = None
    with asyncio.Runner(loop_factory=factory) as runner:
        writer = runner.run(
            serve(
                args.upstream,
                host,
                port,
                args.out,
                read_timeout=args.read_timeout,
                connect_timeout=args.connect_timeout,
                drain_timeout=args.drain_timeout,
                db_url=db_url,
                max_open=args.max_open_files,
                fail_closed=args.fail_closed,
                inflate_budget=args.inflate_budget,
                max_line_bytes=args.max_line_bytes,
                worker=args.worker_index,
            )
        )
    return 1 if writer.lost else 0


def _cmd_follow(args: argparse.Namespace) -> int:
    from clawviz.record.follow import cmd_follow

    return cmd_follow(args)


def _run_workers(args: argparse.Namespace) -> int:
    """`--workers N`: N `record` processes on one port (SO_REUSEPORT), each writing its own
    files; one `clawviz follow` for `--db`. Exit status: the worst of the workers'."""
    import signal
    import socket
    import subprocess
    import threading

    from clawviz.record.logfile import WORKER_SLOTS

    if args.workers > WORKER_SLOTS:
        print(f"error: --workers is at most {WORKER_SLOTS}", file=sys.stderr)
        return 1
    host, port = args.listen
    # Hold the port (bound, not listening) so that every worker gets the same one for port 0.
    hold = socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET)
    hold.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    hold.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
    try:
        hold.bind((host, port))
    except OSError as exc:
        print(f"error: --listen {host}:{port}: {exc}", file=sys.stderr)
        return 1
    port = hold.getsockname()[1]
    base = [sys.executable, "-m", "clawviz", "record", "--upstream", args.upstream]
    base += ["--listen", f"{host}:{port}", "--out", args.out]
    base += ["--read-timeout", repr(args.read_timeout), "--connect-timeout"]
    base += [repr(args.connect_timeout), "--drain-timeout", repr(args.drain_timeout)]
    base += ["--inflate-budget", str(args.inflate_budget)]
    if args.max_line_bytes is not None:
        base += ["--max-line-bytes", str(args.max_line_bytes)]
    if args.max_open_files:
        base += ["--max-open-files", str(args.max_open_files)]
    if args.fail_closed:
        base += ["--fail-closed"]
    procs = [
        subprocess.Popen(
            [*base, "--worker-index", str(k)], stderr=subprocess.PIPE, text=True, bufsize=1
        )
        for k in range(args.workers)
    ]
    stop = threading.Event()

    def forward(*_: Any) -> None:
        stop.set()
        for p in procs:
            if p.poll() is None:
                p.send_signal(signal.SIGTERM)

    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, forward)
    first = []
    for k, p in enumerate(procs):
        assert p.stderr is not None
        line = p.stderr.readline()
        first.append(f"[worker {k}] {line}")
        if "listening on" not in line:
            forward()
            sys.stderr.write("".join(first))
            print(f"error: worker {k} did not start", file=sys.stderr)
            return 1
    hold.close()
    follower = None
    db_url = getattr(args, "db", None)
    if db_url:
        from clawviz.record.follow import FollowerProcess

        follower = FollowerProcess(args.out, db_url, interval=0.5, stderr=sys.stderr)
    sys.stderr.write(
        f"clawviz record: listening on http://{host}:{port} -> {args.upstream}, logging to "
        f"{args.out}/ with {args.workers} workers\n" + "".join(first)
    )
    sys.stderr.flush()

    def relay(k: int, p: subprocess.Popen[str]) -> None:
        assert p.stderr is not None
        for line in p.stderr:
            sys.stderr.write(f"[worker {k}] {line}")

    relays = [threading.Thread(target=relay, args=(k, p)) for k, p in enumerate(procs)]
    for t in relays:
        t.start()
    codes = [p.wait() for p in procs]
    for t in relays:
        t.join()
    if follower is not None:
        follower.close()
    return max(codes)


def register(sub: Any) -> None:
    p = sub.add_parser(
        "record",
        help="recording reverse proxy: forward to --upstream, log every exchange to --out",
        description=(
            "Forward every request to UPSTREAM + path, stream the answer back, and append each "
            "exchange as one line to OUT/*.jsonl. Episode identity: a path prefix "
            "/ep/<episode>/[t/<task>/][h/<harness>/][a/<n>/] (stripped before forwarding), else "
            "the X-Clawviz-Episode or X-Session-Id header, else one file per proxy run."
        ),
    )
    p.add_argument("--upstream", required=True, help="model server base URL, e.g. http://h:8000")
    p.add_argument("--listen", type=_listen, default=("127.0.0.1", 8099), help="HOST:PORT")
    p.add_argument("--out", required=True, help="folder for the JSONL logs")
    p.add_argument("--read-timeout", type=float, default=600.0, help="seconds between bytes")
    p.add_argument("--connect-timeout", type=float, default=10.0, help="seconds to connect")
    p.add_argument("--drain-timeout", type=float, default=600.0, help="on SIGTERM, wait this long")
    p.add_argument(
        "--max-open-files",
        type=_positive_int,
        default=None,
        help="log files kept open at once, least recently used closed first "
        "(default: a quarter of ulimit -n, at most 512)",
    )
    p.add_argument(
        "--inflate-budget",
        type=_positive_int,
        default=32 << 20,
        help="bytes a compressed body may inflate to for the log; past it the body is logged "
        "as it came, in base64, with the budget noted (default 32 MiB)",
    )
    p.add_argument(
        "--max-line-bytes",
        type=_positive_int,
        default=None,
        help="longest log line written; an exchange past it is logged with its body cut and "
        "marked (clawviz.truncated_body), and forwarded whole (default: the setting "
        "max_line_bytes, which ingest reads lines up to; CLAWVIZ_MAX_LINE_BYTES)",
    )
    p.add_argument(
        "--workers",
        type=_positive_int,
        default=1,
        help="processes serving the port (SO_REUSEPORT), each with its own files "
        "<episode>.w<k>.jsonl; at most 64",
    )
    p.add_argument("--worker-index", type=int, default=None, help=argparse.SUPPRESS)
    p.add_argument(
        "--fail-closed",
        action="store_true",
        help="answer 503 (not forwarded) while exchanges cannot be logged, instead of serving "
        "unrecorded; GET /_clawviz/health shows the counts either way",
    )
    p.add_argument(
        "--db",
        default=argparse.SUPPRESS,
        help="also ingest the log into this store as it grows, in a `clawviz follow` child "
        "process (the app shows it live)",
    )
    p.set_defaults(func=cmd_record)

    p = sub.add_parser(
        "follow",
        help="ingest a recording folder into --db as its logs grow (record --db runs this)",
        description=(
            "Every INTERVAL seconds, ingest the *.jsonl files of DIR that grew into the store. "
            "Restarting it resumes where it was: nothing is loaded twice. SIGTERM: one last pass."
        ),
    )
    p.add_argument("dir", help="the folder `clawviz record --out` writes")
    p.add_argument("--db", default=argparse.SUPPRESS, help="the store to ingest into")
    p.add_argument("--interval", type=_positive_float, default=0.5, help="seconds between passes")
    p.add_argument("--once", action="store_true", help="one pass, then exit")
    p.add_argument(
        "--stop-on-eof", action="store_true", help="stop (after a last pass) when stdin closes"
    )
    p.set_defaults(func=_cmd_follow)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(prog="clawviz")
    register(parser.add_subparsers(dest="command", required=True))
    ns = parser.parse_args(["record", *sys.argv[1:]])
    sys.exit(ns.func(ns))
