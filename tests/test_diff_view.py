"""The call diff's HTML (`clawviz.ui.diff_view.section_html`): log text is escaped, never markup."""

from __future__ import annotations

from html.parser import HTMLParser

from clawviz.recon.calldiff import DiffLine, SectionDiff, diff_lines
from clawviz.ui.diff_view import section_html, section_summary

HOSTILE = [
    "<script>alert(1)</script>",
    '<img src=x onerror="alert(2)">',
    "</div></span><a href='javascript:alert(3)'>click</a>",
    "&lt;already escaped&gt; & <b>bold</b>",
    '" style="position:fixed;inset:0',
]


class _Tags(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.tags: list[tuple[str, list[tuple[str, str | None]]]] = []
        self.text: list[str] = []

    def handle_starttag(self, tag, attrs):
        self.tags.append((tag, attrs))

    def handle_data(self, data):
        self.text.append(data)


def _parse(markup: str) -> _Tags:
    p = _Tags()
    p.feed(markup)
    return p


def test_hostile_lines_are_text_in_the_diff_html():
    section = diff_lines(["same"] + HOSTILE, ["same"] + list(reversed(HOSTILE)), name="messages")
    markup = section_html(section)
    parsed = _parse(markup)
    # Only the renderer's own div / span tags, each with a style attribute and nothing else.
    assert {t for t, _ in parsed.tags} <= {"div", "span"}
    assert all([name for name, _ in attrs] == ["style"] for _, attrs in parsed.tags)
    text = "".join(parsed.text)
    for line in HOSTILE:
        assert line in text


def test_ignored_rule_name_is_escaped_too():
    section = SectionDiff(
        "messages",
        [DiffLine("add", "x", None, 1, ignored="<i>rule</i>")],
        0,
        1,
    )
    parsed = _parse(section_html(section))
    assert "i" not in {t for t, _ in parsed.tags}
    assert "ignored for matching: <i>rule</i>" in "".join(parsed.text)


def test_fold_row_and_summaries():
    section = diff_lines(["a"] * 812, ["a"] * 812)
    assert "… 812 unchanged lines …" in section_html(section)
    assert section_summary(section) == "unchanged (812 lines)"
    changed = diff_lines(["a", "b"], ["a", "c", "d"])
    assert section_summary(changed) == "+2 −1 lines"


def test_long_diff_is_cut_with_a_note():
    section = diff_lines([], [f"l{i}" for i in range(50)])
    markup = section_html(section, max_lines=10)
    assert "40 more diff lines not drawn" in markup
    assert "l9" in markup and "l10<" not in markup
