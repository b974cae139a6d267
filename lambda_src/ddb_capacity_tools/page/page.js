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
  /* An axis tick's text, one rule on every axis: k, M or B from a thousand, a million or
     a billion on, and no more digits than the value needs (0, 500, 1k, 2.5k, 10k, 1M). */
  function num(v, digits) {
    var a = Math.abs(v), units = [[1e9, "B"], [1e6, "M"], [1e3, "k"]], d = digits || 3;
    for (var i = 0; i < units.length; i++) {
      if (a >= units[i][0]) {
        return String(Number((v / units[i][0]).toPrecision(d))) + units[i][1];
      }
    }
    return String(Number(v.toPrecision(d)));
  }

  /* An axis's tick texts (num), with as many digits as tell every tick apart: ticks
     close together on a narrow range (1,000 to 1,010) read 1k, 1.003k ... not 1k, 1k. */
  function tickTexts(values) {
    for (var d = 3; ; d++) {
      var out = values.map(function (v) { return num(v, d); }), seen = {}, same = false;
      out.forEach(function (t) { same = same || seen[t]; seen[t] = true; });
      if (!same || d >= 12) { return out; }
    }
  }

  /* Every value axis's ticks (a series panel's units/s, the frontier's cost), one rule:
     round ticks covering lo to hi, at least least of them, the first at or below lo and
     the last at or above hi (an axis drawn from the first to the last holds every value),
     at the largest round step (1, 2, 2.5 or 5 times a power of ten) giving that many. */
  var ROUND = [5, 2.5, 2, 1];
  function coverTicks(lo, hi, least) {
    if (!(hi > lo)) {
      var pad = Math.abs(hi) * 0.1 || 1;
      lo = lo >= 0 ? Math.max(0, lo - pad) : lo - pad;
      hi += pad;
    }
    for (var e = Math.ceil(Math.log10(hi - lo)); ; e--) {
      for (var i = 0; i < ROUND.length; i++) {
        var step = Number((ROUND[i] * Math.pow(10, e)).toPrecision(12));
        var first = Math.floor(lo / step + 1e-9), last = Math.ceil(hi / step - 1e-9);
        if (first * step > lo) { first--; }
        if (last * step < hi) { last++; }
        if (last - first + 1 >= least) {
          var out = [];
          for (var k = first; k <= last; k++) { out.push(Number((k * step).toPrecision(12))); }
          return out;
        }
      }
    }
  }
  /* The fewest ticks of a value axis. */
  var LEAST_TICKS = 4;

  /* Round steps of the time axis, in minutes: 1, 2, 5, 10, 15, 30 minutes; 1, 2, 3, 6,
     12 hours; 1, 2 days; 1, 2, 4 weeks (then doubled). */
  var TIME_STEPS = [1, 2, 5, 10, 15, 30, 60, 120, 180, 360, 720, 1440, 2880, 10080, 20160, 40320];
  var MOST_TIME_TICKS = 8;
  /* The minutes (from the chart's start) of the time axis's ticks over the window lo to hi:
     the shortest step of TIME_STEPS giving at most MOST_TIME_TICKS, each tick a multiple of
     the step in UTC (a week's from a Monday 00:00). */
  function timeTicks(startMs, lo, hi) {
    var origin = startMs / 60000, step = 0, first = 0, last = 0, phase = 0;
    for (var i = 0; ; i++) {
      step = i < TIME_STEPS.length ? TIME_STEPS[i]
        : TIME_STEPS[TIME_STEPS.length - 1] * Math.pow(2, i - TIME_STEPS.length + 1);
      phase = step % 10080 === 0 ? 4 * 1440 : 0;  /* 1970-01-05, a Monday */
      first = Math.ceil((origin + lo - phase) / step - 1e-9);
      last = Math.floor((origin + hi - phase) / step + 1e-9);
      if (last - first + 1 <= MOST_TIME_TICKS) { break; }
    }
    var out = [];
    for (var k = first; k <= last; k++) { out.push(phase + k * step - origin); }
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

  /* A vertical line at one minute of the chart (where a history was split), with what
     lies before it and after it in words, each beside the line where it fits. */
  function drawMark(svg, mark, x, lo, hi, H) {
    if (mark.minute < lo || mark.minute > hi) { return; }
    var mx = x(mark.minute), y = T + 12;
    el("line", {x1: mx, x2: mx, y1: T - 4, y2: H - B, "class": "split",
      "data-minute": mark.minute}, svg);
    var after = 6.2 * (mark.after || "").length, before = 6.2 * (mark.before || "").length;
    if (mark.after && mx + 4 + after <= W - R) {
      label(svg, mx + 4, y, mark.after, {"class": "note mark"});
    } else if (mark.after) {
      label(svg, mx - 4, y, mark.after + " \u2192", {"class": "note mark", "text-anchor": "end"});
      return;
    }
    if (mark.before && mx - 4 - before >= L) {
      label(svg, mx - 4, y, mark.before, {"class": "note mark", "text-anchor": "end"});
    }
  }

  function seriesPanel(chart, panel, svg, lo, hi) {
    var n = chart.minutes, H = panel.height, plotW = W - L - R;
    var x = function (m) { return L + (m - lo) / (hi - lo) * plotW; };
    var all = panel.series.map(function (s) { return dense(s, n, chart); });
    var peak = 0;
    all.forEach(function (v) { for (var m = lo; m < hi; m++) { peak = Math.max(peak, v[m]); } });
    /* the axis from 0 to its top tick, at or above the window's peak */
    var levels = coverTicks(0, peak, LEAST_TICKS), levelTexts = tickTexts(levels);
    var top = levels[levels.length - 1];
    var y = function (v) { return H - B - v / top * (H - T - B); };
    if (chart.score_from > lo) {
      var until = Math.min(chart.score_from, hi);
      el("rect", {x: L, y: T, width: x(until) - L, height: H - T - B, "class": "unscored"}, svg);
      label(svg, L + 4, T + 12, "not scored", {"class": "note"});
    }
    levels.forEach(function (v, i) {
      el("line", {x1: L, x2: W - R, y1: y(v), y2: y(v), "class": "grid"}, svg);
      label(svg, L - 4, y(v) + 4, levelTexts[i], {"text-anchor": "end", "class": "tick axis-y",
        "data-value": v});
    });
    timeTicks(chart.start_ms, lo, hi).forEach(function (m) {
      var words = timeOf(chart, m), half = 3.3 * words.length, tx = x(m);
      el("line", {x1: tx, x2: tx, y1: H - B, y2: H - B + 3, "class": "axis"}, svg);
      label(svg, tx, H - 6, words, {"class": "tick time", "data-minute": m,
        "text-anchor": tx + half > W ? "end" : "middle"});
    });
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
    (chart.marks || []).forEach(function (mark) { drawMark(svg, mark, x, lo, hi, H); });
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

  /* A drawn text's box [x, y, width, height] in the chart's units, a pixel larger each way;
     an estimate where the browser lays out nothing (a hidden chart). */
  function boxOf(t, x, y) {
    var b = t.getBBox(), w = b.width || 6.5 * t.textContent.length, h = b.height || 13;
    return b.width ? [b.x - 1, b.y - 1, w + 2, h + 2] : [x - 1, y - 11, w + 2, h + 2];
  }

  function meets(a, b) {
    return a[0] < b[0] + b[2] && b[0] < a[0] + a[2] && a[1] < b[1] + b[3] && b[1] < a[1] + a[3];
  }

  function drawFrontier(box, chart) {
    var H = 360, plotW = W - L - R - 150, pts = chart.points, bottom = H - B - 14;
    var svg = el("svg", {viewBox: "0 0 " + W + " " + H, "class": "panel frontier", role: "img",
      "data-panel": chart.title}, box);
    svg.setAttribute("aria-label", chart.title);
    label(svg, L, 14, chart.title, {"class": "title"});
    if (!pts.length) { return; }
    var pick = function (f, key) {
      return f.apply(null, pts.map(function (p) { return p[key]; }));
    };
    /* x: refused units on a log scale to the first power of ten at or above the most any
       point refuses; y: cost from a round tick at or below the least to one at or above the
       most (the whiskers' ends included). */
    var lx = function (v) { return Math.log10(1 + Math.max(0, v)); };
    var most = Math.max(1, pick(Math.max, "refused_max"));
    var decades = Math.max(1, Math.ceil(Math.log10(most) - 1e-9));
    var yTicks = coverTicks(pick(Math.min, "cost_min"), pick(Math.max, "cost_max"), LEAST_TICKS);
    var ylo = yTicks[0], yhi = yTicks[yTicks.length - 1];
    var x = function (v) { return L + lx(v) / lx(Math.pow(10, decades)) * plotW; };
    var y = function (v) { return bottom - (v - ylo) / (yhi - ylo) * (bottom - T - 14); };
    /* Every box a point's label must keep clear of: the title, the ticks' and the axis's
       labels, the points' circles and the labels placed before it. */
    var placed = [boxOf(svg.lastChild, L, 14)];
    var tick = function (tx, ty, words, anchor, kind) {
      var t = label(svg, tx, ty, words, {"text-anchor": anchor, "class": "tick " + kind});
      var w = 6.5 * words.length;
      placed.push(boxOf(t, anchor === "end" ? tx - w : anchor === "middle" ? tx - w / 2 : tx, ty));
    };
    var yTexts = tickTexts(yTicks);
    yTicks.forEach(function (v, i) {
      el("line", {x1: L, x2: L + plotW, y1: y(v), y2: y(v), "class": "grid"}, svg);
      tick(L - 4, y(v) + 4, "$" + yTexts[i], "end", "axis-y");
    });
    el("line", {x1: L, x2: L + plotW, y1: bottom, y2: bottom, "class": "axis"}, svg);
    for (var e = 0; e <= decades; e++) {
      var v = e === 0 ? 0 : Math.pow(10, e);
      tick(x(v), H - B + 2, num(v), "middle", "axis-x");
    }
    tick(L + plotW / 2, H - 4, chart.x_label, "middle", "axis-title");
    var line = pts.filter(function (p) { return p.frontier; })
      .sort(function (a, b) { return a.refused - b.refused; });
    el("path", {d: line.map(function (p, i) {
      return (i ? "L" : "M") + x(p.refused).toFixed(1) + "," + y(p.cost).toFixed(1);
    }).join(""), "class": "frontier-line", "data-series": "frontier",
      "data-points": line.length}, svg);
    /* No label may cross the frontier's line: each segment, sampled every 3 px, is a box
       the labels keep clear of. */
    line.forEach(function (p, i) {
      if (!i) { return; }
      var x0 = x(line[i - 1].refused), y0 = y(line[i - 1].cost);
      var x1 = x(p.refused), y1 = y(p.cost);
      var steps = Math.max(1, Math.ceil(Math.hypot(x1 - x0, y1 - y0) / 3));
      for (var s = 0; s <= steps; s++) {
        placed.push([x0 + (x1 - x0) * s / steps - 1.5, y0 + (y1 - y0) * s / steps - 1.5, 3, 3]);
      }
    });
    /* The rest first, then the frontier, the recommendation last: a point drawn where earlier
       ones are is a ring around them (wider than the widest there, up to 16 px), so none of
       the first few at one place is hidden; every one is named by its label. */
    var rank = function (p) { return p.recommended ? 0 : p.frontier ? 1 : 2; };
    var drawn = pts.slice().sort(function (a, b) { return rank(b) - rank(a); });
    var circles = [];
    var marks = drawn.map(function (p) {
      var cx = x(p.refused), cy = y(p.cost), r = p.recommended ? 7 : 4;
      var under = circles.filter(function (c) {
        return Math.hypot(c[0] - cx, c[1] - cy) < c[2] + r;
      });
      if (under.length) {
        r = Math.min(Math.max.apply(null, under.map(function (c) { return c[2]; })) + 3, 16);
      }
      circles.push([cx, cy, r]);
      var g = el("g", {"class": "point" + (p.recommended ? " recommended" : "") +
        (p.frontier ? " on-frontier" : "") + (p.compared_only ? " compared" : "") +
        (p.hindsight ? " reference" : "") + (under.length ? " stacked" : ""),
        "data-point": p.name}, svg);
      if (p.cost_max > p.cost_min || p.refused_max > p.refused_min) {
        el("path", {d: "M" + cx + "," + y(p.cost_min) + "V" + y(p.cost_max) +
          "M" + x(p.refused_min) + "," + cy + "H" + x(p.refused_max), "class": "spread"}, g);
      }
      el("circle", {cx: cx, cy: cy, r: r}, g);
      placed.push([cx - r - 1, cy - r - 1, 2 * r + 2, 2 * r + 2]);
      var t = el("title", {}, g);
      t.textContent = p.name + ": $" + p.cost.toFixed(2) + ", " + Math.round(p.refused) +
        " refused" + (p.hindsight ? " (hindsight: for reference)" : "");
      var words = (p.recommended ? "recommended: " : "") + p.name;
      return {p: p, g: g, cx: cx, cy: cy, text: label(g, 0, 0, words, {"class": "tick label"})};
    });
    /* Labels are placed the recommendation first, then the frontier, then the rest: each at
       the free spot nearest the right of its point (rows 13 px apart, columns 40 px apart,
       either side), inside the plot, with a leader line back to a point it is not beside.
       A label with no free spot is listed under the chart, with its figures. */
    var order = marks.slice().sort(function (a, b) { return rank(a.p) - rank(b.p); });
    /* The spots to try, nearest first, the same for every label: [row, column, left?]. */
    var offsets = [];
    for (var row = -14; row <= 14; row++) {
      for (var col = 0; col <= 8; col++) {
        var far = Math.sqrt(1600 * col * col + 169 * row * row);
        offsets.push([row, col, false, far], [row, col, true, far + 20]);
      }
    }
    offsets.sort(function (a, c) { return a[3] - c[3]; });
    var listed = [];
    order.forEach(function (m) {
      /* the label's size, from where it was drawn at (0, 0) */
      var size = boxOf(m.text, 0, 0), w = size[2] - 2, h = size[3] - 2, up = -size[1] - 1;
      var found = null;
      var tries = offsets.map(function (o) {
        return o[2] ? [m.cx - 9 - w - 40 * o[1], o[0], o[3], o[1] + 1]
          : [m.cx + 9 + 40 * o[1], o[0], o[3], o[1]];
      });
      for (var i = 0; i < tries.length && !found; i++) {
        var base = m.cy + 4 + 13 * tries[i][1];
        var spot = [tries[i][0] - 1, base - up - 1, w + 2, h + 2];
        var inside = spot[0] >= L && spot[0] + spot[2] <= W - 2 && spot[1] >= 2 &&
          spot[1] + spot[3] <= bottom + 6;
        if (inside && !placed.some(function (q) { return meets(spot, q); })) {
          found = tries[i];
          placed.push(spot);
          m.text.setAttribute("x", tries[i][0]);
          m.text.setAttribute("y", base);
          if (tries[i][1] !== 0 || tries[i][3] !== 0) {
            var edge = tries[i][0] > m.cx ? tries[i][0] - 2 : tries[i][0] + w + 2;
            el("path", {d: "M" + m.cx + "," + m.cy + "L" + edge + "," + (base - 4),
              "class": "leader"}, m.g);
          }
        }
      }
      if (!found) { listed.push(m); }
    });
    listed.forEach(function (m, k) {
      m.text.setAttribute("x", L);
      m.text.setAttribute("y", H + 16 * (k + 1));
      m.text.setAttribute("class", "tick label listed");
      m.text.textContent += ": $" + m.p.cost.toFixed(2) + ", " + Math.round(m.p.refused)
        .toLocaleString("en-US") + " refused (no room beside its point)";
    });
    if (listed.length) {
      svg.setAttribute("viewBox", "0 0 " + W + " " + (H + 16 * listed.length + 6));
    }
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
