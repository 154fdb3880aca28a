"""docs/ARCHITECTURE.md names only modules, functions and tests that exist."""

from __future__ import annotations

import importlib
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DOC = (ROOT / "docs" / "ARCHITECTURE.md").read_text(encoding="utf-8")
STAGES = "ingest|jobs|store|recon|review|export|record|figures|ui|cli|settings|types|samples"


def _resolve(dotted: str) -> object:
    parts = dotted.split(".")
    for i in range(len(parts), 0, -1):
        try:
            obj = importlib.import_module("clawviz." + ".".join(parts[:i]))
        except ModuleNotFoundError:
            continue
        for name in parts[i:]:
            obj = getattr(obj, name)
        return obj
    raise ModuleNotFoundError(dotted)


def test_every_named_module_and_function_exists():
    names = set(re.findall(rf"`((?:{STAGES})(?:\.\w+)+)`", DOC))
    assert len(names) > 40
    missing = []
    for name in sorted(names):
        try:
            _resolve(name)
        except (ModuleNotFoundError, AttributeError):
            missing.append(name)
    assert missing == []


def test_every_named_test_file_and_test_exists():
    # A path may be a glob (`tests/test_transcripts*.py`): it must match at least one file.
    refs = re.findall(r"`(tests/[\w/*]+\.py)(?:::(\w+)\*?)?`", DOC)
    assert len(refs) > 20
    assert any("*" in path for path, _ in refs)
    for path, test in refs:
        files = sorted(ROOT.glob(path)) if "*" in path else [ROOT / path]
        assert files and all(f.exists() for f in files), path
        if test:
            texts = [f.read_text(encoding="utf-8") for f in files]
            assert any(f"def {test}" in t for t in texts), f"{path}::{test}"
