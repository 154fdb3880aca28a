"""The committed recordings of real harnesses, for the tests: one reader, one loader.

`tests/data/recorded/<harness>-<version>/<scenario>/` holds the proxy log (`exchanges.jsonl`
or `.jsonl.gz`), the scripted server's own log (`server.jsonl`), `scenario.json` and
`expected.json`. Three writers made the expected files (`expect.py` for pi and Codex,
`expect_claude_code.py` for Claude Code, by hand for OpenClaw, with a `why` per call and the
episode's fields at the top level); `read_expected` reads all of them into one shape.

`load` ingests a recording into a fresh store the way every recorded test does (the proxy log,
then a results line with the expected reward, 1.0 unless the file names one, then the
analysis). `scripted_replies` says what the scripted server answered to each request, from the
scenario replayed through the server's own decision code (`scenario.py`, `server.py`'s request
view, `toytok.py` for the vLLM-style token ids): the text, the tool calls, and on Chat
Completions the sampled token ids and the logprobs it sent (its prompt ids were rendered from
the request before the rig scrubbed temp paths out of the log, so they are read from the log
itself, `tests/export_raw.py`). None of it reads clawviz.
"""

from __future__ import annotations

import dataclasses
import gzip
import json
import shutil
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from . import toytok
from .scenario import Scenario
from .server import _args_json, make_view

RECORDED = Path(__file__).resolve().parents[1] / "data" / "recorded"
ANSWERED = ("ok", "tool")
"""Server actions that answered a step with its whole reply."""


def folders(*prefixes: str) -> list[Path]:
    """Recording folders (those with an expected.json) of harness folders starting so."""
    return sorted(
        p.parent
        for p in RECORDED.glob("*/*/expected.json")
        if not prefixes or p.parent.parent.name.startswith(prefixes)
    )


def folder_id(folder: Path) -> str:
    """`<harness>-<version>/<scenario>`, the test id of a recording."""
    return f"{folder.parent.name}/{folder.name}"


def harness_of(folder: Path) -> str:
    """`pi`, `codex`, `claude-code` or `openclaw` (the folder name without its version)."""
    return folder.parent.name.rsplit("-", 1)[0]


def exchanges_file(folder: Path) -> Path:
    for name in ("exchanges.jsonl", "exchanges.jsonl.gz"):
        if (folder / name).is_file():
            return folder / name
    raise FileNotFoundError(f"{folder}: no exchanges.jsonl(.gz)")


def read_jsonl(path: Path) -> list[dict[str, Any]]:
    data = gzip.decompress(path.read_bytes()) if path.suffix == ".gz" else path.read_bytes()
    return [json.loads(x) for x in data.decode().splitlines() if x.strip()]


def read_exchanges(folder: Path) -> list[dict[str, Any]]:
    return read_jsonl(exchanges_file(folder))


def read_server(folder: Path) -> list[dict[str, Any]]:
    return read_jsonl(folder / "server.jsonl")


@dataclass(frozen=True)
class Expected:
    """An expected.json of any of the three writers, in one shape."""

    status: str
    reasons: list[str]
    kept_paths: list[list[str]]
    """Call names of the kept path, per segment."""
    calls: list[dict[str, Any]]
    """Per log line: line, name, role, state, reason, segment, parent, link, retry_of, thread."""
    reward: float = 1.0
    written_from: str = ""
    raw: dict[str, Any] = field(default_factory=dict, repr=False)
    """The file as written (what the writers' own round-trip tests compare)."""

    @property
    def by_line(self) -> dict[int, dict[str, Any]]:
        return {c["line"]: c for c in self.calls}

    @property
    def name_of_line(self) -> dict[int, str]:
        return {c["line"]: c["name"] for c in self.calls}

    def kept_main(self) -> list[dict[str, Any]]:
        """Calls the server answered on the main thread and the episode keeps."""
        return [c for c in self.calls if c["state"] == "kept"]


