"""The explorer's JS and CSS, and the self-contained HTML file of `clawviz share` (no Streamlit).

The payload is embedded in a `<script id="clawviz-payload">` element that the browser never
runs, either gzipped and base64-encoded (the default: about a fifth of the JSON's size; the
page unpacks it with the browser's `DecompressionStream`) or, `compress=False`, as readable JSON
in which `</`, `<!--`, U+2028 and U+2029 are escaped so that no log text can close the element
or start markup. Either way the JS reads it with JSON.parse and inserts every text with
textContent; base64 holds no `<` at all.
"""

from __future__ import annotations

import base64
import gzip
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
<script type="{payload_type}" id="clawviz-payload">{payload}</script>
<script>
{js}
{boot}
</script>
</body>
</html>
"""

GZIP_TYPE = "application/gzip;base64"
"""The payload element's type when it holds the gzipped JSON, base64-encoded."""

BOOT = """(async function () {
  var root = document.getElementById("clawviz-explorer");
  var el = document.getElementById("clawviz-payload");
  try {
    var text = el.textContent;
    if (el.type === "@GZIP_TYPE@") {
      if (typeof DecompressionStream === "undefined") {
        throw new Error("this browser has no DecompressionStream (Chrome 80, Firefox 113, " +
          "Safari 16.4 and later have it); write the file with `clawviz share --plain`");
      }
      var bin = atob(text.trim());
      var bytes = new Uint8Array(bin.length);
      for (var i = 0; i < bin.length; i++) bytes[i] = bin.charCodeAt(i);
      var stream = new Blob([bytes]).stream().pipeThrough(new DecompressionStream("gzip"));
      text = await new Response(stream).text();
    }
    clawvizExplorer(root, JSON.parse(text), {});
  } catch (err) {
    root.textContent = "clawviz could not open this file: " + err.message;
  }
})();""".replace("@GZIP_TYPE@", GZIP_TYPE)


def packed_json(payload: dict[str, Any]) -> bytes:
    """The packed payload as compact UTF-8 JSON (what the gzipped element holds)."""
    return json.dumps(
        pack_payload(payload), ensure_ascii=False, separators=(",", ":"), allow_nan=False
    ).encode("utf-8")


def share_html(payload: dict[str, Any], compress: bool = True) -> str:
    """One offline HTML file: the explorer's CSS and JS and the payload inline, packed
    (`pack.pack_payload`: each repeated string once; explorer.js unpacks it), then gzipped and
    base64-encoded unless `compress` is False (readable, greppable JSON; about 5x larger).
    The bytes depend only on the payload (gzip's timestamp is 0)."""
    title = "clawviz · " + str(payload.get("episode", {}).get("title", ""))
    if compress:
        body = gzip.compress(packed_json(payload), compresslevel=9, mtime=0)
        data, kind = base64.b64encode(body).decode("ascii"), GZIP_TYPE
    else:
        data, kind = safe_json(pack_payload(payload)), "application/json"
    return PAGE.format(
        title=html.escape(title),
        csp=CSP,
        css=explorer_css(),
        js=explorer_js(),
        boot=BOOT,
        payload_type=kind,
        payload=data,
    )
