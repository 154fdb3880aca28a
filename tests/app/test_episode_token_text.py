"""AppTest of the Tokens tab: token text, logprob and per-token importance ratio, on a hand-made
log with text tokens and trainer logprobs, on a sample OpenClaw log (vLLM `token_id:N` tokens:
ids and logprobs, no text) and on a pi recording (token ids only)."""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

import pytest
from apphelpers import no_exception, open_page
from sqlmodel import Session

from clawviz.jobs.analyse import ensure_analysis
from clawviz.jobs.ingest import ingest_paths
from clawviz.store.db import get_engine
from clawviz.ui.token_view import KEY_TOKEN_COLOUR
from tests.dburl import fresh_url, query

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from test_token_view import text_token_line  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
SAMPLE = ROOT / "sample_logs" / "exchanges" / "openclaw" / "t0001-openclaw-a1.jsonl"
PI = ROOT / "tests" / "data" / "recorded" / "pi-0.73.1" / "tools-multi-prompt" / "exchanges.jsonl"


@pytest.fixture(scope="module")
def token_url(tmp_path_factory) -> str:
    folder = tmp_path_factory.mktemp("tok")
    (folder / "text.jsonl").write_text(json.dumps(text_token_line()) + "\n")
    shutil.copy(SAMPLE, folder / SAMPLE.name)
    shutil.copy(PI, folder / "pi.jsonl")
    url = fresh_url(folder)
    with Session(get_engine(url)) as s:
        report = ingest_paths([folder], session=s)
        s.commit()
        assert not report.rejected
        ensure_analysis(s)
    return url


def _first_call(url: str, episode: str) -> str:
    rows = query(url, 'SELECT call_id FROM "call" WHERE episode_id = :e ORDER BY line', e=episode)
    return rows[0][0]


def _strip(at) -> str:
    return next(
        e.proto.body for e in at.get("html") if "⟨" in e.proto.body or "title=" in e.proto.body
    )


def test_text_tokens_with_logprob_and_clipped_ratio(token_url, on_store):
    on_store(token_url)
    at = open_page(
        "pages/episode.py", episode="tok-ep", call=_first_call(token_url, "tok-ep"), panel="tokens"
    )
    no_exception(at)
    captions = " ".join(c.value for c in at.caption)
    assert "token text from the log" in captions
    assert "clipped 25.0% (1 token, marked ✂)" in captions
    # Text and logprobs but no ids: no training-row view, and it says why.
    assert "cannot be lined up into training rows" in captions
    assert {m.label: m.value for m in at.metric}["Generated tokens"] == "4"
    strip = _strip(at)
    assert "&lt;b&gt;" in strip and "<b>" not in strip
    assert strip.count("✂") == 1
    table = next(d.value for d in at.dataframe if "ratio" in d.value.columns)
    assert list(table["text"]) == ["Hi", " <b>", "there", "</b>\n"]
    assert list(table["clipped"]) == [False, True, False, False]
    at.segmented_control(key=KEY_TOKEN_COLOUR).set_value("importance ratio").run()
    no_exception(at)
    assert "a red frame and ✂ mark a clipped token" in " ".join(c.value for c in at.caption)


def test_vllm_sample_shows_ids_and_logprobs_without_text(token_url, on_store):
    on_store(token_url)
    first = json.loads(SAMPLE.open().readline())["response"]["body"]["choices"][0]
    at = open_page(
        "pages/episode.py",
        episode="t0001-openclaw-a1",
        call=_first_call(token_url, "t0001-openclaw-a1"),
        panel="tokens",
    )
    no_exception(at)
    captions = " ".join(c.value for c in at.caption)
    assert "no token text in the log" in captions and "logprobs logged" in captions
    assert "no trainer logprobs logged" in captions
    strip = _strip(at)
    assert f"⟨{first['token_ids'][0]}⟩" in strip
    table = next(d.value for d in at.dataframe if "ratio" in d.value.columns)
    assert len(table) == len(first["token_ids"])
    assert table["logprob"].iloc[0] == first["logprobs"]["content"][0]["logprob"]
    # Without trainer logprobs there is no ratio to colour by.
    with pytest.raises(KeyError):
        at.segmented_control(key=KEY_TOKEN_COLOUR)


def test_pi_recording_has_ids_only(token_url, on_store):
    on_store(token_url)
    at = open_page(
        "pages/episode.py",
        episode="pi-tools-multi-prompt",
        call=_first_call(token_url, "pi-tools-multi-prompt"),
        panel="tokens",
    )
    no_exception(at)
    captions = " ".join(c.value for c in at.caption)
    assert "no logprobs logged" in captions
    strip = _strip(at)
    # The first streamed chunk with ids is "Reading both." -> ids 26289, 22377, 32773, 32678.
    assert "⟨26289⟩" in strip and "⟨32678⟩" in strip
