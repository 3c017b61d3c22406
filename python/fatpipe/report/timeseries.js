// fatpipe report: the interactive time series of one run (report/interactive.py).
// For each .fp-ts view on the page (the run's series, a capture's time-sequence
// graph), reads the JSON in its .fp-ts-data and draws one SVG per panel. Wheel: zoom the
// time axis at the cursor; drag: zoom to the dragged range; shift+drag: pan;
// double-click or "reset zoom": the whole run. The legend's buttons hide and
// show a stream in every panel. No network, no library: this file is inlined
// into the self-contained report.
(function () {
  "use strict";
  // The script is inlined after each view: each run draws the views not drawn yet.
  document.querySelectorAll(".fp-ts").forEach(function (root) {
    if (root.getAttribute("data-drawn")) { return; }
    root.setAttribute("data-drawn", "1");
    var source = root.querySelector(".fp-ts-data");
    if (source) { drawView(root, source); }
  });

  function drawView(root, source) {
  var data = JSON.parse(source.textContent);
  var t = data.t, n = t.length;
  if (!n) { return; }
  var full = [t[0], t[n - 1] > t[0] ? t[n - 1] : t[0] + 1];
  var view = full.slice();
  var hidden = {};
  var H = 185, M = {l: 64, r: 14, t: 20, b: 24};
  var panelsEl = root.querySelector(".fp-ts-panels");
  var legend = root.querySelector(".fp-ts-legend");
  var readout = root.querySelector(".fp-ts-readout");
  var band = document.createElement("div");
  band.className = "fp-ts-band";
  var panels = data.panels.map(function (p) {
    var div = document.createElement("div");
    div.className = "fp-ts-panel";
    div.setAttribute("data-panel", p.name);
    panelsEl.appendChild(div);
    return {spec: p, el: div};
  });
  panelsEl.appendChild(band);

  function esc(s) {
    return String(s).replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/"/g, "&quot;");
  }

  data.streams.forEach(function (s, i) {
    var b = document.createElement("button");
    b.type = "button";
    b.className = "fp-ts-key";
    b.setAttribute("data-stream", String(i));
    b.setAttribute("aria-pressed", "true");
    b.title = "show or hide " + s.label;
    b.innerHTML = '<span class="fp-ts-swatch" style="background:' + esc(s.color) + '"></span>' + esc(s.label);
    b.addEventListener("click", function () { toggle(i); });
    legend.appendChild(b);
  });

  function toggle(i) {
    hidden[i] = !hidden[i];
    var b = legend.querySelector('[data-stream="' + i + '"]');
    b.setAttribute("aria-pressed", hidden[i] ? "false" : "true");
    draw();
  }

  function lowerBound(x) {  // first index with t[i] >= x
    var lo = 0, hi = n;
    while (lo < hi) {
      var mid = (lo + hi) >> 1;
      if (t[mid] < x) { lo = mid + 1; } else { hi = mid; }
    }
    return lo;
  }

  function ticks(lo, hi, count) {
    var span = hi - lo;
    if (!(span > 0)) { return [lo]; }
    var step = Math.pow(10, Math.floor(Math.log(span / count) / Math.LN10));
    var err = count / span * step;
    if (err <= 0.15) { step *= 10; } else if (err <= 0.35) { step *= 5; } else if (err <= 0.75) { step *= 2; }
    var out = [];
    for (var v = Math.ceil(lo / step) * step; v <= hi + step * 1e-9; v += step) { out.push(v); }
    return out;
  }

  function fmt(v) {
    var a = Math.abs(v);
    if (a !== 0 && (a >= 1e5 || a < 1e-3)) { return v.toExponential(1); }
    return String(+v.toPrecision(4));
  }

  function width() { return Math.max(320, panelsEl.clientWidth || 900); }

  function draw() {
    var W = width();
    var i0 = Math.max(0, lowerBound(view[0]) - 1);
    var i1 = Math.min(n, lowerBound(view[1]) + 1);
    var sx = (W - M.l - M.r) / (view[1] - view[0]);
    var X = function (x) { return (M.l + (x - view[0]) * sx).toFixed(1); };
    var drawn = 0;
    panels.forEach(function (P, pi) {
      var ylo = Infinity, yhi = -Infinity;
      P.spec.lines.forEach(function (L) {
        if (hidden[L.stream]) { return; }
        var top = L.hi || L.lo;
        for (var k = i0; k < i1; k++) {
          if (L.lo[k] !== null && L.lo[k] < ylo) { ylo = L.lo[k]; }
          if (top[k] !== null && top[k] > yhi) { yhi = top[k]; }
        }
      });
      if (!isFinite(ylo)) { ylo = 0; yhi = 1; }
      if (ylo > 0) { ylo = 0; }
      if (yhi <= ylo) { yhi = ylo + 1; }
      yhi += (yhi - ylo) * 0.05;
      var sy = (H - M.t - M.b) / (yhi - ylo);
      var Y = function (y) { return (H - M.b - (y - ylo) * sy).toFixed(1); };
      var clip = "fp-ts-clip-" + pi;
      var s = '<svg class="fp-ts-svg" width="' + W + '" height="' + H + '">' +
        '<defs><clipPath id="' + clip + '"><rect x="' + M.l + '" y="' + M.t + '" width="' + (W - M.l - M.r) +
        '" height="' + (H - M.t - M.b) + '"></rect></clipPath></defs>';
      if (data.warmup_s > view[0]) {
        var wx = Math.min(W - M.r, +X(Math.min(data.warmup_s, view[1])));
        s += '<rect class="fp-ts-warmup" x="' + M.l + '" y="' + M.t + '" width="' + Math.max(0, wx - M.l) +
          '" height="' + (H - M.t - M.b) + '"></rect>';
      }
      ticks(ylo, yhi, 4).forEach(function (v) {
        s += '<line class="fp-ts-grid" x1="' + M.l + '" x2="' + (W - M.r) + '" y1="' + Y(v) + '" y2="' + Y(v) + '"></line>' +
          '<text class="fp-ts-tick" x="' + (M.l - 5) + '" y="' + Y(v) + '" text-anchor="end" dy="0.32em">' + fmt(v) + '</text>';
      });
      ticks(view[0], view[1], Math.max(3, Math.round(W / 110))).forEach(function (v) {
        s += '<line class="fp-ts-grid" y1="' + M.t + '" y2="' + (H - M.b) + '" x1="' + X(v) + '" x2="' + X(v) + '"></line>' +
          '<text class="fp-ts-tick" y="' + (H - M.b + 14) + '" x="' + X(v) + '" text-anchor="middle">' + fmt(v) + '</text>';
      });
      s += '<g clip-path="url(#' + clip + ')">';
      P.spec.lines.forEach(function (L, li) {
        if (hidden[L.stream]) { return; }
        var d = [], pen = false;
        for (var k = i0; k < i1; k++) {
          var v = L.lo[k];
          if (v === null) { pen = false; continue; }
          d.push((pen ? "L" : "M") + X(t[k]) + "," + Y(v));
          if (L.hi && L.hi[k] !== null && L.hi[k] !== v) { d.push("L" + X(t[k]) + "," + Y(L.hi[k])); }
          pen = true;
        }
        var st = data.streams[L.stream];
        s += '<path class="fp-ts-line" data-stream="' + L.stream + '" data-line="' + li + '" fill="none" stroke="' +
          esc(st.color) + '" stroke-width="' + (st.total ? 2 : 1.1) + '"' + (L.dash ? ' stroke-dasharray="4 3"' : "") +
          ' d="' + (d.length ? d.join("") : "M0,0") + '"></path>';
        drawn += 1;
      });
      s += '</g><text class="fp-ts-label" x="' + (M.l + 6) + '" y="' + (M.t + 14) + '">' + esc(P.spec.label) + '</text></svg>';
      P.el.innerHTML = s;
    });
    root.setAttribute("data-fp-paths", String(drawn));
    root.setAttribute("data-fp-view", view[0].toFixed(4) + " " + view[1].toFixed(4));
    root.setAttribute("data-fp-ready", "1");
  }

  function setView(a, b) {
    var span = full[1] - full[0];
    var minSpan = Math.max(span / 1e5, n > 1 ? (t[1] - t[0]) * 2 : 0);
    if (b - a < minSpan) { var c = (a + b) / 2; a = c - minSpan / 2; b = c + minSpan / 2; }
    if (b - a > span) { a = full[0]; b = full[1]; }
    if (a < full[0]) { b += full[0] - a; a = full[0]; }
    if (b > full[1]) { a -= b - full[1]; b = full[1]; }
    view = [a, b];
    draw();
  }

  function timeAt(clientX) {
    var r = panelsEl.getBoundingClientRect();
    var sx = (width() - M.l - M.r) / (view[1] - view[0]);
    return view[0] + (clientX - r.left - M.l) / sx;
  }

  panelsEl.addEventListener("wheel", function (e) {
    e.preventDefault();
    var at = timeAt(e.clientX);
    var f = e.deltaY < 0 ? 1 / 1.25 : 1.25;
    setView(at - (at - view[0]) * f, at + (view[1] - at) * f);
  }, {passive: false});

  var drag = null;
  panelsEl.addEventListener("pointerdown", function (e) {
    if (e.button !== 0) { return; }
    drag = {x: e.clientX, at: timeAt(e.clientX), view: view.slice(), pan: e.shiftKey};
    try { panelsEl.setPointerCapture(e.pointerId); } catch (_err) { /* not a live pointer */ }
    e.preventDefault();
  });
  panelsEl.addEventListener("pointermove", function (e) {
    var at = timeAt(e.clientX);
    if (readout) { readout.textContent = "t = " + fmt(at) + " s since start"; }
    if (!drag) { return; }
    if (drag.pan) {
      var sx = (width() - M.l - M.r) / (drag.view[1] - drag.view[0]);
      var dt = (e.clientX - drag.x) / sx;
      view = drag.view.slice();
      setView(drag.view[0] - dt, drag.view[1] - dt);
    } else {
      var r = panelsEl.getBoundingClientRect();
      band.style.display = "block";
      band.style.left = (Math.min(e.clientX, drag.x) - r.left) + "px";
      band.style.width = Math.abs(e.clientX - drag.x) + "px";
    }
  });
  function endDrag(e) {
    if (!drag) { return; }
    band.style.display = "none";
    if (!drag.pan && Math.abs(e.clientX - drag.x) > 4) {
      var at = timeAt(e.clientX);
      setView(Math.min(at, drag.at), Math.max(at, drag.at));
    }
    drag = null;
  }
  panelsEl.addEventListener("pointerup", endDrag);
  panelsEl.addEventListener("pointercancel", endDrag);
  panelsEl.addEventListener("dblclick", function () { setView(full[0], full[1]); });
  root.querySelector('[data-act="reset"]').addEventListener("click", function () { setView(full[0], full[1]); });
  root.querySelector('[data-act="all"]').addEventListener("click", function () {
    hidden = {};
    legend.querySelectorAll(".fp-ts-key").forEach(function (b) { b.setAttribute("aria-pressed", "true"); });
    draw();
  });
  root.querySelector('[data-act="none"]').addEventListener("click", function () {
    data.streams.forEach(function (_s, i) { hidden[i] = true; });
    legend.querySelectorAll(".fp-ts-key").forEach(function (b) { b.setAttribute("aria-pressed", "false"); });
    draw();
  });
  window.addEventListener("resize", draw);
  draw();
  }
}());
