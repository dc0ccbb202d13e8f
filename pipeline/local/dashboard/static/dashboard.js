// streamxai dashboard: renders the server's JSON views with uPlot (vendored); live via server-sent events.
"use strict";

const MODEL_LOSS_COLOR = "#00bfff";  // no feature's colour, so never taken for a change marker (as in `streamxai plot`)
const COLORS = ["#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2",
  "#7f7f7f", "#bcbd22", "#17becf", "#393b79", "#637939", "#8c6d31", "#843c39", "#7b4173"];
// localEvent: the event whose local explanation is shown (null: the stream's latest, following new ones)
const dash = { selected: null, streams: [], view: null, charts: {}, source: null, featureColor: {}, localEvent: null, local: null };
window.dash = dash;

const $ = (sel) => document.querySelector(sel);
// a number shown: d decimals, compact beyond four digits (levelText, below)
const fmt = (v, d = 3) => levelText(v === null || v === undefined ? v : Number(v), d);
const esc = (s) => String(s).replace(/[&<>"']/g, (c) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" }[c]));
// a name (stream id, feature, explainer) cut to its box with an ellipsis, the whole of it in its tooltip
const named = (s) => `<span class="name" title="${esc(s)}">${esc(s)}</span>`;

// An axis' tick labels, short enough for its width: beyond four digits compact, with the digits
// that tell its ticks apart (3.25T, not 3,250,000,000,000, which a 50 px axis cut to "0,000").
function tickTexts(u, splits) {
  const nums = splits.filter((v) => v !== null && v !== undefined && Number.isFinite(v));
  const big = Math.max(0, ...nums.map(Math.abs));
  if (big < 1e4) return splits.map((v) => (v === null || v === undefined) ? "" : String(+v.toPrecision(12)));
  const step = Math.min(...nums.slice(1).map((v, i) => Math.abs(v - nums[i])).filter((d) => d > 0), big);
  const mantissa = String(+(step / 10 ** Math.floor(Math.log10(step))).toPrecision(6)).replace(".", "");
  const digits = Math.min(21, Math.max(1, Math.floor(Math.log10(big)) - Math.floor(Math.log10(step)) + mantissa.length));
  const f = new Intl.NumberFormat("en", { notation: "compact", maximumSignificantDigits: digits });
  return splits.map((v) => (v === null || v === undefined) ? "" : f.format(v));
}
const NUM_AXES = [{ values: tickTexts }, { values: tickTexts }];

// A change's level as its labels and tables show it: up to four digits with d decimals, beyond that
// compact with three significant digits (K, M, B, T; from 1e15 an exponent), the axes' style; the
// same text as `streamxai plot` (markers.level_text; the browser test compares the two)
const UNITS = [[1e3, "K"], [1e6, "M"], [1e9, "B"], [1e12, "T"]];
function significant(m) {
  const t = m.toFixed(Math.max(0, 2 - Math.floor(Math.log10(Math.abs(m)))));
  return t.includes(".") ? t.replace(/0+$/, "").replace(/\.$/, "") : t;
}
function levelText(v, d = 2) {
  if (v === null || v === undefined) return "–";
  v = Number(v);  // its text goes into markup: only ever a number's (a crafted string is NaN)
  if (Number.isNaN(v)) return "–";
  const a = Math.abs(v);
  if (a < 1e4) return v.toFixed(d);
  if (!Number.isFinite(v)) return String(v);
  for (const [scale, unit] of UNITS) {
    if (a < scale * 1e3) {
      const m = significant(v / scale);
      if (Math.abs(+m) < 1e3) return m + unit;  // else rounded up to the next unit's 1
    }
  }
  let e = Math.floor(Math.log10(a)), m = significant(v / 10 ** e);
  if (Math.abs(+m) >= 10) { e += 1; m = significant(v / 10 ** e); }  // rounded up to the next power of ten
  return `${m}e${e}`;
}

function colorOf(feature) {
  if (!(feature in dash.featureColor)) {
    dash.featureColor[feature] = COLORS[Object.keys(dash.featureColor).length % COLORS.length];
  }
  return dash.featureColor[feature];
}

// ---- live connection -------------------------------------------------------------------------
function connect() {
  if (dash.source) dash.source.close();
  const q = dash.selected ? "?stream=" + encodeURIComponent(dash.selected) : "";
  const src = new EventSource("/events" + q);
  dash.source = src;
  src.addEventListener("open", () => { $("#status").textContent = "live"; $("#status").className = "status live"; });
  src.addEventListener("error", () => { $("#status").textContent = "reconnecting…"; $("#status").className = "status down"; });
  src.addEventListener("streams", (e) => onStreams(JSON.parse(e.data)));
  src.addEventListener("stream", (e) => onStream(JSON.parse(e.data)));
}

