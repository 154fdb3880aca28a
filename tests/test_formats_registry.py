"""One registry of formats (clawviz.ingest.formats): both detection paths walk FORMATS."""

from __future__ import annotations

from clawviz.ingest import formats
from clawviz.ingest.transcripts import TRANSCRIPT_FORMATS, detect_transcript


def test_registry_names_every_format_once_in_detection_order():
    names = [f.name for f in formats.FORMATS]
    assert names == ["exchange", "findings", "results", *TRANSCRIPT_FORMATS]
    assert len(set(names)) == len(names)


def test_sniff_and_detect_transcript_use_the_registry(monkeypatch, tmp_path):
    """A format added to FORMATS is found by both paths, with nothing else changed."""
    from clawviz.jobs.ingest import _sniff

    new = formats.ModuleFormat("transcript_demo", "transcript", "tests.test_formats_registry")
    monkeypatch.setattr(formats, "FORMATS", (*formats.FORMATS, new))
    p = tmp_path / "demo.jsonl"
    p.write_text('{"demo_marker": 1}\n')
    assert detect_transcript([{"demo_marker": 1}]) == "transcript_demo"
    assert _sniff(p)[0] == "transcript_demo"
    # An exchange record is never a transcript.
    assert detect_transcript([{"demo_marker": 1, "request": {}, "response": {}}]) is None


def detect(records):  # the Format interface of this test module (used above)
    return any("demo_marker" in r for r in records)


def read(path, lines, rejects):
    raise AssertionError("not read in this test")