def read_expected(folder: Path) -> Expected:
    """expected.json of `folder`: `{episode: {...}, calls}` (expect.py, expect_claude_code.py)
    or `{status, reasons, kept_paths, reward, calls}` (OpenClaw, written by hand)."""
    path = folder / "expected.json"
    raw = json.loads(path.read_text())
    episode = raw.get("episode", raw)
    missing = {"status", "reasons", "kept_paths"} - set(episode) or ({"calls"} - set(raw))
    if missing:
        raise ValueError(f"{path}: expected.json lacks {sorted(missing)}")
    return Expected(
        status=episode["status"],
        reasons=list(episode["reasons"]),
        kept_paths=[list(p) for p in episode["kept_paths"]],
        calls=list(raw["calls"]),
        reward=float(episode.get("reward", raw.get("reward", 1.0))),
        written_from=raw.get("written_from", "by hand from scenario.json + server.jsonl"),
        raw=raw,
    )


# -- the loader -------------------------------------------------------------------------------


@dataclass
class Loaded:
    """One recording ingested and analysed in a store of its own."""

    folder: Path
    engine: Any
    episode: str
    rows: list[dict[str, Any]]
    """`clawviz.cli.explain.explain_rows` of the episode."""
    analysis: Any
    n_episodes: int
    calls: list[Any]

    def names(self, expected: Expected) -> dict[str, str]:
        """call id -> the expected file's call name (by log line)."""
        by_line = expected.name_of_line
        return {r["call_id"]: by_line[r["source"]["line"]] for r in self.rows}


def load(folder: Path, tmp: Path) -> Loaded:
    """Ingest the proxy log of `folder` (copied into `tmp`), a results line with the expected
    reward, and analyse. The recording must be one episode and load without rejects."""
    from sqlmodel import Session, select

    from clawviz.cli.explain import explain_rows
    from clawviz.jobs.analyse import ensure_analysis, episode_analysis
    from clawviz.jobs.ingest import ingest_paths
    from clawviz.store.calls import list_episodes, load_calls
    from clawviz.store.db import init_db
    from clawviz.store.models import CallRow
    from tests.dburl import memory_engine

    src = exchanges_file(folder)
    log = tmp / src.name
    shutil.copy(src, log)
    engine = memory_engine()
    init_db(engine)
    with Session(engine) as session:
        report = ingest_paths([log], session=session)
        session.commit()
        assert not report.rejected, report.rejected
        eps = {c.episode_id for c in session.exec(select(CallRow))}
        assert len(eps) == 1, eps
        (episode,) = eps
        results = tmp / "results.jsonl"
        reward = read_expected(folder).reward
        results.write_text(json.dumps({"episode_id": episode, "reward": reward}) + "\n")
        ingest_paths([results], session=session)
        session.commit()
        ensure_analysis(session)
        return Loaded(
            folder=folder,
            engine=engine,
            episode=episode,
            rows=explain_rows(session, episode),
            analysis=episode_analysis(session, episode),
            n_episodes=len(list_episodes(session)),
            calls=load_calls(session, episode),
        )


# -- what the scripted server answered ----------------------------------------------------------


def line_of_entries(exchanges: list[dict], server: list[dict]) -> dict[int, int]:
    """server log index -> exchange line (1-based): by the `x-scripted-request` header of each
    answer; exchanges without one (no answer) are paired with the rest by request order."""
    out: dict[int, int] = {}
    unpaired: list[tuple[float, int]] = []
    for n, ex in enumerate(exchanges, 1):
        resp = ex.get("response") or {}
        hs = {k.lower(): v for k, v in (resp.get("headers") or {}).items()}
        if "x-scripted-request" in hs:
            out[int(hs["x-scripted-request"])] = n
        else:
            unpaired.append((ex["request"]["timestamp"], n))
    rest = [e["i"] for e in server if e["i"] not in out]
    for i, (_, n) in zip(rest, sorted(unpaired), strict=False):
        out[i] = n
    return out


@dataclass(frozen=True)
class ScriptedReply:
    """What the scripted server sent back for one request that got a whole reply."""

    line: int
    step: str
    protocol: str
    text: str
    tools: list[tuple[str, Any]]
    """(name, arguments) per tool call, in order, as sent."""
    output_ids: list[int] | None = None
    """Chat Completions only: the sampled `token_ids`."""
    logprobs: list[float] | None = None
    """The logprobs sent with the sampled tokens; None when the request asked for none."""


