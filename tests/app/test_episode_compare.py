"""AppTest of Compare on the Episode page (sample store): nearest episodes first, the kept paths
turn by turn, both final answers and the two final workspaces diffed, a button to the other
episode.

The files that differ between the two after-workspaces are found here by reading both."""

from __future__ import annotations

from pathlib import Path

from apphelpers import no_exception, open_page

from clawviz.ui import compare, sections, state

EPISODE = "pages/episode.py"
ROOT = Path(__file__).resolve().parents[2]
LEFT, RIGHT = "t0001-openclaw-a1", "t0001-openclaw-a3"


def _differing(a: Path, b: Path) -> set[str]:
    fa = {p.relative_to(a).as_posix() for p in a.rglob("*") if p.is_file()}
    fb = {p.relative_to(b).as_posix() for p in b.rglob("*") if p.is_file()}
    return (fa ^ fb) | {p for p in fa & fb if (a / p).read_bytes() != (b / p).read_bytes()}


def test_picker_offers_the_nearest_episodes_first(sample_db_url, on_store):
    on_store(sample_db_url)
    at = open_page(EPISODE, episode=LEFT)
    no_exception(at)
    at.segmented_control(key=state.KEY_SECTION).set_value(sections.SECTION_COMPARE).run()
    no_exception(at)
    assert at.query_params[state.QP_SECTION] == sections.SECTION_COMPARE
    box = at.selectbox(key=state.KEY_COMPARE_SELECT)
    opts = box.options[1:]
    # The sample store has task_0001 in openclaw a1-a4 and claude-code a1-a4.
    first_three = [o.split(": ", 1)[1].split(" · ")[0] for o in opts[:3]]
    assert first_three == ["t0001-openclaw-a2", "t0001-openclaw-a3", "t0001-openclaw-a4"]
    assert opts[3].startswith("same task, other harness: t0001-claude-code-a1")
    assert any(o.startswith("other task: ") for o in opts)


def test_compare_aligns_turns_diffs_answers_and_workspaces(sample_db_url, on_store):
    on_store(sample_db_url)
    at = open_page(EPISODE, episode=LEFT, compare=RIGHT)
    no_exception(at)
    table = next(d.value for d in at.dataframe if "verdict" in d.value.columns)
    assert list(table.columns[:5]) == [
        "turn",
        "left call",
        "left tools",
        "right call",
        "right tools",
    ]
    # Both attempts read the task data first (the sample agent's first step).
    assert table["left tools"].iloc[0].startswith("read(path=data/tasks.csv)")
    assert table["verdict"].iloc[0] == "same"
    assert "different" in set(table["verdict"])
    assert any("first part ways at turn" in c.value for c in at.caption)
    assert any("Final answers" in m.value for m in at.markdown)
    files = next(d.value for d in at.dataframe if "file" in d.value.columns)
    ws = ROOT / "sample_logs" / "workspaces"
    expected = _differing(ws / f"{LEFT}/after", ws / f"{RIGHT}/after")
    assert set(files["file"]) == expected
    code = [c.value for c in at.code if c.language == "diff"]
    assert code and code[0].startswith(f"--- {LEFT}/")
    keys = {getattr(t, "key", None) for t in at.get("plotly_chart")}
    assert {"episode_compare_left", "episode_compare_right"} <= keys
    # The left button names the episode shown; the right one opens the other, sides swapped.
    left = at.button(key=f"{compare.KEY_OPEN_PREFIX}left")
    right = at.button(key=f"{compare.KEY_OPEN_PREFIX}right")
    assert left.label == f"Left: {LEFT}" and left.disabled
    assert right.label == f"Right: {RIGHT}" and not right.disabled
    right.click().run()
    no_exception(at)
    assert at.query_params[state.QP_EPISODE] == RIGHT
    assert at.query_params[state.QP_COMPARE] == LEFT
    assert state.QP_CALL not in at.query_params
    assert at.segmented_control(key=state.KEY_SECTION).value == sections.SECTION_COMPARE
    assert at.title[0].value.replace("\\", "") == f"Episode {RIGHT}"
    assert at.button(key=f"{compare.KEY_OPEN_PREFIX}right").label == f"Right: {LEFT}"


def test_no_compare_without_a_choice(sample_db_url, on_store):
    on_store(sample_db_url)
    at = open_page(EPISODE, episode=LEFT, section=sections.SECTION_COMPARE)
    no_exception(at)
    assert at.selectbox(key=state.KEY_COMPARE_SELECT).value == state.NONE_OPTION
    assert not any("verdict" in d.value.columns for d in at.dataframe)
