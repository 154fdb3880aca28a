"""Per-token view: token text read from the log, ratios per token, escaped strip HTML.

Expected values are written by hand from the hand-made log lines below (the ratio of a token
is min(exp(trainer - rollout), 2)), and from the sample / pi logs' own fields.
"""

from __future__ import annotations

import json
import math
from html.parser import HTMLParser
from pathlib import Path

import pytest

from clawviz.figures.tokens import logprob_colour, ratio_colour, token_cells
from clawviz.ingest.exchange import parse_exchange
from clawviz.recon.advantage import importance_ratios
from clawviz.types import Rollout
from clawviz.ui.token_view import COLOUR_LOGPROB, COLOUR_RATIO, strip_html, token_table

ROOT = Path(__file__).resolve().parents[1]
TOKENS = ["Hi", " <b>", "there", "</b>\n"]
ROLLOUT_LP = [-0.1, -2.5, -0.7, -0.05]
TRAINER_LP = [-0.1, -1.0, -0.8, -0.05]
"""Ratios by hand: exp(0) = 1; exp(1.5) = 4.48 -> clipped to 2; exp(-0.1) = 0.905; 1."""


def text_token_line(episode: str = "tok-ep", seq: int = 1) -> dict:
    """An OpenAI chat exchange whose logprobs carry token text, plus trainer logprobs."""
    return {
        "request": {
            "timestamp": 10.0 + seq,
            "method": "POST",
            "url": "http://h/v1/chat/completions",
            "headers": {},
            "body": {
                "model": "m",
                "logprobs": True,
                "messages": [{"role": "user", "content": "say hi"}],
            },
        },
        "response": {
            "timestamp": 10.5 + seq,
            "status_code": 200,
            "headers": {},
            "body": {
                "model": "m",
                "choices": [
                    {
                        "index": 0,
                        "message": {"role": "assistant", "content": "".join(TOKENS)},
                        "finish_reason": "stop",
                        "logprobs": {
                            "content": [
                                {"token": t, "logprob": lp, "bytes": None, "top_logprobs": []}
                                for t, lp in zip(TOKENS, ROLLOUT_LP, strict=True)
                            ]
                        },
                    }
                ],
                "usage": {"prompt_tokens": 3, "completion_tokens": 4},
            },
        },
        "clawviz": {"episode_id": episode, "seq": seq, "rollout": {"trainer_logprobs": TRAINER_LP}},
    }


def _parse(record: dict):
    return parse_exchange(
        record, source_file="t.jsonl", line=1, call_id="c1", file_episode="t"
    ).call


def test_openai_token_text_and_trainer_logprobs_are_read():
    r = _parse(text_token_line()).rollout
    assert r is not None
    assert r.output_tokens == TOKENS
    assert r.output_logprobs == ROLLOUT_LP
    assert r.trainer_logprobs == TRAINER_LP
    assert r.output_token_ids is None


def test_vllm_token_id_tokens_are_ids_not_text():
    line = json.loads(
        (ROOT / "sample_logs/exchanges/openclaw/t0001-openclaw-a1.jsonl").open().readline()
    )
    content = line["response"]["body"]["choices"][0]["logprobs"]["content"]
    r = _parse(line).rollout
    assert r.output_tokens is None
    assert r.output_token_ids[:2] == [int(content[0]["token"][9:]), int(content[1]["token"][9:])]
    assert r.output_logprobs[0] == content[0]["logprob"]


def test_sglang_triples_carry_text():
    rec = text_token_line()
    choice = rec["response"]["body"]["choices"][0]
    del choice["logprobs"]
    rec["response"]["body"]["meta_info"] = {
        "output_token_logprobs": [[-0.5, 7, "a"], [-0.25, 8, "b"]]
    }
    del rec["clawviz"]["rollout"]
    r = _parse(rec).rollout
    assert (r.output_token_ids, r.output_tokens, r.output_logprobs) == (
        [7, 8],
        ["a", "b"],
        [-0.5, -0.25],
    )


def test_ratios_per_token_with_the_clipped_one_marked():
    r = Rollout(output_logprobs=ROLLOUT_LP, trainer_logprobs=TRAINER_LP, output_tokens=TOKENS)
    stats = importance_ratios(r, 2.0)
    assert stats is not None
    assert stats.ratios == pytest.approx([1.0, 2.0, math.exp(-0.1), 1.0])
    assert stats.clipped == (False, True, False, False)
    assert stats.clipped_fraction == 0.25
    cells = token_cells(None, TOKENS, ROLLOUT_LP, stats.ratios, stats.clipped)
    assert [c.text for c in cells] == TOKENS
    assert [c.clipped for c in cells] == [False, True, False, False]
    assert cells[3].label == "</b>↵\n"
    assert "ratio 2.000 clipped" in cells[1].hover


def test_missing_logprob_has_no_ratio_instead_of_a_crash():
    r = Rollout(output_logprobs=[-0.1, None], trainer_logprobs=[-0.1, -0.2])  # type: ignore[list-item]
    assert importance_ratios(r) is None


def test_ids_only_cells_show_the_id():
    cells = token_cells([5, 0], None, None)
    assert [c.label for c in cells] == ["⟨5⟩", "⟨0⟩"]
    assert cells[0].logprob is None and cells[0].ratio is None


class _Tags(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.tags: list[str] = []
        self.titles: list[str] = []
        self.text = ""

    def handle_starttag(self, tag, attrs):
        self.tags.append(tag)
        self.titles.extend(v for k, v in attrs if k == "title")

    def handle_data(self, data):
        self.text += data


HOSTILE = ["<script>alert(1)</script>", '" onmouseover="alert(2)', "<img src=x onerror=y>", "&amp;"]


@pytest.mark.parametrize("mode", [COLOUR_LOGPROB, COLOUR_RATIO])
def test_strip_html_escapes_hostile_tokens(mode):
    cells = token_cells(
        None, HOSTILE, [-0.1] * 4, [1.0, 2.0, 0.5, 1.0], [False, True, False, False]
    )
    p = _Tags()
    p.feed(strip_html(cells, mode, 2.0))
    assert set(p.tags) <= {"div", "span", "sup"}
    assert p.text == "".join(HOSTILE[:1]) + HOSTILE[1] + "✂" + HOSTILE[2] + HOSTILE[3]
    assert any("'\" onmouseover=\"alert(2)'" in t for t in p.titles)


def test_colour_scales():
    assert logprob_colour(0.0) == "#ffffff"
    assert logprob_colour(-50.0) == "#f0803c"
    assert ratio_colour(1.0, 2.0) == "#ffffff"
    assert ratio_colour(2.0, 2.0) == "#e87828"
    assert ratio_colour(0.0, 2.0) == "#548ce6"


def test_token_table_has_every_token():
    df = token_table(token_cells([1, 2, 3], None, [-1.0, -2.0, -3.0]))
    assert list(df["token id"]) == [1, 2, 3] and list(df["logprob"]) == [-1.0, -2.0, -3.0]
