"""The literal prefix that lets strip_patterns and the markers skip a regex: every match of the
pattern starts with it, so a text without it cannot match."""

from __future__ import annotations

import re

from clawviz.recon.canonical import _literal_prefix, strip_patterns
from clawviz.recon.markers import ALL_IGNORE_PATTERNS


def test_prefixes_are_the_literal_start_of_each_match():
    cases = {
        r"(?m)^\[(?:Mon|Tue) \d{4}\]": "[",
        r"(?m)^# Subagent Context\b": "# Subagent Context",
        r"abc+": "ab",
        r"ab*c": "a",
        r"a|b": "",
        r"(?i)abc": "",
        r"^\s*Warmup": "",
        r"x-header:[^\n]*": "x-header:",
    }
    for pattern, prefix in cases.items():
        assert _literal_prefix(re.compile(pattern)) == prefix, pattern


def test_stripping_with_the_shortcut_equals_plain_substitution():
    texts = [
        "[Mon 2026-01-05 10:00] hello\n[Tue 2026-01-06 11:00:01 UTC] again",
        "no bracket here",
        "<system-reminder>a<system-reminder>b</system-reminder></system-reminder>keep",
        "x-anthropic-billing-header: cc_version=1\nrest",
    ]
    for text in texts:
        plain = text
        for p in ALL_IGNORE_PATTERNS:
            while (stripped := p.sub("", plain)) != plain:
                plain = stripped
        assert strip_patterns(text, ALL_IGNORE_PATTERNS) == plain
