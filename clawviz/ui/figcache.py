"""The Episode tree figure, built once per drawn content and kept for every later view.

`tree_figure` takes the arguments of `clawviz.figures.tree.tree_figure` and returns the figure
that function draws; the figure is a pure function of its layout and options, so it is kept
under a digest of both. The layout carries the episode's calls and its analysis under the
settings in use, so the key is finer than (episode, settings hash): it also changes when a live
recording appends a call or a result changes a reward. Streamlit only reads the figure
(`st.plotly_chart` copies it with `to_dict`), so the one kept object is shared between reruns,
tabs and sessions; at most `MAX_FIGURES` are kept (least recently used first out).
"""

from __future__ import annotations

import hashlib
import pickle
import threading
from collections import OrderedDict
from typing import Any

from clawviz import figures
from clawviz.figures import TreeLayout

MAX_FIGURES = 64
_lock = threading.Lock()
_figures: OrderedDict[bytes, Any] = OrderedDict()


def figure_key(layout: TreeLayout, options: dict[str, Any]) -> bytes:
    """A digest of everything `tree_figure` draws from."""
    data = pickle.dumps((layout, sorted(options.items())), protocol=pickle.HIGHEST_PROTOCOL)
    return hashlib.blake2b(data, digest_size=20).digest()


def tree_figure(layout: TreeLayout, **options: Any) -> Any:
    """`clawviz.figures.tree.tree_figure(layout, **options)`, kept per digest of its input."""
    if isinstance(options.get("highlight_path"), list):
        options["highlight_path"] = tuple(options["highlight_path"])
    key = figure_key(layout, options)
    with _lock:
        fig = _figures.get(key)
        if fig is not None:
            _figures.move_to_end(key)
            return fig
    if isinstance(options.get("highlight_path"), tuple):
        options["highlight_path"] = list(options["highlight_path"])
    fig = figures.tree_figure(layout, **options)
    with _lock:
        _figures[key] = fig
        while len(_figures) > MAX_FIGURES:
            _figures.popitem(last=False)
    return fig


def clear() -> None:
    """Forget every kept figure (tests)."""
    with _lock:
        _figures.clear()
