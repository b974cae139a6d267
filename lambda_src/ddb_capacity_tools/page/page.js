/* The report page's charts and tables: drawn from the JSON block #page-data, with no
   library and no network. Every name is set as text (textContent, setAttribute), never
   parsed as HTML. */
(function () {
  "use strict";
  var NS = "http://www.w3.org/2000/svg";
  var W = 1000, L = 150, R = 12, T = 20, B = 22;
  var data = JSON.parse(document.getElementById("page-data").textContent);

  function el(name, attrs, parent) {
    var e = document.createElementNS(NS, name);
    Object.keys(attrs || {}).forEach(function (k) { e.setAttribute(k, attrs[k]); });
    if (parent) { parent.appendChild(e); }
    return e;
  }
  function label(parent, x, y, words, attrs) {
    var t = el("text", Object.assign({x: x, y: y}, attrs || {}), parent);
    t.textContent = words;
    return t;
  }
  function num(v) {
    var a = Math.abs(v);
    if (a >= 1e6) { return (v / 1e6).toFixed(1) + "M"; }
    if (a >= 1e4) { return (v / 1e3).toFixed(0) + "k"; }
    if (a >= 100 || v === 0) { return Math.round(v).toLocaleString("en-US"); }
    return String(Number(v.toPrecision(2)));
  }

  /* Round axis ticks from lo to hi, about count of them: each a multiple of 1, 2, 2.5 or 5
     times a power of ten. */
  function niceTicks(lo, hi, count) {
    if (!(hi > lo)) { return [lo]; }
    var raw = (hi - lo) / Math.max(1, count), p = Math.pow(10, Math.floor(Math.log10(raw)));
    var f = raw / p, step = (f <= 1 ? 1 : f <= 2 ? 2 : f <= 2.5 ? 2.5 : f <= 5 ? 5 : 10) * p;
    var out = [];
    for (var k = Math.ceil(lo / step - 1e-9); k * step <= hi + step * 1e-9; k++) {
      out.push(Number((k * step).toPrecision(12)));
    }
    return out;
  }

  /* A series as one value a minute: "values" (every minute), "shared" (the name of the
     chart's own list, such as its demand), "steps" ([minute, value] where it changes) or
     "sparse" ([minute, value] where it is not 0). */
  function dense(s, n, chart) {
    if (s.values) { return s.values; }
    if (s.shared) { return chart.shared[s.shared]; }
    var out = new Array(n).fill(0), i, m;
    if (s.steps) {
      for (i = 0; i < s.steps.length; i++) {
        var end = i + 1 < s.steps.length ? s.steps[i + 1][0] : n;
        for (m = s.steps[i][0]; m < end; m++) { out[m] = s.steps[i][1]; }
      }
    }
    (s.sparse || []).forEach(function (p) { out[p[0]] = p[1]; });
    return out;
  }

  /* [minute, low, high] per pixel column of the window: every minute when they fit. */
  function columns(values, lo, hi, width) {
    var span = hi - lo, out = [], per = Math.max(1, span / width), c, m;
    for (c = lo; c < hi; c += per) {
      var a = Math.floor(c), b = Math.min(hi, Math.max(a + 1, Math.floor(c + per)));
      var low = Infinity, high = -Infinity;
      for (m = a; m < b; m++) { low = Math.min(low, values[m]); high = Math.max(high, values[m]); }
      out.push([a, low, high, b]);
    }
    return out;
  }

  function timeOf(chart, m) {
    var d = new Date(chart.start_ms + m * 60000);
    var hm = d.toISOString().slice(11, 16);
    return chart.minutes > 1440 ? d.toISOString().slice(5, 10) + " " + hm : hm;
  }

  function seriesPanel(chart, panel, svg, lo, hi) {
    var n = chart.minutes, H = panel.height, plotW = W - L - R;
    var x = function (m) { return L + (m - lo) / (hi - lo) * plotW; };
    var all = panel.series.map(function (s) { return dense(s, n, chart); });
    var top = 0;
    all.forEach(function (v) { for (var m = lo; m < hi; m++) { top = Math.max(top, v[m]); } });
    top = top > 0 ? top * 1.08 : 1;
    var y = function (v) { return H - B - v / top * (H - T - B); };
    if (chart.score_from > lo) {
      var until = Math.min(chart.score_from, hi);
      el("rect", {x: L, y: T, width: x(until) - L, height: H - T - B, "class": "unscored"}, svg);
      label(svg, L + 4, T + 12, "not scored", {"class": "note"});
    }
    niceTicks(0, top / 1.08, 3).forEach(function (v) {
      el("line", {x1: L, x2: W - R, y1: y(v), y2: y(v), "class": "grid"}, svg);
      label(svg, L - 4, y(v) + 4, num(v), {"text-anchor": "end", "class": "tick"});
    });
    for (var k = 0; k <= 5; k++) {
      var m = Math.round(lo + (hi - lo) * k / 5);
      label(svg, x(Math.min(m, hi)), H - 6, timeOf(chart, Math.min(m, n - 1)),
        {"text-anchor": k === 0 ? "start" : k === 5 ? "end" : "middle", "class": "tick"});
    }
    panel.series.forEach(function (s, i) {
      var cols = columns(all[i], lo, hi, plotW), d = "";
      var any = cols.some(function (c) { return c[2] > 0; });
      if (s.role === "throttled" && !any) {
        d = "";
      } else if (s.role === "demand" || s.role === "throttled") {
        cols.forEach(function (c, j) {
          d += (j ? "L" : "M") + x(c[0]).toFixed(1) + "," + y(c[2]).toFixed(1);
          d += "L" + x(c[3]).toFixed(1) + "," + y(c[2]).toFixed(1);
        });
        d += "L" + x(hi).toFixed(1) + "," + y(0) + "L" + L + "," + y(0) + "Z";
      } else {
        cols.forEach(function (c, j) {
          d += (j ? "L" : "M") + x(c[0]).toFixed(1) + "," + y(c[2]).toFixed(1);
          d += "L" + x(c[3]).toFixed(1) + "," + y(c[2]).toFixed(1);
        });
      }
      var path = el("path", {d: d, "class": "s-" + s.role, "data-series": s.name,
        "data-role": s.role, "data-points": all[i].length}, svg);
      if (s.color) { path.setAttribute("style", "--c:" + s.color); }
    });
    label(svg, L, 14, panel.title, {"class": "title"});
  }

  function stripPanel(chart, panel, svg, lo, hi) {
    var n = chart.minutes, plotW = W - L - R, row = 16;
    var x = function (m) { return L + (m - lo) / (hi - lo) * plotW; };
    label(svg, L, 14, panel.title, {"class": "title"});
    panel.series.forEach(function (s, i) {
      var v = dense(s, n, chart), y0 = T + i * row, d = "";
      columns(v, lo, hi, plotW).forEach(function (c) {
        if (c[2] > 0) {
          d += "M" + x(c[0]).toFixed(1) + "," + y0 + "H" + Math.max(x(c[3]), x(c[0]) + 1).toFixed(1) +
            "V" + (y0 + row - 4) + "H" + x(c[0]).toFixed(1) + "Z";
        }
      });
      el("line", {x1: L, x2: W - R, y1: y0 + row - 2, y2: y0 + row - 2, "class": "grid"}, svg);
      label(svg, L - 4, y0 + 11, s.name, {"text-anchor": "end", "class": "tick"});
      el("path", {d: d, "class": "s-strip", "data-series": s.name, "data-role": "throttled",
        "data-points": v.length}, svg);
    });
  }

  function drawSeries(box, chart) {
    var state = {lo: 0, hi: chart.minutes};
    var status = box.querySelector(".zoom-status");
    function render() {
      box.querySelectorAll("svg.panel").forEach(function (old) { old.remove(); });
      chart.panels.forEach(function (panel) {
        var H = panel.strip ? T + panel.series.length * 16 + 6 : panel.height;
        var svg = el("svg", {viewBox: "0 0 " + W + " " + H, "class": "panel",
          "data-panel": panel.title, role: "img"});
        svg.setAttribute("aria-label", panel.title);
        (panel.strip ? stripPanel : seriesPanel)(chart, panel, svg, state.lo, state.hi);
        zoomable(svg);
        box.appendChild(svg);
      });
      status.textContent = state.lo === 0 && state.hi === chart.minutes
        ? "all " + chart.minutes.toLocaleString("en") + " minutes; drag across a chart to zoom"
        : "minutes " + state.lo + " to " + state.hi + " of " + chart.minutes;
    }
    function minuteAt(svg, clientX) {
      var r = svg.getBoundingClientRect(), vx = (clientX - r.left) / r.width * W;
      var f = Math.min(1, Math.max(0, (vx - L) / (W - L - R)));
      return Math.round(state.lo + f * (state.hi - state.lo));
    }
    function zoomable(svg) {
      var from = null, band = null;
      svg.addEventListener("mousedown", function (e) {
        from = minuteAt(svg, e.clientX);
        band = el("rect", {y: 0, height: "100%", "class": "band", x: 0, width: 0}, svg);
      });
      svg.addEventListener("mousemove", function (e) {
        if (from === null) { return; }
        var r = svg.getBoundingClientRect(), a = (e.clientX - r.left) / r.width * W;
        var b = L + (from - state.lo) / (state.hi - state.lo) * (W - L - R);
        band.setAttribute("x", Math.min(a, b));
        band.setAttribute("width", Math.abs(a - b));
      });
      svg.addEventListener("mouseup", function (e) {
        var to = minuteAt(svg, e.clientX), a = Math.min(from, to), b = Math.max(from, to);
        from = null;
        if (b - a >= 5) { state.lo = a; state.hi = b; }
        render();
      });
    }
    box.querySelector(".zoom-reset").addEventListener("click", function () {
      state.lo = 0; state.hi = chart.minutes; render();
    });
    render();
  }

  function drawFrontier(box, chart) {
    var H = 360, plotW = W - L - R - 150, pts = chart.points;
    var svg = el("svg", {viewBox: "0 0 " + W + " " + H, "class": "panel frontier", role: "img",
      "data-panel": chart.title}, box);
    svg.setAttribute("aria-label", chart.title);
    var lx = function (v) { return Math.log10(1 + Math.max(0, v)); };
    var xmax = Math.max.apply(null, pts.map(function (p) { return lx(p.refused_max); })) || 1;
    var ymax = Math.max.apply(null, pts.map(function (p) { return p.cost_max; })) * 1.05 || 1;
    var ymin = Math.min.apply(null, pts.map(function (p) { return p.cost_min; })) * 0.9;
    var x = function (v) { return L + lx(v) / (xmax * 1.05) * plotW; };
    var y = function (v) { return H - B - 14 - (v - ymin) / (ymax - ymin || 1) * (H - T - B - 14); };
    /* Each label's box (about 6.5 px a character, 12 px high) is moved up or down until it
       meets no box placed before (the points' circles included); a label moved away from
       its point gets a leader line back to it. */
    var placed = pts.map(function (p) {
      return [x(p.refused) - 7, y(p.cost) - 7, 14, 14];
    });
    var meets = function (a, b) {
      return a[0] < b[0] + b[2] && b[0] < a[0] + a[2] && a[1] < b[1] + b[3] && b[1] < a[1] + a[3];
    };
    var spot = function (px, py, text) {
      var w = 6.5 * text.length, box = [px, py - 10, w, 12];
      for (var k = 1; k < 60 && placed.some(function (q) { return meets(box, q); }); k++) {
        box = [px, py - 10 + (k % 2 ? 1 : -1) * 13 * Math.ceil(k / 2), w, 12];
      }
      placed.push(box);
      return box[1] + 10;
    };
    niceTicks(ymin, ymax, 3).forEach(function (v) {
      el("line", {x1: L, x2: L + plotW, y1: y(v), y2: y(v), "class": "grid"}, svg);
      label(svg, L - 4, y(v) + 4, "$" + num(v), {"text-anchor": "end", "class": "tick"});
    });
    for (var e = 0; Math.pow(10, e) <= Math.pow(10, xmax * 1.05); e++) {
      var v = e === 0 ? 0 : Math.pow(10, e);
      label(svg, x(v), H - B + 2, num(v), {"text-anchor": "middle", "class": "tick"});
    }
    label(svg, L + plotW / 2, H - 4, chart.x_label, {"text-anchor": "middle", "class": "tick"});
    label(svg, L, 14, chart.title, {"class": "title"});
    var line = pts.filter(function (p) { return p.frontier; })
      .sort(function (a, b) { return a.refused - b.refused; });
    el("path", {d: line.map(function (p, i) {
      return (i ? "L" : "M") + x(p.refused).toFixed(1) + "," + y(p.cost).toFixed(1);
    }).join(""), "class": "frontier-line", "data-series": "frontier",
      "data-points": line.length}, svg);
    pts.forEach(function (p) {
      var g = el("g", {"class": "point" + (p.recommended ? " recommended" : "") +
        (p.frontier ? " on-frontier" : "") + (p.compared_only ? " compared" : ""),
        "data-point": p.name}, svg);
      if (p.cost_max > p.cost_min || p.refused_max > p.refused_min) {
        el("path", {d: "M" + x(p.refused) + "," + y(p.cost_min) + "V" + y(p.cost_max) +
          "M" + x(p.refused_min) + "," + y(p.cost) + "H" + x(p.refused_max), "class": "spread"}, g);
      }
      el("circle", {cx: x(p.refused), cy: y(p.cost), r: p.recommended ? 7 : 4}, g);
      var t = el("title", {}, g);
      t.textContent = p.name + ": $" + p.cost.toFixed(2) + ", " + Math.round(p.refused) +
        " refused";
      var text = (p.recommended ? "recommended: " : "") + p.name;
      var ly = spot(x(p.refused) + 9, y(p.cost) + 4, text);
      if (Math.abs(ly - (y(p.cost) + 4)) > 1) {
        el("path", {d: "M" + x(p.refused) + "," + y(p.cost) + "L" + (x(p.refused) + 8) + "," +
          (ly - 4), "class": "leader"}, g);
      }
      label(g, x(p.refused) + 9, ly, text, {"class": "tick label"});
    });
  }

  function sortable(table) {
    table.querySelectorAll("th").forEach(function (th, col) {
      th.addEventListener("click", function () {
        var body = table.tBodies[0], rows = Array.prototype.slice.call(body.rows);
        var down = th.getAttribute("aria-sort") !== "descending";
        table.querySelectorAll("th").forEach(function (h) { h.removeAttribute("aria-sort"); });
        th.setAttribute("aria-sort", down ? "descending" : "ascending");
        var key = function (r) {
          var c = r.cells[col], s = c.getAttribute("data-sort");
          return s === null ? c.textContent.toLowerCase() : s === "" ? null : Number(s);
        };
        rows.sort(function (a, b) {  /* unknown figures last, either way */
          var p = key(a), q = key(b), o = p < q ? -1 : p > q ? 1 : 0;
          if (p === null || q === null) { return (p === null) - (q === null); }
          return down ? -o : o;
        });
        rows.forEach(function (r) { body.appendChild(r); });
      });
    });
  }

  function filterable(table) {
    var words = document.querySelector("[data-filter='" + table.id + "']");
    var status = document.querySelector("[data-status='" + table.id + "']");
    var shown = document.querySelector("[data-shown='" + table.id + "']");
    function apply() {
      var want = words.value.trim().toLowerCase(), only = status.value, count = 0, saved = 0;
      Array.prototype.forEach.call(table.tBodies[0].rows, function (r) {
        var ok = (!want || r.textContent.toLowerCase().indexOf(want) >= 0) &&
          (!only || r.getAttribute("data-status") === only);
        r.hidden = !ok;
        if (ok) { count += 1; saved += Number(r.getAttribute("data-saved") || 0); }
      });
      shown.textContent = count + " shown, $" + saved.toLocaleString("en",
        {minimumFractionDigits: 2, maximumFractionDigits: 2}) + " a month to save among them";
    }
    words.addEventListener("input", apply);
    status.addEventListener("change", apply);
    apply();
  }

  try {
    document.querySelectorAll("[data-chart]").forEach(function (box) {
      var chart = data.charts[box.getAttribute("data-chart")];
      (chart.kind === "frontier" ? drawFrontier : drawSeries)(box, chart);
    });
    document.querySelectorAll("table.sortable").forEach(sortable);
    document.querySelectorAll("table.filterable").forEach(filterable);
    window.addEventListener("beforeprint", function () {
      document.querySelectorAll("details").forEach(function (d) { d.open = true; });
    });
    document.body.setAttribute("data-rendered", "ok");
  } catch (err) {
    document.body.setAttribute("data-rendered", "failed");
    throw err;
  }
}());
