"""AppTest of the Episode page's one-section first view: the section below the tree and the call
inspector's panel are chosen by a control whose choice is in the URL (`section=`, `panel=`), a
link naming them restores them, and only the chosen section and panel are drawn."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from apphelpers import no_exception, open_page

from clawviz.ui import sections, state

EPISODE = "pages/episode.py"
TOO_MANY = "e31cf886-54eb-430f-8bb4-89af4c2f1420"
ROOT = Path(__file__).resolve().parents[2]


def _controls(at) -> tuple[str, str | None]:
    section = at.segmented_control(key=state.KEY_SECTION).value
    panels = [s for s in at.segmented_control if s.key == state.KEY_PANEL]
    return section, panels[0].value if panels else None


def _chart_keys(at) -> set[str]:
    return {getattr(t, "key", None) for t in at.get("plotly_chart")}


def _is_request_panel(caption: str) -> bool:
    """A caption only the request diff panel writes (with or without a parent call)."""
    return "Changes since the parent" in caption or caption.startswith("No parent call")


def _selectbox_keys(at) -> set[str]:
    return {s.key for s in at.selectbox}


def test_section_and_panel_round_trip_through_the_url(sample_db_url, on_store):
    on_store(sample_db_url)
    at = open_page(EPISODE, episode=TOO_MANY)
    no_exception(at)
    assert _controls(at) == (sections.SECTION_CALL, sections.PANEL_REQUEST)
    assert state.QP_SECTION not in at.query_params and state.QP_PANEL not in at.query_params

    at.segmented_control(key=state.KEY_PANEL).set_value(sections.PANEL_TOKENS).run()
    no_exception(at)
    assert at.query_params[state.QP_PANEL] == sections.PANEL_TOKENS
    at.segmented_control(key=state.KEY_SECTION).set_value(sections.SECTION_PATHS).run()
    no_exception(at)
    assert at.query_params[state.QP_SECTION] == sections.SECTION_PATHS
    assert _controls(at) == (sections.SECTION_PATHS, None)

    # A pasted link restores both choices.
    link = {k: at.query_params[k] for k in at.query_params}
    assert link == {"episode": TOO_MANY, "section": "paths", "panel": "tokens"}
    pasted = open_page(EPISODE, **link)
    no_exception(pasted)
    assert _controls(pasted) == (sections.SECTION_PATHS, None)
    assert any("GRPO advantage" in d.value.columns for d in pasted.dataframe)
    pasted.segmented_control(key=state.KEY_SECTION).set_value(sections.SECTION_CALL).run()
    no_exception(pasted)
    # Back to the default section: the parameter goes, the panel picked before is still shown.
    assert state.QP_SECTION not in pasted.query_params
    assert _controls(pasted) == (sections.SECTION_CALL, sections.PANEL_TOKENS)
    pasted.segmented_control(key=state.KEY_PANEL).set_value(sections.PANEL_REQUEST).run()
    no_exception(pasted)
    assert state.QP_PANEL not in pasted.query_params

    # Unknown values in a link fall back to the defaults.
    odd = open_page(EPISODE, episode=TOO_MANY, section="nope", panel="nope")
    no_exception(odd)
    assert _controls(odd) == (sections.SECTION_CALL, sections.PANEL_REQUEST)


def test_unselecting_the_chosen_segment_keeps_it(sample_db_url, on_store):
    on_store(sample_db_url)
    at = open_page(EPISODE, episode=TOO_MANY, section="paths")
    # A click on the chosen segment of st.segmented_control sends None.
    at.segmented_control(key=state.KEY_SECTION).set_value(None).run()
    no_exception(at)
    assert at.query_params[state.QP_SECTION] == sections.SECTION_PATHS
    assert _controls(at) == (sections.SECTION_PATHS, None)


def test_only_the_chosen_section_and_panel_are_drawn(sample_db_url, on_store):
    on_store(sample_db_url)
    at = open_page(EPISODE, episode=TOO_MANY)
    no_exception(at)
    # Call: the inspector with its request diff; no table, no compare, no tabs, no token chart.
    assert len(at.dataframe) == 0
    assert len(at.tabs) == 0
    assert state.KEY_CALL_SELECT in _selectbox_keys(at)
    assert state.KEY_COMPARE_SELECT not in _selectbox_keys(at)
    assert _chart_keys(at) == {state.KEY_TREE}
    assert not any(t.key == state.KEY_RAW_JSON for t in at.toggle)
    assert any(_is_request_panel(c.value) for c in at.caption)

    at.segmented_control(key=state.KEY_PANEL).set_value(sections.PANEL_RAW).run()
    no_exception(at)
    assert any(t.key == state.KEY_RAW_JSON for t in at.toggle)
    assert not any(_is_request_panel(c.value) for c in at.caption)

    at.segmented_control(key=state.KEY_SECTION).set_value(sections.SECTION_PATHS).run()
    no_exception(at)
    assert [list(d.value.columns)[:1] for d in at.dataframe] == [["path"]]
    assert not any(s.key == state.KEY_PANEL for s in at.segmented_control)
    assert {state.KEY_CALL_SELECT, state.KEY_COMPARE_SELECT} & _selectbox_keys(at) == set()
    assert not any(m.label == "Input tokens" for m in at.metric)

    at.segmented_control(key=state.KEY_SECTION).set_value(sections.SECTION_COMPARE).run()
    no_exception(at)
    assert len(at.dataframe) == 0
    assert _selectbox_keys(at) >= {state.KEY_COMPARE_SELECT}
    assert state.KEY_CALL_SELECT not in _selectbox_keys(at)
    # The tree above still marks the call the URL (or the default) selects.
    assert at.session_state[state.KEY_CALL_SELECT]


def test_a_tree_or_reason_pick_from_another_section_opens_the_call(sample_db_url, on_store):
    on_store(sample_db_url)
    ep = "t0001-claude-code-a4"
    at = open_page(EPISODE, episode=ep, section="paths")
    no_exception(at)
    button = next(b for b in at.button if b.label == "Inspect call 5")
    button.click().run()
    no_exception(at)
    assert state.QP_SECTION not in at.query_params
    assert _controls(at)[0] == sections.SECTION_CALL
    assert at.selectbox(key=state.KEY_CALL_SELECT).value == at.query_params[state.QP_CALL]


PROBE = """
import json, sys
sys.path.insert(0, {tests!r})
from apphelpers import open_page
at = open_page("pages/episode.py", episode={episode!r}{extra})
assert not at.exception, [e.value for e in at.exception]
mods = ("clawviz.ui.compare", "clawviz.ui.token_view", "clawviz.recon.align")
print(json.dumps({{m: m in sys.modules for m in mods}}))
"""


def _loaded(url: str, extra: str = "") -> dict[str, bool]:
    code = PROBE.format(tests=str(ROOT / "tests" / "app"), episode=TOO_MANY, extra=extra)
    env = {**__import__("os").environ, "CLAWVIZ_DATABASE_URL": url, "CLAWVIZ_NO_SAMPLES": "1"}
    out = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True, timeout=300
    )
    assert out.returncode == 0, out.stderr[-2000:]
    return json.loads(out.stdout.strip().splitlines()[-1])


def test_first_view_does_not_import_what_other_sections_need(sample_db_url):
    """A fresh process (a fresh server's first run): Compare and the token view are imported
    only when chosen."""
    assert not any(_loaded(sample_db_url).values())
    assert _loaded(sample_db_url, ", section='compare', panel='tokens'") == {
        "clawviz.ui.compare": True,
        "clawviz.ui.token_view": False,
        "clawviz.recon.align": True,
    }