def scripted_replies(folder: Path) -> dict[int, ScriptedReply]:
    """Exchange line -> the reply the server gave, for every answered step of the recording.

    The scenario is replayed, request by request in the server's order, through the server's
    own decision code on the logged requests; every decision must be the one `server.jsonl`
    logged (step, attempt, action), so the replies are the ones the server sent.
    """
    scenario = Scenario(json.loads((folder / "scenario.json").read_text()), str(folder))
    server = read_server(folder)
    exchanges = read_exchanges(folder)
    line_of = line_of_entries(exchanges, server)
    out: dict[int, ScriptedReply] = {}
    for e in server:
        req = exchanges[line_of[e["i"]] - 1]["request"]
        body = req.get("body")
        raw = json.dumps(body) if body is not None else ""
        assert urlsplit(req["url"]).path.endswith(e["path"]), (folder, e["i"])
        view = make_view(e["path"], e["method"], dict(req.get("headers") or {}), body, raw)
        d = scenario.decide(view)
        # Summaries and utility answers use no step (the log's attempt is 0 for them).
        got = (d.step, d.attempt if d.step else 0, d.action)
        want = (e["step"], e["attempt"] if e["step"] else 0, e["action"])
        assert got == want, f"{folder}: server line {e['i']}: replayed {got}, logged {want}"
        if d.action not in ANSWERED or d.step is None:
            continue
        tools = [(t["name"], json.loads(_args_json(t))) for t in d.tools]
        reply = ScriptedReply(
            line=line_of[e["i"]],
            step=d.step,
            protocol=e["protocol"],
            text=d.text or "",
            tools=tools,
        )
        if e["protocol"] == "chat":
            out_ids = toytok.assistant_body_ids(
                d.text, [(t["name"], _args_json(t)) for t in d.tools]
            )
            want_lp = bool(body.get("logprobs"))
            reply = dataclasses.replace(
                reply,
                output_ids=out_ids,
                logprobs=[toytok.logprob(k) for k in range(len(out_ids))] if want_lp else None,
            )
        out[reply.line] = reply
    return out


# -- the comparisons every recorded test makes ----------------------------------------------------

DECISION_FIELDS = ("role", "state", "reason", "segment", "parent", "link", "retry_of")


def wrong_decisions(rows: list[dict[str, Any]], expected: Expected) -> list[tuple[str, dict]]:
    """(call name, {field: (got, want)}) for each call whose decision differs from the file."""
    return decision_mismatches(rows, expected.by_line)


def decision_mismatches(
    rows: list[dict[str, Any]],
    by_line: dict[int, dict[str, Any]],
    line_of: dict[int, int] | None = None,
) -> list[tuple[str, dict]]:
    """The comparison behind `wrong_decisions`, for any expected rows keyed by source line
    (`line_of`: a row's line in a reordered copy of the log -> its line in the original)."""

    def line(r: dict[str, Any]) -> int:
        n = r["source"]["line"]
        return line_of[n] if line_of else n

    assert sorted(line(r) for r in rows) == sorted(by_line)
    name = {r["call_id"]: by_line[line(r)]["name"] for r in rows}
    wrong = []
    for r in rows:
        e = by_line[line(r)]
        got = {
            "role": r["role"],
            "state": r["state"],
            "reason": r["reason"],
            "segment": r["segment"],
            "parent": name.get(r["parent_call"]),
            "link": name.get(r["linked_call"]),
            "retry_of": name.get(r["retry_of"]),
        }
        want = {k: e[k] for k in DECISION_FIELDS}
        if got != want:
            wrong.append((e["name"], {k: (got[k], want[k]) for k in got if got[k] != want[k]}))
    return wrong


def thread_groups(
    rows: list[dict[str, Any]], expected: Expected
) -> tuple[dict[str, set[str]], dict[str, set[str]]]:
    """Call names per thread: (as rebuilt, as the file says)."""
    by_line = expected.by_line
    got: dict[str, set[str]] = {}
    want: dict[str, set[str]] = {}
    for r in rows:
        e = by_line[r["source"]["line"]]
        got.setdefault(r["thread"], set()).add(e["name"])
        want.setdefault(e["thread"], set()).add(e["name"])
    return got, want


def kept_path_names(loaded: Loaded, expected: Expected) -> list[list[str]]:
    """The kept path of each segment, as the expected file's call names."""
    name = loaded.names(expected)
    kept = sorted((p for p in loaded.analysis.paths if p.state == "kept"), key=lambda p: p.segment)
    return [[name[c] for c in p.call_ids] for p in kept]
