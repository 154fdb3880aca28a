"""The explorer's JS and CSS, and the self-contained HTML file of `clawviz share` (no Streamlit).

The payload is embedded as JSON inside a `<script type="application/json">` element; `</`,
`<!--`, U+2028 and U+2029 are escaped so that no log text can close the element or start
markup, and the JS reads it with JSON.parse and inserts every text with textContent.
"""

from __future__ import annotations

import html
import json
from functools import cache
from pathlib import Path
from typing import Any

from clawviz.figures.explorer.pack import pack_payload

HERE = Path(__file__).resolve().parent


@cache
def explorer_js() -> str:
    return (HERE / "explorer.js").read_text(encoding="utf-8")


@cache
def explorer_css() -> str:
    return (HERE / "explorer.css").read_text(encoding="utf-8")


def safe_json(payload: Any) -> str:
    """JSON that is safe inside a `<script>` element: no `</`, `<!--`, U+2028 or U+2029."""
    text = json.dumps(payload, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
    return (
        text.replace("<", "\\u003c")
        .replace(">", "\\u003e")
        .replace("&", "\\u0026")
        .replace("\u2028", "\\u2028")
        .replace("\u2029", "\\u2029")
    )


CSP = "default-src 'none'; style-src 'unsafe-inline'; script-src 'unsafe-inline'; img-src data:"
"""No network at all: the file's own inline style and script only."""

PAGE = """<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta http-equiv="Content-Security-Policy" content="{csp}">
<title>{title}</title>
<style>
body {{ margin: 0; padding: 10px 14px; background: #fff; }}
.cvx-body {{ --cvx-height: calc(100vh - 70px); }}
.cvx-share-foot {{ font: 11px system-ui, sans-serif; color: #6b7280; margin-top: 4px; }}
{css}
</style>
</head>
<body>
<div id="clawviz-explorer"></div>
<div class="cvx-share-foot">clawviz share: one self-contained file, no server, no network.</div>
<script type="application/json" id="clawviz-payload">{payload}</script>
<script>
{js}
clawvizExplorer(document.getElementById("clawviz-explorer"),
  JSON.parse(document.getElementById("clawviz-payload").textContent), {{}});
</script>
</body>
</html>
"""


def share_html(payload: dict[str, Any]) -> str:
    """One offline HTML file: the explorer's CSS and JS and the payload inline, packed
    (`pack.pack_payload`: each repeated string once; explorer.js unpacks it)."""
    title = "clawviz · " + str(payload.get("episode", {}).get("title", ""))
    return PAGE.format(
        title=html.escape(title),
        csp=CSP,
        css=explorer_css(),
        js=explorer_js(),
        payload=safe_json(pack_payload(payload)),
    )
