// clawviz Episode explorer (issue 25): tree on the left, call inspector on the right, all in the
// browser. Plain ES2017, no dependencies, no network. Every log text goes in with textContent
// (or createTextNode), never as markup. Licence: the project's own (see the repository).
function clawvizExplorer(host, payload, opts) {
  "use strict";
  opts = opts || {};
  var SVGNS = "http://www.w3.org/2000/svg";
  if (payload.packed) payload = unpack(payload);
  var calls = payload.calls || [];
  var texts = payload.texts || [];
  var byId = {};
  calls.forEach(function (c, i) { c._i = i; byId[c.id] = c; });
  var listeners = [];
  var comments = opts.comments || payload.comments || {};
  var current = null;
  var findTerm = "";

  // The share file's payload is packed (clawviz/figures/explorer/pack.py): calls as columns,
  // repeated strings as indices into a table of distinct values, diff lines as indices into
  // `lines`. Rebuild the plain form (one object per call) that the rest of this file reads.
  function unpackRows(t) {
    var rows = [];
    for (var r = 0; r < t.n; r++) rows.push({});
    t.k.forEach(function (key, j) {
      var col = t.c[j];
      var vals = col.t ? unpackRows(col.t) : col.d ? col.i.map(function (i) { return i < 0 ? null : col.d[i]; }) : col.v;
      for (var r = 0; r < t.n; r++) rows[r][key] = vals[r];
    });
    return rows;
  }
  function unpack(p) {
    var out = {}, lines = p.lines || [];
    Object.keys(p).forEach(function (k) { if (k !== "packed" && k !== "lines") out[k] = p[k]; });
    out.calls = unpackRows(p.calls);
    out.edges = unpackRows(p.edges);
    var KINDS = ["same", "add", "del", "fold"];  // a diff line: value * 8 + kind * 2 + ignored
    var previous = [];
    out.calls.forEach(function (c) {
      // messages: [n, new...]: the previous call's first n text indices, then the new ones
      c.messages = previous.slice(0, c.messages[0]).concat(c.messages.slice(1));
      previous = c.messages;
      if (!c.diff) return;
      Object.keys(c.diff).forEach(function (name) {
        var sec = c.diff[name];
        if (!Array.isArray(sec)) return;  // "parent"
        // a section: added, removed, then each line as one integer
        c.diff[name] = { added: sec[0], removed: sec[1], lines: sec.slice(2).map(function (v) {
          var kind = KINDS[(v >> 1) & 3], value = Math.floor(v / 8);
          return [kind, kind === "fold" ? value : lines[value], v & 1];
        }) };
      });
    });
    return out;
  }

  function el(tag, cls, text) {
    var e = document.createElement(tag);
    if (cls) e.className = cls;
    if (text !== undefined && text !== null) e.textContent = String(text);
    return e;
  }
  function svg(tag, attrs) {
    var e = document.createElementNS(SVGNS, tag);
    for (var k in attrs) e.setAttribute(k, String(attrs[k]));
    return e;
  }
  function on(target, ev, fn) { target.addEventListener(ev, fn); listeners.push([target, ev, fn]); }
  function num(v) { return typeof v === "number" ? (Number.isInteger(v) ? String(v) : v.toFixed(3)) : v; }
  function dash(v) { return v === null || v === undefined || v === "" ? "\u2014" : String(v); }
  function money(v) {
    if (v === null || v === undefined) return "\u2014";
    return "$" + (v >= 1 ? v.toFixed(2) : v >= 0.01 ? v.toFixed(3) : v.toFixed(5));
  }
  function secs(v) { return v === null || v === undefined ? "\u2014" : v.toFixed(v < 10 ? 3 : 1) + " s"; }

  // ---------- layout ----------
  var root = el("div", "cvx");
  root.setAttribute("data-testid", "episode-explorer");
  root.tabIndex = 0;
  var head = el("div", "cvx-head");
  var ep = payload.episode || {};
  head.appendChild(el("strong", "cvx-title", ep.title || ep.id));
  head.appendChild(el("span", "cvx-badge cvx-st-" + (ep.status || "none"), dash(ep.status)));
  var facts = [];
  if (ep.task) facts.push("task " + ep.task);
  if (ep.harness) facts.push(ep.harness);
  if (ep.model) facts.push(ep.model);
  if (ep.attempt !== null && ep.attempt !== undefined) facts.push("attempt " + ep.attempt);
  facts.push("reward " + dash(num(ep.reward)));
  if (ep.advantage !== null && ep.advantage !== undefined) facts.push("A " + num(ep.advantage));
  facts.push(calls.length.toLocaleString() + " calls");
  var factsEl = el("span", "cvx-muted cvx-facts", facts.join(" \u00b7 "));
  factsEl.title = facts.join(" \u00b7 ");
  head.appendChild(factsEl);
  var epCost = el("span", "cvx-muted", ep.cost ? "cost " + money(ep.cost.total) +
    (ep.cost.unpriced ? " (" + ep.cost.priced + " of " + (ep.cost.priced + ep.cost.unpriced) + " calls priced)" : "") : "");
  epCost.setAttribute("data-testid", "explorer-episode-cost");
  if (ep.cost) head.appendChild(epCost);
  (ep.reasons || []).forEach(function (r) {
    var b = el("button", "cvx-reason", "\u2691 " + r.code);
    b.title = r.evidence || "";
    if (r.call_id) on(b, "click", function () { select(r.call_id, true); });
    head.appendChild(b);
  });
  if (ep.redacted) head.appendChild(el("span", "cvx-muted", "(redacted: no system prompts, no tool results)"));
  var tools = el("span", "cvx-tools");
  var zin = el("button", "cvx-btn", "+"); zin.title = "Zoom in";
  var zout = el("button", "cvx-btn", "\u2212"); zout.title = "Zoom out";
  var helpBtn = el("button", "cvx-btn", "?"); helpBtn.title = "Keyboard shortcuts";
  helpBtn.setAttribute("data-testid", "explorer-help");
  var treeBtn = el("button", "cvx-btn cvx-view cvx-on", "Tree");
  treeBtn.setAttribute("data-testid", "explorer-view-tree");
  var timeBtn = el("button", "cvx-btn cvx-view", "Timeline");
  timeBtn.title = "Calls as bars on wall-clock time (t)";
  timeBtn.setAttribute("data-testid", "explorer-view-timeline");
  tools.appendChild(treeBtn); tools.appendChild(timeBtn);
  tools.appendChild(zout); tools.appendChild(zin); tools.appendChild(helpBtn);
  head.appendChild(tools);
  var help = el("div", "cvx-help");
  help.setAttribute("data-testid", "explorer-help-popover");
  help.hidden = true;
  [["j / k", "next / previous call on the path"], ["u", "parent call"], ["d", "first child call"],
   ["f", "next failed call"], ["p", "next pinned call (\u2691 reason)"], ["c", "next compaction call"],
   ["t", "tree / timeline"],
   ["/", "find in the inspector (Enter: next match)"], ["drag", "pan the tree; the minimap (big trees) moves the view"],
   ["Esc", "close this help"], ["?", "show / hide this help"]]
    .forEach(function (kv) {
      var row = el("div", "cvx-help-row");
      row.appendChild(el("kbd", "", kv[0])); row.appendChild(el("span", "", kv[1]));
      help.appendChild(row);
    });
  head.appendChild(help);
  root.appendChild(head);

  var body = el("div", "cvx-body");
  var treeBox = el("div", "cvx-treebox");  // the tree pane, and the minimap over its corner
  var treePane = el("div", "cvx-tree");
  var insp = el("div", "cvx-insp");
  insp.setAttribute("data-testid", "call-inspector");
  treeBox.appendChild(treePane);
  body.appendChild(treeBox); body.appendChild(insp);
  root.appendChild(body);

  // ---------- tree ----------
  var DX = 46, DY = 34, PAD = 24;
  var maxX = 0, maxY = 0;
  calls.forEach(function (c) { maxX = Math.max(maxX, c.x); maxY = Math.max(maxY, c.y); });
  var W = maxX * DX + 2 * PAD + 40, H = maxY * DY + 2 * PAD + 20;
  var zoom = 1;
  var svgEl = svg("svg", { width: W, height: H, viewBox: "0 0 " + W + " " + H, class: "cvx-svg" });
  function px(c) { return PAD + c.x * DX; }
  function py(c) { return PAD + c.y * DY; }
  (payload.boundaries || []).forEach(function (bx) {
    svgEl.appendChild(svg("line", { x1: PAD + bx * DX, x2: PAD + bx * DX, y1: 0, y2: H, class: "cvx-boundary" }));
  });
  // Big trees are windowed: only the nodes and edges near the visible part of the pane are in
  // the DOM (redrawn on scroll and zoom), so 10,000 calls open without freezing the tab.
  var WINDOWED = calls.length > 1500;
  var nodeEls = {};
  var showAllLabels = calls.length <= 80;
  var layer = svg("g", {});
  svgEl.appendChild(layer);
  function edgeEl(e) {
    var a = byId[e.src], b = byId[e.dst];
    var d = "M" + px(a) + "," + py(a) + " L" + (px(b) - DX / 2) + "," + py(a) + " L" + (px(b) - DX / 2) + "," + py(b) + " L" + px(b) + "," + py(b);
    if (a.y === b.y) d = "M" + px(a) + "," + py(a) + " L" + px(b) + "," + py(b);
    return svg("path", { d: d, class: "cvx-edge cvx-edge-" + e.kind });
  }
  function nodeEl(c) {
    var g = svg("g", { class: "cvx-node cvx-st-" + c.state + (c.failed ? " cvx-failed" : ""), "data-call-id": c.id, tabindex: -1 });
    g.appendChild(svg("circle", { cx: px(c), cy: py(c), r: 9 }));
    var title = svg("title", {});
    title.textContent = "call " + c.label + " \u00b7 " + c.role + " \u00b7 " + c.state + (c.reason ? " (" + c.reason + ")" : "");
    g.appendChild(title);
    // Big trees: only failed and pinned calls are labelled until zoomed in (no overlaps).
    var keep = showAllLabels || c.pins.length || c.failed;
    var t = svg("text", { x: px(c), y: py(c) + 3.5, class: "cvx-label" + (keep ? "" : " cvx-thin") });
    t.textContent = c.label;
    g.appendChild(t);
    if (c.pins.length) {
      var pin = svg("text", { x: px(c) + 8, y: py(c) - 9, class: "cvx-pin" });
      pin.textContent = "\u2691";
      g.appendChild(pin);
    }
    var nc = (comments[c.id] || []).length;
    if (nc) {
      var cm = svg("text", { x: px(c) - 17, y: py(c) - 8, class: "cvx-cmark", "data-testid": "comment-mark" });
      cm.textContent = "\u270e" + (nc > 1 ? nc : "");
      g.appendChild(cm);
      title.textContent += " \u00b7 " + nc + (nc === 1 ? " comment" : " comments");
    }
    if (c.compaction) {
      g.appendChild(svg("rect", { x: px(c) - 12, y: py(c) - 12, width: 24, height: 24, class: "cvx-compaction" }));
    }
    if (current && current.id === c.id) g.classList.add("cvx-sel");
    g.addEventListener("click", function (ev) { ev.preventDefault(); select(c.id, true); });
    return g;
  }
  var drawnBox = null;
  function visibleBox() {
    var z = zoom || 1, w = treePane.clientWidth || 800, h = treePane.clientHeight || 600;
    var x0 = treePane.scrollLeft / z, y0 = treePane.scrollTop / z;
    return [x0 - w / z, y0 - h / z, x0 + 2 * w / z, y0 + 2 * h / z];  // one screen of margin
  }
  function inBox(c, b) { var x = px(c), y = py(c); return x >= b[0] && x <= b[2] && y >= b[1] && y <= b[3]; }
  function drawTree(force) {
    var b = WINDOWED ? visibleBox() : null;
    if (!force && WINDOWED && drawnBox) {
      var z = zoom || 1, w = (treePane.clientWidth || 800) / z / 2, h = (treePane.clientHeight || 600) / z / 2;
      var v = [treePane.scrollLeft / z, treePane.scrollTop / z];
      if (v[0] - drawnBox[0] > w && drawnBox[2] - v[0] - 2 * w > w && v[1] - drawnBox[1] > h && drawnBox[3] - v[1] - 2 * h > h) return;
    }
    if (!force && !WINDOWED && drawnBox) return;
    drawnBox = b || [0, 0, W, H];
    var fresh = svg("g", {});
    nodeEls = {};
    (payload.edges || []).forEach(function (e) {
      var a = byId[e.src], d = byId[e.dst];
      if (!a || !d) return;
      if (b && !inBox(a, b) && !inBox(d, b)) return;
      fresh.appendChild(edgeEl(e));
    });
    calls.forEach(function (c) {
      if (b && !inBox(c, b)) return;
      var g = nodeEl(c);
      nodeEls[c.id] = g;
      fresh.appendChild(g);
    });
    svgEl.replaceChild(fresh, layer);
    layer = fresh;
  }
  var scrollPending = false;
  on(treePane, "scroll", function () {
    if (scrollPending) return;
    scrollPending = true;
    requestAnimationFrame(function () {
      scrollPending = false;
      if (WINDOWED) drawTree(false);
      placeMinimapView();
    });
  });
  drawTree(true);
  treePane.appendChild(svgEl);

  // ---------- minimap ----------
  // The whole tree in miniature over the pane's corner, whenever the tree is bigger than the
  // pane: one dot per call (in its state's colour, the selected call ringed) and a box for the
  // part in view. A click or a drag on it moves the view there. Drawn on a canvas, so 10,000
  // calls cost one image, not 10,000 elements.
  var MM_W = 168, MM_H = 112;
  var mini = el("div", "cvx-minimap");
  mini.setAttribute("data-testid", "explorer-minimap");
  mini.title = "Overview: click or drag to move the view";
  var mmCanvas = el("canvas", "cvx-mm-canvas");
  var mmView = el("div", "cvx-mm-view");
  mmView.setAttribute("data-testid", "explorer-minimap-view");
  mini.appendChild(mmCanvas); mini.appendChild(mmView);
  mini.hidden = true;
  treeBox.appendChild(mini);
  var mmSX = 1, mmSY = 1;  // tree units to minimap pixels (a long thin tree is stretched to 28 px)
  var STATE_FILL = { kept: "#16a34a", pruned: "#f59e0b", failed: "#dc2626", auxiliary: "#8b5cf6" };
  function drawMinimap() {
    var s0 = Math.min(MM_W / W, MM_H / H);
    mmSX = s0; mmSY = Math.max(s0, Math.min(MM_H, 28) / H);
    var w = Math.max(24, Math.round(W * mmSX)), h = Math.max(16, Math.round(H * mmSY));
    mini.style.width = w + "px"; mini.style.height = h + "px";
    mmCanvas.width = w; mmCanvas.height = h;
    var ctx = mmCanvas.getContext && mmCanvas.getContext("2d");
    if (!ctx) return;
    ctx.clearRect(0, 0, w, h);
    var r = Math.max(1, Math.min(3, 9 * mmSX));
    calls.forEach(function (c) {
      ctx.fillStyle = STATE_FILL[c.state] || "#9ca3af";
      ctx.fillRect(px(c) * mmSX - r, py(c) * mmSY - r, 2 * r, 2 * r);
    });
    if (current) {
      ctx.strokeStyle = "#111827"; ctx.lineWidth = 1.5;
      ctx.strokeRect(px(current) * mmSX - r - 2, py(current) * mmSY - r - 2, 2 * r + 4, 2 * r + 4);
    }
  }
  function placeMinimapView() {
    var z = zoom || 1, cw = treePane.clientWidth, ch = treePane.clientHeight;
    var big = !timelineShown() && cw > 0 && (W * z > cw + 1 || H * z > ch + 1);
    if (mini.hidden === big) { mini.hidden = !big; if (big) drawMinimap(); }
    if (!big) return;
    var sx = mmSX / z, sy = mmSY / z;
    mmView.style.left = Math.round(treePane.scrollLeft * sx) + "px";
    mmView.style.top = Math.round(treePane.scrollTop * sy) + "px";
    mmView.style.width = Math.max(4, Math.round(Math.min(cw, W * z) * sx)) + "px";
    mmView.style.height = Math.max(4, Math.round(Math.min(ch, H * z) * sy)) + "px";
  }
  function minimapGo(ev) {
    var b = mmCanvas.getBoundingClientRect(), z = zoom || 1;
    var x = (ev.clientX - b.left) / mmSX, y = (ev.clientY - b.top) / mmSY;  // tree units
    treePane.scrollLeft = x * z - treePane.clientWidth / 2;
    treePane.scrollTop = y * z - treePane.clientHeight / 2;
  }
  var mmDrag = false;
  on(mini, "pointerdown", function (ev) {
    ev.preventDefault(); mmDrag = true;
    if (mini.setPointerCapture) try { mini.setPointerCapture(ev.pointerId); } catch (e) { /* synthetic */ }
    minimapGo(ev);
  });
  on(mini, "pointermove", function (ev) { if (mmDrag) minimapGo(ev); });
  on(mini, "pointerup", function () { mmDrag = false; });
  on(mini, "pointercancel", function () { mmDrag = false; });

  // Pan: drag the tree's background (a click on a node still selects it).
  var pan = null;
  on(treePane, "pointerdown", function (ev) {
    if (ev.button !== 0 || timelineShown() || (ev.target.closest && ev.target.closest(".cvx-node"))) return;
    pan = [ev.clientX, ev.clientY, treePane.scrollLeft, treePane.scrollTop];
    treePane.classList.add("cvx-panning");
  });
  on(window, "pointermove", function (ev) {
    if (!pan) return;
    treePane.scrollLeft = pan[2] - (ev.clientX - pan[0]);
    treePane.scrollTop = pan[3] - (ev.clientY - pan[1]);
  });
  on(window, "pointerup", function () { pan = null; treePane.classList.remove("cvx-panning"); });

  // ---------- timeline ----------
  // Calls as bars on the episode's wall clock: queued (to the upstream's headers), to first
  // byte, to last byte, from the recorder's timings; a call with only request and response
  // times is one plain bar; one with no start or end is listed as untimed. Overlapping calls
  // (parallel sub-agents) are packed into separate lanes, so they show as overlapping bars.
  function timelineShown() { return !timeline.hidden; }
  var timeline = el("div", "cvx-timeline");
  timeline.setAttribute("data-testid", "explorer-timeline");
  timeline.hidden = true;
  treePane.appendChild(timeline);
  var barEls = {};
  var timelineDrawn = false;
  var timed = calls.filter(function (c) { return c.timing && c.timing.start !== null && c.timing.last_byte !== null; });
  function drawTimeline() {
    timeline.textContent = "";
    barEls = {};
    var untimed = calls.length - timed.length;
    if (!timed.length) {
      timeline.appendChild(el("div", "cvx-muted cvx-pad", "\u2014 No call of this episode has both a request and a response time."));
      return;
    }
    var order = timed.slice().sort(function (a, b) { return a.timing.start - b.timing.start || a._i - b._i; });
    var laneEnd = [], laneOf = {};
    order.forEach(function (c) {
      var s0 = c.timing.start, e0 = s0 + c.timing.last_byte, lane = 0;
      while (lane < laneEnd.length && laneEnd[lane] > s0) lane++;
      laneEnd[lane] = e0; laneOf[c.id] = lane;
    });
    var span = 0;
    order.forEach(function (c) { span = Math.max(span, c.timing.start + c.timing.last_byte); });
    span = span || 1;
    var TPAD = 12, TOP = 22;
    var LH = Math.max(16, Math.min(28, Math.floor(((treePane.clientHeight || 400) - 140) / laneEnd.length)));
    var labelEnd = [];
    var width = Math.max(200, (treePane.clientWidth || 400) - 4) * zoom;
    var scale = (width - 2 * TPAD) / span;
    var height = TOP + laneEnd.length * LH + 10;
    var tsvg = svg("svg", { width: width, height: height, class: "cvx-svg cvx-tsvg" });
    var rough = span / 6, mag = Math.pow(10, Math.floor(Math.log10(rough)));
    var stepT = [1, 2, 5, 10].map(function (m) { return m * mag; }).find(function (v) { return v >= rough; }) || rough;
    for (var t = 0; t <= span + 1e-9; t += stepT) {
      var x = TPAD + t * scale;
      tsvg.appendChild(svg("line", { x1: x, x2: x, y1: TOP - 4, y2: height, class: "cvx-tick" }));
      var lab = svg("text", { x: x + 2, y: 12, class: "cvx-ticklabel" });
      lab.textContent = "+" + t.toFixed(Math.max(0, -Math.floor(Math.log10(stepT)))) + " s";
      tsvg.appendChild(lab);
    }
    order.forEach(function (c) {
      var tm = c.timing, y = TOP + laneOf[c.id] * LH, x0 = TPAD + tm.start * scale;
      var g = svg("g", { class: "cvx-bar cvx-st-" + c.state, "data-call-id": c.id });
      var parts = [];
      if (tm.headers !== null && tm.first_byte !== null && tm.first_byte <= tm.last_byte) {
        parts = [["queued", 0, tm.headers], ["ttfb", tm.headers, tm.first_byte], ["stream", tm.first_byte, tm.last_byte]];
      } else {
        parts = [["total", 0, tm.last_byte]];
      }
      parts.forEach(function (p) {
        g.appendChild(svg("rect", { x: x0 + p[1] * scale, y: y, height: LH - 4,
          width: Math.max(p[0] === "total" || p[0] === "stream" ? 2 : 0, (p[2] - p[1]) * scale), class: "cvx-seg cvx-seg-" + p[0] }));
      });
      var title = svg("title", {});
      title.textContent = "call " + c.label + " \u00b7 " + c.role + " \u00b7 start +" + secs(tm.start) +
        " \u00b7 queued " + secs(tm.headers) + " \u00b7 first byte " + secs(tm.first_byte) + " \u00b7 last byte " + secs(tm.last_byte);
      g.appendChild(title);
      // A label only where it has room in its lane (no overlaps); the title always says it.
      var w = tm.last_byte * scale, inside = w > 8 * String(c.label).length + 6;
      var lx = inside ? x0 + 3 : x0 + Math.max(w, 2) + 3, lane = laneOf[c.id];
      if (lx >= (labelEnd[lane] || 0)) {
        var tl = svg("text", { x: lx, y: y + (LH - 4) / 2 + 3.5, class: "cvx-barlabel" + (inside ? " cvx-in" : "") });
        tl.textContent = c.label;
        g.appendChild(tl);
        labelEnd[lane] = lx + 7 * String(c.label).length + 4;
      }
      on(g, "click", function (ev) { ev.preventDefault(); select(c.id, true); });
      barEls[c.id] = g;
      tsvg.appendChild(g);
    });
    timeline.appendChild(tsvg);
    var legend = el("div", "cvx-legend");
    [["queued", "queued (to headers)"], ["ttfb", "to first byte"], ["stream", "to last byte"], ["total", "request to response (no recorder timings)"]]
      .forEach(function (kv2) {
        var item = el("span", "cvx-legend-item");
        item.appendChild(el("i", "cvx-swatch cvx-seg-" + kv2[0]));
        item.appendChild(document.createTextNode(kv2[1]));
        legend.appendChild(item);
      });
    timeline.appendChild(legend);
    timeline.appendChild(el("div", "cvx-muted cvx-pad", span.toFixed(2) + " s from the first request to the last byte; " +
      laneEnd.length + (laneEnd.length === 1 ? " lane" : " lanes (calls in flight at once)") +
      (untimed ? "; " + untimed + " call(s) without times are not drawn (\u2014)" : "")));
    if (current && barEls[current.id]) barEls[current.id].classList.add("cvx-sel");
    timelineDrawn = true;
  }
  function showView(which) {
    var tl = which === "timeline";
    svgEl.style.display = tl ? "none" : "";
    timeline.hidden = !tl;
    if (body.classList.contains("cvx-wide-left") !== tl) { body.classList.toggle("cvx-wide-left", tl); timelineDrawn = false; }
    treeBtn.classList.toggle("cvx-on", !tl);
    timeBtn.classList.toggle("cvx-on", tl);
    if (tl && !timelineDrawn) drawTimeline();
    placeMinimapView();
  }
  on(treeBtn, "click", function () { showView("tree"); });
  on(timeBtn, "click", function () { showView("timeline"); });
  function applyZoom() {
    svgEl.classList.toggle("cvx-zoomed", zoom >= 1.4);
    svgEl.setAttribute("width", String(W * zoom));
    svgEl.setAttribute("height", String(H * zoom));
    if (WINDOWED) drawTree(true);
    if (timelineDrawn) { timelineDrawn = false; if (!timeline.hidden) drawTimeline(); }
    placeMinimapView();
  }
  on(zin, "click", function () { zoom = Math.min(4, zoom * 1.25); applyZoom(); });
  on(zout, "click", function () { zoom = Math.max(0.25, zoom / 1.25); applyZoom(); });
  on(helpBtn, "click", function () { help.hidden = !help.hidden; });

  // ---------- inspector ----------
  function pane(titleText, open) {
    var d = el("details", "cvx-sec");
    if (open) d.open = true;
    d.appendChild(el("summary", "", titleText));
    return d;
  }
  var SHOWN = 20000;  // characters of a long text drawn until "show all" is pressed
  function pre(text, cls) {
    var p = el("pre", "cvx-pre" + (cls ? " " + cls : ""));
    if (text.length <= SHOWN) { p.textContent = text; return p; }
    p.textContent = text.slice(0, SHOWN);
    var box = el("div", "cvx-long");
    box.appendChild(p);
    var more = el("button", "cvx-btn cvx-showall", "Show all (" + text.length.toLocaleString() + " characters; " +
      (text.length - SHOWN).toLocaleString() + " not shown)");
    more.setAttribute("data-testid", "explorer-show-all");
    // Find counts the matches in the part not shown too (`highlight`), and going to one of
    // them shows all of the text first (`nextMatch`).
    box.__cvxFull = text;
    box.__cvxShowAll = function () {
      if (box.__cvxFull === null) return;
      box.__cvxFull = null;
      p.textContent = text;
      if (more.parentNode) box.removeChild(more);
    };
    more.addEventListener("click", function () {
      box.__cvxShowAll();
      var content = box.closest(".cvx-content"), count = insp.querySelector(".cvx-find-count");
      if (findTerm && content && count) highlight(content, count, true);  // mark the rest too
    });
    box.appendChild(more);
    return box;
  }
  function countIn(low, term) {
    var n = 0, at = low.indexOf(term);
    while (at >= 0) { n++; at = low.indexOf(term, at + term.length); }
    return n;
  }
  function textOf(i) { return i === null || i === undefined ? null : texts[i]; }

  function diffBlock(sec) {
    var box = el("div", "cvx-pre cvx-diff");
    sec.lines.forEach(function (ln) {
      var kind = ln[0];
      var row;
      if (kind === "fold") {
        row = el("div", "cvx-fold", "\u2026 " + ln[1] + " unchanged lines \u2026");
      } else {
        var mark = kind === "add" ? "+ " : kind === "del" ? "- " : "  ";
        row = el("div", "cvx-d-" + kind + (ln[2] ? " cvx-ignored" : ""), mark + ln[1]);
      }
      box.appendChild(row);
    });
    return box;
  }

  function outline(text) {
    var heads = [];
    text.split("\n").forEach(function (line, i) {
      if (/^#{1,4} \S/.test(line) || /^<[a-z_-]+>$/i.test(line.trim())) heads.push([i, line.trim()]);
    });
    return heads;
  }

  function kv(tbl, k, v) {
    var tr = el("tr");
    tr.appendChild(el("th", "", k));
    tr.appendChild(el("td", "", dash(v)));
    tbl.appendChild(tr);
  }

  function render(c) {
    insp.textContent = "";
    insp.setAttribute("data-call-id", c.id);
    var h = el("div", "cvx-insp-head");
    h.appendChild(el("strong", "", "Call " + c.label));
    h.appendChild(el("span", "cvx-badge cvx-st-" + c.state, c.state + (c.reason ? " (" + c.reason + ")" : "")));
    h.appendChild(el("span", "cvx-muted", c.role));
    insp.appendChild(h);

    var find = el("div", "cvx-find");
    var input = el("input", "cvx-find-input");
    input.type = "search"; input.placeholder = "Find in this call";
    input.setAttribute("data-testid", "explorer-find");
    input.value = findTerm;
    var count = el("span", "cvx-find-count");
    count.setAttribute("data-testid", "explorer-find-count");
    find.appendChild(input); find.appendChild(count);
    insp.appendChild(find);

    var content = el("div", "cvx-content");
    insp.appendChild(content);

    c.pins.forEach(function (p) {
      var box = el("div", "cvx-pinbox");
      box.appendChild(el("strong", "", "\u2691 " + p.code + ": "));
      box.appendChild(document.createTextNode(p.evidence));
      content.appendChild(box);
    });
    if (c.edits && c.edits.length) {
      var esec = pane("History vs parent (" + c.edits.length + ")", true);
      esec.setAttribute("data-testid", "explorer-edits");
      var ul = el("ul", "cvx-edits");
      c.edits.forEach(function (e) {
        var li = el("li", e.explained ? "cvx-edit-ok" : "cvx-edit-bad");
        li.appendChild(el("strong", "", e.explained ? (e.rule || e.code) : "unexplained" + (e.code ? " " + e.code : "")));
        li.appendChild(document.createTextNode(": " + e.summary));
        ul.appendChild(li);
      });
      esec.appendChild(ul);
      content.appendChild(esec);
    }
    var tbl = el("table", "cvx-kv");
    kv(tbl, "model", c.model);
    kv(tbl, "endpoint", c.endpoint);
    kv(tbl, "HTTP", c.http_status);
    kv(tbl, "stop", c.stop_reason);
    kv(tbl, "tokens in / out", dash(c.usage.input) + " / " + dash(c.usage.output));
    kv(tbl, "cache read / write", dash(c.usage.cache_read) + " / " + dash(c.usage.cache_write));
    kv(tbl, "duration", c.duration_s === null ? null : c.duration_s.toFixed(2) + " s");
    var tm = c.timing || {};
    kv(tbl, "start", tm.start === null || tm.start === undefined ? null : "+" + secs(tm.start) + " after the first request");
    kv(tbl, "timing", "queued " + secs(tm.headers) + " \u00b7 first byte " + secs(tm.first_byte) + " \u00b7 last byte " + secs(tm.last_byte));
    var co = c.cost;
    kv(tbl, "cost", co ? money(co.total) + " (input " + money(co.input) + ", output " + money(co.output) +
      ", cache read " + money(co.cache_read) + ", cache write " + money(co.cache_write) + "; price " + co.pattern + ")" : null);
    tbl.lastChild.setAttribute("data-testid", "explorer-call-cost");
    kv(tbl, "why", c.role_reason);
    if (c.note) kv(tbl, "note", c.note);
    if (c.error) kv(tbl, "error", c.error);
    kv(tbl, "parent", c.parent ? "call " + byId[c.parent].label : null);
    if (c.retry_of && byId[c.retry_of]) kv(tbl, "retry of", "call " + byId[c.retry_of].label);
    kv(tbl, "reward / advantage", dash(num(c.reward)) + " / " + dash(num(c.advantage)));
    kv(tbl, "source", c.source);
    content.appendChild(tbl);
    content.appendChild(commentBox(c));

    if (c.diff) {
      var dsec = pane("Request vs parent (call " + byId[c.diff.parent].label + ")", true);
      ["messages", "system prompt", "tools"].forEach(function (name) {
        var s = c.diff[name];
        if (!s) return;
        var sub = pane(name + " (+" + s.added + " \u2212" + s.removed + ")", name === "messages" || s.added + s.removed > 0);
        sub.appendChild(diffBlock(s));
        dsec.appendChild(sub);
      });
      content.appendChild(dsec);
    }
    var resp = textOf(c.response);
    var rsec = pane("Response", true);
    rsec.appendChild(resp === null ? el("div", "cvx-muted", "\u2014 (no response)") : pre(resp));
    content.appendChild(rsec);

    var msec = pane("Request messages (" + c.messages.length + ")", !c.diff);
    c.messages.forEach(function (ti) {
      var t = texts[ti];
      var long = t.length > 1500;
      var d = pane(t.split("\n")[0] + (long ? " (" + t.length.toLocaleString() + " chars)" : ""), !long);
      d.appendChild(pre(t));
      msec.appendChild(d);
    });
    content.appendChild(msec);

    var sys = textOf(c.system);
    if (sys !== null) {
      var ssec = pane("System prompt (" + sys.length.toLocaleString() + " chars)", false);
      var heads = outline(sys);
      var body = pre(sys);
      if (heads.length) {
        var ol = el("div", "cvx-outline");
        heads.slice(0, 60).forEach(function (hd) {
          var a = el("button", "cvx-linkbtn", hd[1]);
          on(a, "click", function () {
            var lh = parseFloat(getComputedStyle(body.tagName === "PRE" ? body : body.querySelector("pre")).lineHeight) || 16;
            var target = body.tagName === "PRE" ? body : body.querySelector("pre");
            target.scrollTop = hd[0] * lh;
          });
          ol.appendChild(a);
        });
        ssec.appendChild(ol);
      }
      ssec.appendChild(body);
      content.appendChild(ssec);
    }

    on(input, "input", function () { findTerm = input.value; highlight(content, count); });
    on(input, "keydown", function (ev) {
      if (ev.key === "Enter") { ev.preventDefault(); nextMatch(content, count); }
      if (ev.key === "Escape") { input.blur(); }
    });
    highlight(content, count);
  }

  function commentBox(c) {
    var list = comments[c.id] || [];
    var sec = pane("Comments (" + list.length + ")", list.length > 0 || !!opts.commentError);
    sec.setAttribute("data-testid", "explorer-comments");
    list.forEach(function (m) {
      var item = el("div", "cvx-comment");
      item.setAttribute("data-testid", "explorer-comment");
      var who = el("div", "cvx-comment-who", m.reviewer + " \u00b7 " + String(m.created_at).replace("T", " ").replace("+00:00", " UTC"));
      item.appendChild(who);
      item.appendChild(el("div", "cvx-comment-text", m.text));
      sec.appendChild(item);
    });
    if (!opts.onComment) {
      if (!list.length) sec.appendChild(el("div", "cvx-muted", "No comments."));
      return sec;
    }
    var form = el("div", "cvx-comment-form");
    var name = el("input", "cvx-find-input");
    name.placeholder = "your name"; name.value = opts.reviewer || "";
    name.setAttribute("data-testid", "explorer-comment-name");
    if (opts.reviewerLocked) { name.readOnly = true; name.title = "Signed in (trusted proxy header)"; }
    var area = el("textarea", "cvx-comment-input");
    area.placeholder = "A note on call " + c.label; area.rows = 2;
    area.setAttribute("data-testid", "explorer-comment-text");
    var send = el("button", "cvx-btn cvx-send", "Add comment");
    send.setAttribute("data-testid", "explorer-comment-send");
    var err = el("div", "cvx-comment-err", opts.commentError || "");
    opts.commentError = "";
    on(send, "click", function () {
      var text = area.value.trim(), who = name.value.trim();
      if (!text) { err.textContent = "Write a comment first."; return; }
      if (!who) { err.textContent = "Give your name (it is stored with the comment)."; return; }
      send.disabled = true; err.textContent = "Saving\u2026";
      opts.onComment({ call_id: c.id, text: text, reviewer: who });
    });
    form.appendChild(name); form.appendChild(area); form.appendChild(send); form.appendChild(err);
    sec.appendChild(form);
    return sec;
  }

  var matchIdx = -1;
  var HITS = "mark.cvx-hit, .cvx-hidden-hit";  // the places `nextMatch` goes to, in order
  function highlight(content, count, stay) {
    // Undo the previous marks, then wrap each match of findTerm in <mark> (text nodes only).
    content.querySelectorAll("mark.cvx-hit").forEach(function (m) {
      m.replaceWith(document.createTextNode(m.textContent));
    });
    content.querySelectorAll(".cvx-hidden-hit").forEach(function (m) { m.remove(); });
    content.normalize();
    matchIdx = -1;
    var term = findTerm.toLowerCase();
    if (!term) { count.textContent = ""; return; }
    var walker = document.createTreeWalker(content, NodeFilter.SHOW_TEXT);
    var nodes = [];
    while (walker.nextNode()) nodes.push(walker.currentNode);
    var n = 0;
    nodes.forEach(function (node) {
      var s = node.nodeValue, low = s.toLowerCase(), at = low.indexOf(term);
      if (at < 0) return;
      var frag = document.createDocumentFragment(), from = 0;
      while (at >= 0) {
        frag.appendChild(document.createTextNode(s.slice(from, at)));
        var m = el("mark", "cvx-hit", s.slice(at, at + term.length));
        frag.appendChild(m);
        n++;
        from = at + term.length;
        at = low.indexOf(term, from);
      }
      frag.appendChild(document.createTextNode(s.slice(from)));
      node.parentNode.replaceChild(frag, node);
    });
    // A long text drawn only in part ("Show all"): its matches in the rest count too, and
    // stand as one place to go to, after the shown part's, until the text is shown whole.
    content.querySelectorAll(".cvx-long").forEach(function (box) {
      if (!box.__cvxFull) return;
      var low = box.__cvxFull.toLowerCase();
      var hidden = countIn(low, term) - countIn(low.slice(0, SHOWN), term);
      if (hidden <= 0) return;
      var more = el("button", "cvx-linkbtn cvx-hidden-hit", (hidden === 1 ? "1 more match" : hidden + " more matches") +
        " in the part not shown (Enter or click: show all)");
      more.setAttribute("data-testid", "explorer-hidden-hits");
      more.addEventListener("click", function () { goTo(content, count, more); });
      box.insertBefore(more, box.querySelector(".cvx-showall"));
      n += hidden;
    });
    content.querySelectorAll(HITS).forEach(function (m) {
      var d = m.parentElement;
      while (d && d !== content) { if (d.tagName === "DETAILS") d.open = true; d = d.parentElement; }
    });
    count.textContent = n === 1 ? "1 match" : n + " matches";
    if (n && !stay) nextMatch(content, count);
  }
  function goTo(content, count, hit) {
    var marks = content.querySelectorAll(HITS), i = Array.prototype.indexOf.call(marks, hit);
    if (i < 0) return;
    matchIdx = i - 1;
    nextMatch(content, count);
  }
  function nextMatch(content, count) {
    var marks = content.querySelectorAll(HITS);
    if (!marks.length) return;
    if (matchIdx >= 0 && marks[matchIdx]) marks[matchIdx].classList.remove("cvx-hit-now");
    matchIdx = (matchIdx + 1) % marks.length;
    var hit = marks[matchIdx];
    if (hit.classList.contains("cvx-hidden-hit")) {
      // Show the whole text, mark it again, and go to its first match that was not shown.
      var box = hit.parentElement, pre = box.querySelector("pre");
      var before = pre.querySelectorAll("mark.cvx-hit").length, at = matchIdx;
      box.__cvxShowAll();
      highlight(content, count, true);
      marks = content.querySelectorAll(HITS);
      var mine = pre.querySelectorAll("mark.cvx-hit");
      matchIdx = mine[before] ? Array.prototype.indexOf.call(marks, mine[before]) : Math.min(at, marks.length - 1);
      hit = marks[matchIdx];
    }
    hit.classList.add("cvx-hit-now");
    hit.scrollIntoView({ block: "center", inline: "nearest" });
  }

  // ---------- selection and URL ----------
  function urlCall() {
    try { return new URLSearchParams(window.location.search).get("call"); } catch (e) { return null; }
  }
  function select(id, push) {
    var c = byId[id];
    if (!c) return;
    if (current && nodeEls[current.id]) nodeEls[current.id].classList.remove("cvx-sel");
    current = c;
    if (!nodeEls[id]) {  // windowed out: bring its place into view, then draw around it
      treePane.scrollLeft = px(c) * zoom - treePane.clientWidth / 2;
      treePane.scrollTop = py(c) * zoom - treePane.clientHeight / 2;
      drawTree(true);
    }
    if (nodeEls[id]) nodeEls[id].classList.add("cvx-sel");
    Object.keys(barEls).forEach(function (k) { barEls[k].classList.toggle("cvx-sel", k === id); });
    if (!mini.hidden) drawMinimap();
    render(c);
    var r = nodeEls[id] ? nodeEls[id].getBoundingClientRect() : treePane.getBoundingClientRect();
    var pr = treePane.getBoundingClientRect();
    if (r.left < pr.left || r.right > pr.right || r.top < pr.top || r.bottom > pr.bottom) {
      treePane.scrollLeft += r.left - pr.left - pr.width / 2;
      treePane.scrollTop += r.top - pr.top - pr.height / 2;
    }
    if (push && opts.history !== false && urlCall() !== id) {
      var u = new URL(window.location.href);
      u.searchParams.set("call", id);
      try { window.history.pushState({ call: id }, "", u.toString()); } catch (e) { /* file: origin */ }
    }
    if (opts.onSelect) opts.onSelect(id);
  }
  on(window, "popstate", function () {
    var id = urlCall();
    if (!id || !byId[id]) id = initialId;  // back to the entry before any pick: the default
    if (id && byId[id] && (!current || current.id !== id)) select(id, false);
  });

  function pathOf(c) {
    var pid = c.paths && c.paths[0];
    var p = pid && payload.paths[pid];
    if (p && p.indexOf(c.id) >= 0) return p;
    if ((payload.kept_path || []).indexOf(c.id) >= 0) return payload.kept_path;
    return calls.map(function (x) { return x.id; });
  }
  function step(delta) {
    if (!current) return;
    var p = pathOf(current), i = p.indexOf(current.id) + delta;
    if (i >= 0 && i < p.length) select(p[i], true);
  }
  function nextWhere(pred) {
    var start = current ? current._i : -1;
    for (var k = 1; k <= calls.length; k++) {
      var c = calls[(start + k) % calls.length];
      if (pred(c)) { select(c.id, true); return; }
    }
  }
  on(document, "keydown", function (ev) {
    var t = ev.composedPath ? ev.composedPath()[0] : ev.target;
    var tag = t && t.tagName ? t.tagName.toLowerCase() : "";
    if (tag === "input" || tag === "textarea" || tag === "select" || (t && t.isContentEditable)) return;
    if (ev.ctrlKey || ev.metaKey || ev.altKey) return;
    if (!root.isConnected) return;
    var k = ev.key;
    if (k === "j") step(1);
    else if (k === "k") step(-1);
    else if (k === "u") { if (current && current.parent) select(current.parent, true); }
    else if (k === "d") { if (current && current.children.length) select(current.children[0], true); }
    else if (k === "f") nextWhere(function (c) { return c.failed; });
    else if (k === "p") nextWhere(function (c) { return c.pins.length > 0; });
    else if (k === "c") nextWhere(function (c) { return c.compaction; });
    else if (k === "t") showView(timeline.hidden ? "timeline" : "tree");
    else if (k === "?") help.hidden = !help.hidden;
    else if (k === "Escape") help.hidden = true;
    else if (k === "/") { var i = insp.querySelector(".cvx-find-input"); if (i) { ev.preventDefault(); i.focus(); } }
    else return;
    ev.preventDefault();
  });

  host.appendChild(root);
  // The tree and the inspector fill the window below where the explorer starts (both in view
  // at 1280x720), never less than 360 px; the share page and the app alike.
  function fitHeight() {
    var top = body.getBoundingClientRect().top;
    var h = Math.max(360, Math.floor(window.innerHeight - Math.max(0, top) - 14));
    body.style.height = h + "px";
    placeMinimapView();
  }
  fitHeight();
  on(window, "resize", fitHeight);
  // The page above may still be settling (a Streamlit run drawing the rows above it).
  [250, 1000, 3000].forEach(function (ms) { setTimeout(function () { if (root.isConnected) fitHeight(); }, ms); });
  var fit = treePane.clientWidth ? (treePane.clientWidth - 8) / W : 1;
  if (treePane.clientHeight && H * fit > treePane.clientHeight) fit = Math.min(fit, 1);
  zoom = Math.max(0.5, Math.min(1.6, fit));
  applyZoom();
  var initialId = opts.initial && byId[opts.initial] ? opts.initial : (payload.kept_path || [])[0];
  if (!initialId || !byId[initialId]) initialId = calls.length ? calls[0].id : null;
  var first = urlCall();
  if (!first || !byId[first]) first = initialId;
  if (first) select(first, false);
  else insp.appendChild(el("div", "cvx-muted", "This episode has no calls."));

  return function cleanup() {
    listeners.forEach(function (l) { l[0].removeEventListener(l[1], l[2]); });
    if (root.parentNode) root.parentNode.removeChild(root);
  };
}