function select(sid) {
  if (sid === dash.selected) return;
  dash.selected = sid;
  dash.localEvent = null; dash.local = null; $("#local-note").textContent = ""; $("#local-find").value = "";
  history.replaceState(null, "", "#stream=" + encodeURIComponent(sid));
  for (const k of Object.keys(dash.charts)) { dash.charts[k].destroy(); delete dash.charts[k]; }
  $("#importance").innerHTML = ""; $("#pdp").innerHTML = ""; $("#loss").innerHTML = "";
  renderList();
  connect();
}

// ---- stream list -----------------------------------------------------------------------------
function onStreams(msg) {
  dash.streams = msg.streams;
  if (msg.info && msg.info.topic_prefix) $("#info").textContent = "topics " + msg.info.topic_prefix + "*";
  if (!dash.selected && dash.streams.length) {
    const want = decodeURIComponent((location.hash.match(/stream=([^&]+)/) || [])[1] || "");
    const found = dash.streams.find((s) => s.stream_id === want);
    const event = decodeURIComponent((location.hash.match(/[#&]event=([^&]+)/) || [])[1] || "");
    select(found ? want : dash.streams[0].stream_id);
    if (found && event) showLocalEvent(event);  // #stream=ID&event=EVENT: that event's local explanation
    return;
  }
  renderList();
}

function renderList() {
  const f = $("#filter").value.trim().toLowerCase();
  const shown = dash.streams.filter((s) => !f || s.stream_id.toLowerCase().includes(f));
  $("#stream-count").textContent = `${shown.length} of ${dash.streams.length} streams`;
  $("#streams").innerHTML = shown.map((s) =>
    `<li class="stream-item${s.stream_id === dash.selected ? " selected" : ""}" data-stream="${esc(s.stream_id)}">` +
    `${named(s.stream_id)}<span class="sub">seq ${s.last_seq} · loss ${fmt(s.loss)} · ` +
    `${s.changes} change${s.changes === 1 ? "" : "s"} · lag ${s.lag_events ?? "–"}` +
    (s.waiting !== null && s.waiting !== undefined ? ` · ${s.waiting} waiting` : "") + `</span></li>`).join("");
}

// ---- one stream ------------------------------------------------------------------------------
function onStream(v) {
  if (v.stream_id !== dash.selected) return;
  dash.view = v;
  $("#empty").hidden = true;
  $("#stream").hidden = false;
  $("#stream-title").textContent = "stream " + v.stream_id;
  $("#stream-title").title = v.stream_id;
  const counts = Object.entries(v.counts).map(([ex, c]) => `${ex} ${c.explained}/${c.seen}`).join(", ") || "–";
  const lastLoss = v.loss.y.length ? v.loss.y[v.loss.y.length - 1] : null;
  const lb = v.labels;  // labels that come later: null while every label came with its event
  $("#stats").innerHTML =
    `<div>predictions <b>${v.predictions}</b> (last seq ${v.last_seq}` +
    (lb ? `, position ${v.last_position}` : "") + `)</div>` +
    `<div>rolling loss <b>${fmt(lastLoss)}</b>${lb ? " (of the labels that came)" : ""}</div>` +
    `<div>explanations trail predictions by <b id="lag-events">${v.lag_events ?? "–"}</b> ` +
    `${lb ? "positions" : "events"}, <b id="lag-seconds">${fmt(v.lag_s, 1)}</b> s</div>` +
    `<div>explained/seen: ${esc(counts)}</div>` +
    (lb ? `<div class="labels">waiting for a label <b id="labels-waiting">${lb.waiting}</b> events · ` +
          `median label delay <b id="label-delay">${lb.median_delay_events ?? "–"}</b> events` +
          (lb.median_delay_s !== null ? ` (${fmt(lb.median_delay_s, 1)} s)` : "") +
          ` · labelled ${lb.labelled} · expired ${lb.expired}</div>` : "");
  renderImportance(v);
  renderRanking(v);
  renderLoss(v);
  renderPdp(v);
  renderChanges(v);
  renderLocal(v);
}

function chartWidth(el) { return Math.max(200, el.clientWidth - 10); }

// Build or update a uPlot chart in a box; `key` changes when the series set changes.
function upsertChart(id, parent, title, key, makeOpts, data) {
  let box = document.getElementById("box-" + id);
  if (!box) {
    box = document.createElement("div");
    box.className = "chart-box";
    box.id = "box-" + id;
    box.innerHTML = title ? `<h4 title="${esc(title)}">${esc(title)}</h4>` : "";
    parent.appendChild(box);
    // charts follow their box's width (grid columns, window size)
    new ResizeObserver(() => {
      const c = dash.charts[id];
      if (c && Math.abs(c.width - chartWidth(box)) > 2) c.setSize({ width: chartWidth(box), height: c.height });
    }).observe(box);
  }
  let u = dash.charts[id];
  if (u && u._key !== key) { u.destroy(); u = null; }
  if (!u) {
    const opts = makeOpts(chartWidth(box));
    u = new uPlot(opts, data, box);
    u._key = key;
    // band edges (the 95% interval) are series too: keep them out of the legend
    const bandLabels = new Set(opts.series.filter((sr) => sr.band).map((sr) => sr.label));
    u.root.querySelectorAll(".u-legend .u-series").forEach((row) => {
      const label = row.querySelector(".u-label");
      if (label && bandLabels.has(label.textContent)) row.style.display = "none";
      else if (label) label.title = label.textContent;  // a long feature name is cut (dashboard.css)
    });
    dash.charts[id] = u;
  } else {
    u.setData(data);
  }
  return u;
}

// where a change lies: the seq of the event explained there; when labels come later, the
// stream's position first (the charts' axis, in which changes are ordered), then that seq
function at(seq, position) {
  const s = seq === null || seq === undefined ? "–" : seq;
  return dash.view.labels && position !== null && position !== undefined ? `position ${position} (seq ${s})` : `seq ${s}`;
}

// ---- change markers: a dashed line at every change; one label per change episode (its kind, ⚠ when
// it pages, the series or how many), neighbours whose labels would overlap sharing one. The same
// rule as `streamxai plot` (pipeline/local/markers.py), with the widths the browser lays out.
const LABEL_GAP = 4;  // px kept free between two labels of a row
const LABEL_ROWS = 2;  // rows of labels along a chart's top before neighbours share a label
const LABEL_ROW_HEIGHT = 14;  // px
const NAMED_SERIES = 2;  // series named in a label before it says "N series"

function markerGroups(changes, episodes) {
  const spans = [];
  for (const ep of episodes) {  // where an episode's changes lie on the stream's positions
    const a = ep.first_position, b = ep.last_position ?? a;
    if (a !== null && a !== undefined) spans.push([a, b, ep]);
  }
  const groups = new Map();
  changes.slice().sort((p, q) => p.position - q.position).forEach((c, i) => {
    const hit = spans.find(([a, b]) => a <= c.position && c.position <= b);
    const key = hit ? hit[2] : "lone " + i;
    if (!groups.has(key)) groups.set(key, { position: c.position, changes: [], episodes: hit ? [hit[2]] : [] });
    groups.get(key).changes.push(c);
  });
  return [...groups.values()].sort((p, q) => p.position - q.position);
}

const mergeGroups = (gs) => ({ position: gs[0].position, changes: gs.flatMap((g) => g.changes),
  episodes: gs.flatMap((g) => g.episodes),
  lone: gs.filter((g) => !g.episodes.length).reduce((n, g) => n + g.changes.length, 0) });

function labelText(g) {
  const series = [...new Set(g.changes.map((c) => String(c.feature ?? "")))];
  const alert = g.episodes.some((e) => e.alert) ? "⚠ " : "";
  const head = g.episodes.length > 1 ? `${alert}${g.episodes.length} episodes`
    : g.episodes.length && g.episodes[0].kind ? alert + g.episodes[0].kind.replace("_", " ") : "";
  // changes outside the episode(s) that share its label: not told as theirs
  const other = head && g.lone ? ` + ${g.lone} other change${g.lone > 1 ? "s" : ""}` : "";
  if (g.changes.length === 1 && !head) {
    const c = g.changes[0];
    return series[0] + (c.before !== null && c.before !== undefined && c.after !== null && c.after !== undefined
      ? ` ${levelText(c.before)}→${levelText(c.after)}` : "");
  }
  const names = series.length <= NAMED_SERIES ? series.join(", ") : `${series.length} series`;
  return head ? `${head}${other}: ${names}` : names;
}

// boxes [indices, left, right, row] for labels starting at xs (sorted; a label ends at `right` when
// it would run past it), each in the first of LABEL_ROWS rows with room for it; when none has, it
// and the label before it become one, placed where the first began
function layoutLabels(xs, right, widthOf) {
  const boxes = [];
  for (let i = 0; i < xs.length; i++) {
    let idx = [i];
    for (;;) {
      const w = widthOf(idx), left = Math.min(xs[idx[0]], right - w);
      const ends = Array.from({ length: LABEL_ROWS }, (_, r) =>
        Math.max(-Infinity, ...boxes.filter((b) => b[3] === r).map((b) => b[2])));
      const row = ends.findIndex((end) => left >= end + LABEL_GAP);
      if (row < 0) { idx = boxes.pop()[0].concat(idx); continue; }
      boxes.push([idx, left, left + w, row]);
      break;
    }
  }
  return boxes;
}

function changeLabels(u, changes) {
  const groups = markerGroups(changes, dash.view.episodes || []);
  const make = (idx) => (idx.length === 1 ? groups[idx[0]] : mergeGroups(idx.map((i) => groups[i])));
  const widths = new Map();
  const probe = document.createElement("div");
  probe.style.visibility = "hidden";
  u.over.appendChild(probe);
  const labelClass = (g) => "change-label" + (g.episodes.some((e) => e.alert) ? " alert" : "");
  const widthOf = (idx) => {  // as drawn: an alert's label is bold, so wider
    const g = make(idx), text = labelText(g), cls = labelClass(g);
    if (!widths.has(cls + text)) { probe.className = cls; probe.textContent = text; widths.set(cls + text, probe.getBoundingClientRect().width); }
    return widths.get(cls + text);
  };
  const boxes = layoutLabels(groups.map((g) => u.valToPos(g.position, "x")), u.over.clientWidth, widthOf);
  probe.remove();
  for (const [idx, left, , row] of boxes) {
    const g = make(idx);
    const label = document.createElement("div");
    label.className = labelClass(g);
    label.style.left = Math.max(0, left) + "px";
    label.style.top = row * LABEL_ROW_HEIGHT + "px";
    label.textContent = labelText(g);
    label.title = "mean increment before → after (the change test's levels)\n" +
      g.changes.slice(0, 12).map((c) => `${c.explainer}/${c.feature} at ${at(c.seq, c.position)}: ` +
      `${levelText(c.before, 3)} → ${levelText(c.after, 3)}`).join("\n") + (g.changes.length > 12 ? `\n… ${g.changes.length - 12} more` : "");
    u.over.appendChild(label);
  }
}

function changeMarkers(getChanges) {
  return (u) => {
    u.over.querySelectorAll(".change-marker, .change-label, .episode-span").forEach((m) => m.remove());
    const [lo, hi] = [u.scales.x.min, u.scales.x.max];
    for (const ep of (dash.view.episodes || [])) {  // where each new regime began .. its last change
      const a = ep.cut_position ?? ep.first_position, b = ep.last_position ?? ep.first_position;
      if (a === null || a === undefined || b < lo || a > hi) continue;
      const x0 = u.valToPos(Math.max(a, lo), "x"), x1 = u.valToPos(Math.min(b, hi), "x");
      const span = document.createElement("div");
      span.className = "episode-span" + (ep.alert ? " alert" : "");
      span.style.left = x0 + "px";
      span.style.width = Math.max(2, x1 - x0) + "px";
      span.title = `change episode${ep.kind ? " (" + ep.kind + (ep.alert ? ", alert" : "") + ")" : ""}: ` +
        `new regime from ${at(ep.cut_seq, ep.cut_position)}, changes up to ${at(ep.last_seq, ep.last_position)}`;
      u.over.appendChild(span);
    }
    const shown = getChanges().filter((c) => c.position >= lo && c.position <= hi);
    for (const c of shown) {
      const m = document.createElement("div");
      m.className = "change-marker";
      m.style.left = u.valToPos(c.position, "x") + "px";
      m.dataset.seq = c.seq;
      m.dataset.position = c.position;
      m.title = `${c.explainer}/${c.feature} changed at ${at(c.seq, c.position)}` +
        `: mean increment ${levelText(c.before, 3)} → ${levelText(c.after, 3)}` +
        (c.cut_position !== undefined && c.cut_position !== null ? ` (new regime from ${at(c.cut_seq, c.cut_position)})` : "");
      u.over.appendChild(m);
    }
    changeLabels(u, shown);
  };
}

// bands and ± show 95% intervals: value ± 1.96 standard errors (an explanation's stderr, iPDP se)
const Z95 = 1.96;

function renderImportance(v) {
  const parent = $("#importance");
  for (const ex of v.explainers) {  // in the server's order (streamxai.core.stream.EXPLAINER_NAMES)
    const feats = Object.keys(v.series[ex]);
    const tables = feats.map((f) => {
      const s = v.series[ex][f];
      const cols = [s.x, s.y];
      if (s.se) cols.push(s.y.map((y, i) => (y === null || s.se[i] === null) ? null : y + Z95 * s.se[i]),
                          s.y.map((y, i) => (y === null || s.se[i] === null) ? null : y - Z95 * s.se[i]));
      return cols;
    });
    if (!tables.length) continue;
    const data = uPlot.join(tables);
    const withSe = feats.map((f) => !!v.series[ex][f].se);
    const key = feats.join("|") + "#" + withSe.join("");
    upsertChart("imp-" + ex, parent, ex, key, (w) => {
      const series = [{ label: v.labels ? "position" : "seq" }];
      const bands = [];
      feats.forEach((f, i) => {
        series.push({ label: f, stroke: colorOf(f), width: 1.5, spanGaps: true });
        if (withSe[i]) {
          const main = series.length - 1;
          series.push({ label: f + " +95%", stroke: "transparent", spanGaps: true, band: true },
                      { label: f + " −95%", stroke: "transparent", spanGaps: true, band: true });
          bands.push({ series: [main + 1, main + 2], fill: colorOf(f) + "33" });
        }
      });
      return {
        width: w, height: 230, series, bands, scales: { x: { time: false } }, axes: NUM_AXES,
        legend: { live: false }, cursor: { drag: { x: true, y: false } },
        hooks: { draw: [changeMarkers(() => dash.view.changes.filter((c) => !c.explainer || c.explainer === ex))] },
      };
    }, data);
  }
}

function renderRanking(v) {
  const html = v.explainers.map((ex) => {
    const rows = v.ranking[ex] || [];
    const top = Math.max(1e-12, ...rows.map((r) => Math.abs(r.value)));
    return `<div class="rank-group" data-explainer="${esc(ex)}"><b>${esc(ex)}</b>` + rows.map((r) =>
      `<div class="rank-row" data-feature="${esc(r.feature)}">${named(r.feature)}` +
      `<span class="bar${r.value < 0 ? " neg" : ""}" style="width:${(160 * Math.abs(r.value) / top).toFixed(1)}px"></span>` +
      `<span class="rank-value">${fmt(r.value)}${r.stderr !== null && r.stderr !== undefined ? " ± " + fmt(Z95 * r.stderr) : ""}</span></div>`
    ).join("") + "</div>";
  }).join("");
  $("#ranking").innerHTML = html || '<span class="muted">no explanations yet</span>';
}

function renderLoss(v) {
  // the predictions' rolling loss, and dashed on top of it the model's loss as the explanations
  // carry it (the change test's input): one series per stream however many explainers report it
  // (every one reports the same model's loss), the longest of theirs
  const model = Object.values(v.model_loss || {}).filter((s) => s.x.length >= 2)
    .reduce((best, s) => (best && best.x.length >= s.x.length ? best : s), null);
  if (!v.loss.x.length && !model) return;
  const tables = [[v.loss.x, v.loss.y]], labels = ["rolling loss"];
  if (model) { tables.push([model.x, model.y]); labels.push("model loss (explanations)"); }
  const data = uPlot.join(tables);
  upsertChart("loss", $("#loss"), "", labels.join("|"), (w) => ({
    width: w, height: 180, scales: { x: { time: false } }, axes: NUM_AXES, legend: { live: false },
    series: [{ label: v.labels ? "position" : "seq" }, ...labels.map((l, i) => (i === 0
      ? { label: l, stroke: "#222", width: 2, spanGaps: true }
      : { label: l, stroke: MODEL_LOSS_COLOR, width: 1.5, dash: [4, 3], spanGaps: true }))],
    hooks: { draw: [changeMarkers(() => dash.view.changes)] },
  }), data);
}

function renderPdp(v) {
  const parent = $("#pdp");
  $("#pdp-box").hidden = !Object.keys(v.curves || {}).length;  // a stream whose profile runs no iPDP
  for (const [f, c] of Object.entries(v.curves || {}).sort()) {
    const then = (v.curves_at_change || {})[f];
    // a categorical feature's grid names its categories: drawn at 0, 1, 2, ..., each tick named
    const names = [...new Set([...c.grid, ...(then ? then.grid : [])])];
    const cats = names.some((g) => typeof g === "string") ? names : null;
    const xs = (grid) => (cats ? grid.map((g) => cats.indexOf(g)) : grid);
    const tables = [[xs(c.grid), c.pd]];
    const labels = ["now (seq " + c.seq + ")"];
    if (c.se) { tables.push([xs(c.grid), c.pd.map((y, i) => y + Z95 * c.se[i])], [xs(c.grid), c.pd.map((y, i) => y - Z95 * c.se[i])]); }
    if (then) { tables.push([xs(then.grid), then.pd]); labels.push("at change (seq " + then.seq + ")"); }
    const data = uPlot.join(tables.map((t) => sortByX(t)));
    const axes = cats ? [{ splits: () => cats.map((_, i) => i), values: (u, sp) => sp.map((i) => String(cats[i] ?? "")) },
      NUM_AXES[1]] : NUM_AXES;
    const scales = { x: cats ? { time: false, range: [-0.3, cats.length - 0.7] } : { time: false } };
    upsertChart("pdp-" + f, parent, f, (c.se ? "se" : "") + (then ? "then" : "") + (cats ? JSON.stringify(cats) : ""), (w) => {
      const series = [{ label: f }, { label: "now", stroke: colorOf(f), width: 2 }];
      const bands = [];
      if (c.se) {
        series.push({ label: "+95%", stroke: "transparent", band: true }, { label: "−95%", stroke: "transparent", band: true });
        bands.push({ series: [2, 3], fill: colorOf(f) + "33" });
      }
      if (then) series.push({ label: "at change", stroke: colorOf(f), width: 1.5, dash: [5, 4], spanGaps: true });
      return { width: w, height: 150, series, bands, scales, axes, legend: { show: false } };
    }, data);
  }
}

function sortByX(t) {
  const idx = t[0].map((_, i) => i).sort((a, b) => t[0][a] - t[0][b]);
  return t.map((col) => idx.map((i) => col[i]));
}

const ci = (c) => (Array.isArray(c) && c.length === 2 ? ` [${levelText(c[0], 3)}, ${levelText(c[1], 3)}]` : "");

// a data fault: which feature's inputs to check, how its values changed, how much the model relied on it
function faultText(f) {
  const relied = f.reliance === null || f.reliance === undefined ? ""
    : ` <span class="muted">(relied on at ${Math.round(100 * f.reliance)}% of the top feature)</span>`;
  // a finding of the labels carries no reliance (the model learns from them, whatever it relied on)
  const subject = f.feature === "label" && (f.reliance === null || f.reliance === undefined)
    ? "the labels" : `the inputs of ${named(f.feature ?? "")}`;
  return `<div class="fault">check ${subject}: ${esc(f.detail ?? f.what ?? "")}${relied}</div>`;
}

// why an episode happened: learning, degradation, reliance_shift or data_fault; alerts marked
function episodeKind(e) {
  if (!e.kind) return "–";
  const kind = esc(e.kind.replaceAll("_", " "));
  const open = e.status === "open" ? ' <span class="muted">(open)</span>' : "";
  return e.alert ? `<span class="badge alert" title="alert: this kind pages (change_alert_kinds)">⚠ ${kind}</span>${open}`
                 : `<span class="badge kind">${kind}</span>${open}`;
}

// the page keeps a stream's newest change events and episodes (bounded); it says how many it leaves out
function notDrawnText(v) {
  const plural = (n, word) => `${n} older ${word}${n === 1 ? "" : "s"}`;
  const parts = [];
  if (v.changes_not_drawn > 0) parts.push(plural(v.changes_not_drawn, "change event"));
  if (v.episodes_not_drawn > 0) parts.push(plural(v.episodes_not_drawn, "change episode"));
  return parts.length ? `${parts.join(" and ")} not drawn: the dashboard keeps the newest ` +
    `${v.changes.length} change events` + ((v.episodes || []).length ? ` and ${v.episodes.length} episodes` : "") + " of a stream " +
    "(streamxai plot draws many more)" : "";
}

function renderChanges(v) {
  $("#change-count").textContent = v.changes_total ?? v.changes.length;
  const note = notDrawnText(v);
  $("#changes-note").hidden = !note;
  $("#changes-note").textContent = note;
  $("#changes-listed").textContent = v.changes.length > 50 ? "(the newest 50 listed)" : "";
  // seqs of the events explained; when labels come later, the positions first (the charts' axis)
  const heads = $("#changes").querySelectorAll("thead th");
  heads[0].textContent = v.labels ? "detected at position (seq)" : "detected at seq";
  heads[1].textContent = v.labels ? "regime from position (seq)" : "regime from seq";
  const epHeads = $("#episodes").querySelectorAll("thead th");
  epHeads[1].textContent = v.labels ? "regime from position (seq)" : "regime from seq";
  epHeads[2].textContent = v.labels ? "changes at positions" : "changes at seq";
  const cell = (p, s) => (v.labels && p !== null && p !== undefined
    ? `${esc(p)} <span class="muted">(seq ${esc(s ?? "–")})</span>` : `${esc(s ?? "–")}`);
  const rows = v.changes.slice().reverse().slice(0, 50).map((c) =>
    `<tr class="change-event"><td>${cell(c.position, c.seq)}</td>` +
    `<td>${cell(c.cut_position, c.cut_seq)}</td><td>${named(c.explainer ?? "")}</td>` +
    `<td>${named(c.feature ?? "")}</td><td>${levelText(c.before, 3)}${ci(c.ci_before)}</td><td>${levelText(c.after, 3)}${ci(c.ci_after)}</td>` +
    `<td>${c.before !== null && c.after !== null ? (c.after > c.before ? "▲" : "▼") : ""}</td>` +
    `<td>${c.loss_before !== undefined ? levelText(c.loss_before, 3) + " → " + levelText(c.loss_after, 3) : ""}</td></tr>`);
  $("#changes tbody").innerHTML = rows.join("");
  const eps = (v.episodes || []).slice().reverse().slice(0, 20);
  $("#episodes-box").hidden = eps.length === 0;
  $("#episode-count").textContent = v.episodes_total ?? (v.episodes || []).length;
  $("#episodes tbody").innerHTML = eps.map((e) =>
    `<tr class="change-episode${e.alert ? " alert" : ""}"><td class="episode-kind">${episodeKind(e)}</td>` +
    `<td>${cell(e.cut_position, e.cut_seq)}</td>` +
    `<td>${esc(v.labels ? `${e.first_position ?? "–"}…${e.last_position ?? "–"}` : `${e.first_seq ?? "–"}…${e.last_seq ?? "–"}`)}</td>` +
    `<td>${e.changes.map((c) => `${named(`${c.explainer}/${c.feature}`)} ${levelText(c.before, 3)}→${levelText(c.after, 3)}`).join("<br>")}` +
    `${e.n_changes > e.changes.length ? `<br>… ${e.n_changes - e.changes.length} more` : ""}` +
    `${(e.faults || []).map(faultText).join("")}</td>` +
    `<td>${levelText(e.loss_before, 3)} → ${levelText(e.loss_after, 3)}</td></tr>`).join("");
}

// ---- why one prediction: the local explanation's waterfall ------------------------------------
// The server sends the bars (streamxai.local.waterfall): top first, each from `start` to `end`;
// from the bottom up each starts where the one below ended, the lowest at the base value, the top
// one ending at the prediction. They are drawn as they come.
function renderLocal(v) {
  const none = !v.locals_total;
  document.querySelector(".local-controls").hidden = none;
  if (none) {
    $("#local-head").innerHTML = '<span class="muted">no local explanations of this stream: they are sent with ' +
      "<code>local = true</code> in its settings (and <code>local_sample_rate</code>)</span>";
    $("#local-chart").hidden = true;
    return;
  }
  const sel = $("#local-event");
  const keyOf = (e) => (e.event_id !== null && e.event_id !== undefined ? e.event_id : String(e.seq));
  const events = v.local_events || [];
  const options = [["", `latest (${v.locals_total} explained)`], ...events.map((e) =>
    [keyOf(e), `${e.event_id !== null && e.event_id !== undefined ? e.event_id + " · " : ""}seq ${e.seq} · ${fmt(e.prediction)}`])];
  if (dash.localEvent !== null && !options.some(([k]) => k === dash.localEvent)) options.push([dash.localEvent, dash.localEvent]);
  if (document.activeElement !== sel) {  // not while one is choosing
    sel.innerHTML = options.map(([k, t]) => `<option value="${esc(k)}">${esc(t)}</option>`).join("");
    sel.value = dash.localEvent ?? "";
  }
  if (dash.localEvent === null) drawLocal(v.local);
  else if (dash.local && dash.localWidth !== chartWidthOf($("#local-chart"))) drawLocal(dash.local);  // laid out anew
}

// the width of the waterfall's drawing: its box's, once the page has laid the box out
const chartWidthOf = (box) => Math.max(560, box.clientWidth - 10);

function showLocalEvent(event) {
  const sid = dash.selected;
  if (!event) { dash.localEvent = null; $("#local-note").textContent = ""; if (dash.view) drawLocal(dash.view.local); return; }
  fetch(`/api/local/${encodeURIComponent(sid)}?event=${encodeURIComponent(event)}`).then((r) =>
    r.ok ? r.json() : r.text().then((t) => { throw new Error(t); })).then((loc) => {
    if (sid !== dash.selected) return;
    dash.localEvent = event;
    $("#local-note").textContent = `showing event ${event}; choose "latest" to follow new ones`;
    drawLocal(loc);
    if (dash.view) renderLocal(dash.view);
  }).catch((e) => { $("#local-note").textContent = e.message; });
}

function drawLocal(loc) {
  dash.local = loc;
  const chart = $("#local-chart");
  if (!loc) { chart.hidden = true; $("#local-head").textContent = ""; return; }
  chart.hidden = false;
  const w = loc.waterfall;
  const event = loc.event_id !== null && loc.event_id !== undefined ? `event ${named(loc.event_id)} (seq ${esc(loc.seq)})` : `seq ${esc(loc.seq)}`;
  const how = loc.exact ? `exact (${esc(loc.method)})` : `sampled (${esc(loc.method)}, ± one standard error)`;
  const what = loc.target !== null && loc.target !== undefined ? ` <span class="muted">probability of ${named(String(loc.target))}</span>` : "";
  const diff = w.prediction - w.base;
  $("#local-head").innerHTML = `<div>${event} · model version ${esc(loc.model_version ?? "–")} · ${how} · ` +
    `against ${esc(loc.n_background ?? "–")} recent events</div>` +
    `<div>prediction <b id="local-prediction">${levelText(w.prediction, 4)}</b>${what} = base value ` +
    `<b id="local-base">${levelText(w.base, 4)}</b> ${diff >= 0 ? "+" : "−"} ${levelText(Math.abs(diff), 4)}</div>`;
  const rows = w.rows, rowH = 24, top = 22, bottom = 40, labelW = 240, valueW = 86;
  const width = chartWidthOf(chart), plotW = width - labelW - valueW;
  dash.localWidth = width;
  const ends = [w.base, w.prediction, ...rows.flatMap((r) => [r.start, r.end])].map(Number);
  let lo = Math.min(...ends), hi = Math.max(...ends);
  if (hi - lo < 1e-12) { lo -= 0.05; hi += 0.05; }
  const sampled = rows.some((r) => r.stderr !== null && r.stderr !== undefined);
  const padPx = sampled ? 120 : 64;  // room either side for the value (and its ± stderr) written where a bar ends
  const X = (val) => labelW + padPx + ((plotW - 2 * padPx) * (Number(val) - lo)) / (hi - lo);
  const tickLo = lo - (padPx * (hi - lo)) / (plotW - 2 * padPx), tickHi = hi + (padPx * (hi - lo)) / (plotW - 2 * padPx);
  const height = top + rows.length * rowH + bottom;
  const cut = (t, n) => (t.length > n ? t.slice(0, n - 1) + "…" : t);
  const parts = [`<svg width="${width}" height="${height}" role="img" aria-label="waterfall of the local explanation">`];
  parts.push(`<line class="wf-axis" x1="${labelW}" x2="${labelW + plotW}" y1="${height - bottom + 4}" y2="${height - bottom + 4}"/>`);
  for (let i = 0; i <= 4; i++) {
    const val = tickLo + ((tickHi - tickLo) * i) / 4;
    parts.push(`<text class="wf-tick" x="${X(val).toFixed(1)}" y="${height - bottom + 16}" text-anchor="middle">${levelText(val, 3)}</text>`);
  }
  rows.forEach((r, i) => {
    const y = top + i * rowH, x0 = X(Math.min(r.start, r.end)), x1 = X(Math.max(r.start, r.end));
    const dir = r.value > 0 ? "up" : r.value < 0 ? "down" : "none";
    const x = r.x_text ? ` = ${r.x_text}` : "";  // the value's text as tail and plot write it
    const label = r.others ? r.feature : r.feature + x;
    parts.push(`<g class="wf-row" data-feature="${esc(r.feature)}"><title>${esc(label)}: ${r.value >= 0 ? "+" : ""}${esc(Number(r.value))}</title>` +
      `<text x="${labelW - 8}" y="${y + rowH / 2 + 4}" text-anchor="end">${esc(cut(label, 34))}</text>` +
      `<rect class="wf-bar ${dir}${r.others ? " others" : ""}" x="${x0.toFixed(2)}" y="${y + 4}" width="${Math.max(1, x1 - x0).toFixed(2)}" ` +
      `height="${rowH - 8}" data-start="${Number(r.start)}" data-end="${Number(r.end)}" data-value="${Number(r.value)}"/>` +
      // the value where the bar ends: right of a bar that raises the prediction, left of one that lowers it
      `<text class="wf-value ${dir}" x="${(r.value >= 0 ? x1 + 4 : x0 - 4).toFixed(1)}" y="${y + rowH / 2 + 4}" ` +
      `text-anchor="${r.value >= 0 ? "start" : "end"}">${r.value >= 0 ? "+" : "−"}${levelText(Math.abs(r.value), 4)}` +
      `${r.stderr !== null && r.stderr !== undefined ? " ± " + levelText(r.stderr, 4) : ""}</text></g>`);
    if (i + 1 < rows.length) {  // this bar begins where the one below it ends
      const xe = X(rows[i + 1].end).toFixed(2);
      parts.push(`<line class="wf-link" x1="${xe}" x2="${xe}" y1="${y + rowH - 4}" y2="${y + rowH + 4}"/>`);
    }
  });
  const yb = top + rows.length * rowH;
  parts.push(`<line class="wf-mark" x1="${X(w.base).toFixed(2)}" x2="${X(w.base).toFixed(2)}" y1="${top}" y2="${yb + 4}"/>`,
    `<text class="wf-tick" x="${X(w.base).toFixed(1)}" y="${height - 6}" text-anchor="middle">base value ${levelText(w.base, 4)}</text>`,
    `<line class="wf-mark" x1="${X(w.prediction).toFixed(2)}" x2="${X(w.prediction).toFixed(2)}" y1="${top - 4}" y2="${yb}"/>`,
    `<text x="${X(w.prediction).toFixed(1)}" y="${top - 8}" text-anchor="middle">prediction ${levelText(w.prediction, 4)}</text>`, "</svg>");
  chart.innerHTML = parts.join("");
}

// ---- wiring ----------------------------------------------------------------------------------
$("#local-event").addEventListener("change", (e) => showLocalEvent(e.target.value));
// drawn again when its box changes width (the window, or the page shown after the waterfall was drawn)
new ResizeObserver(() => {
  if (dash.local && dash.localWidth !== chartWidthOf($("#local-chart"))) drawLocal(dash.local);
}).observe($("#local-chart"));
$("#local-go").addEventListener("click", () => showLocalEvent($("#local-find").value.trim()));
$("#local-find").addEventListener("keydown", (e) => { if (e.key === "Enter") showLocalEvent($("#local-find").value.trim()); });
$("#streams").addEventListener("click", (e) => {
  const li = e.target.closest("li[data-stream]");
  if (li) select(li.dataset.stream);
});
$("#filter").addEventListener("input", renderList);
connect();
