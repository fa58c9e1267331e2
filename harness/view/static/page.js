// fixrl view: the page's behaviour. The data is the JSON in #payload; each episode's transcript
// is a script element #t<i> (gzipped JSON, base64), inflated only when the episode is opened (pages of 10,000 episodes
// open without parsing them all). Every text is set with textContent: nothing from a run is HTML.
"use strict";
const P = JSON.parse(document.getElementById("payload").textContent);
const EP = P.episodes;
const PAGE = 100;
const state = { text: "", outcome: "", exit: "", step: "", kept: false, sort: "i", desc: false, page: 0, sel: null };
let rows = EP;

function el(tag, attrs, ...kids) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (k === "class") e.className = v;
    else if (k === "text") e.textContent = v;
    else if (k.startsWith("on")) e.addEventListener(k.slice(2), v);
    else e.setAttribute(k, v);
  }
  for (const k of kids) if (k !== null && k !== undefined) e.append(k);
  return e;
}
const fmt = (v, d = 3) => v === null || v === undefined ? "" : (typeof v === "number" && !Number.isInteger(v) ? v.toFixed(d) : String(v));
const uniq = (key) => [...new Set(EP.map(e => e[key]).filter(v => v !== null && v !== undefined))].sort((a, b) => a < b ? -1 : a > b ? 1 : 0);

const COLS = [
  ["i", "#", true], ["task", "task"], ["sample", "sample", true], ["step", "step", true, "grpo"],
  ["version", "adapter", true, "version"], ["group", "group", true, "grpo"], ["advantage", "adv.", true, "grpo"], ["kept", "trained", false, "grpo"],
  ["reward", "reward", true], ["outcome", "outcome"], ["reason", "reason"], ["exit", "ended"],
  ["turns", "turns", true], ["tokens", "trained tok.", true], ["total", "all tok.", true],
  ["violations", "rules", true], ["guard", "guard", true],
].filter(c => !c[3] || (c[3] === "grpo" ? P.kind === "grpo" : EP.some(e => e[c[0]] !== null && e[c[0]] !== undefined)));

function setupTabs() {
  const tabs = [["episodes", "Episodes"]];
  if (P.kind === "grpo") tabs.push(["groups", "Groups"], ["metrics", "Metrics"]);
  if (P.eval) tabs.push(["passes", "Passes"]);
  const nav = document.getElementById("tabs");
  for (const [id, name] of tabs) {
    nav.append(el("button", { id: "tabbtn-" + id, text: name, onclick: () => show(id) }));
  }
  show("episodes");
}
function show(id) {
  for (const s of document.querySelectorAll(".tab")) s.hidden = s.id !== "tab-" + id;
  for (const b of document.querySelectorAll("nav button")) b.classList.toggle("on", b.id === "tabbtn-" + id);
  if (id === "groups") renderGroups();
  if (id === "metrics") renderMetrics();
  if (id === "passes") renderPasses();
}

function setupFilters() {
  const fill = (id, values) => { const s = document.getElementById(id); for (const v of values) s.append(el("option", { value: v, text: v })); };
  fill("filter-outcome", uniq("outcome"));
  fill("filter-exit", uniq("exit"));
  if (P.kind === "grpo") fill("filter-step", uniq("step"));
  else for (const e of document.querySelectorAll(".grpo-only")) e.hidden = true;
  // Both events: a select or checkbox changed by script or driver may send only "change".
  const on = (id, key, prop = "value") => {
    const node = document.getElementById(id);
    const update = () => { if (state[key] !== node[prop]) { state[key] = node[prop]; state.page = 0; refresh(); } };
    node.addEventListener("input", update);
    node.addEventListener("change", update);
  };
  on("filter-text", "text"); on("filter-outcome", "outcome"); on("filter-exit", "exit"); on("filter-step", "step");
  on("filter-kept", "kept", "checked");
  document.getElementById("prev").onclick = () => { if (state.page > 0) { state.page--; renderTable(); } };
  document.getElementById("next").onclick = () => { if ((state.page + 1) * PAGE < rows.length) { state.page++; renderTable(); } };
  const head = document.querySelector("#episodes thead tr");
  for (const [key, name] of COLS) {
    head.append(el("th", { "data-key": key, text: name, onclick: () => {
      state.desc = state.sort === key ? !state.desc : false; state.sort = key; refresh();
    } }));
  }
}

function refresh() {
  const q = state.text.toLowerCase();
  rows = EP.filter(e => (!state.outcome || e.outcome === state.outcome) && (!state.exit || e.exit === state.exit)
    && (!state.step || String(e.step) === state.step) && (!state.kept || e.kept === true)
    && (!q || (e.task + " " + e.reason + " " + e.actions).toLowerCase().includes(q)));
  const k = state.sort, sign = state.desc ? -1 : 1;
  rows = rows.slice().sort((a, b) => {
    const x = a[k], y = b[k];
    if (x === y) return a.i - b.i;
    if (x === null || x === undefined) return 1;
    if (y === null || y === undefined) return -1;
    return (x < y ? -1 : 1) * sign;
  });
  for (const th of document.querySelectorAll("#episodes th")) {
    th.classList.toggle("sorted", th.dataset.key === k); th.classList.toggle("desc", th.dataset.key === k && state.desc);
  }
  renderTable();
}

function renderTable() {
  const body = document.querySelector("#episodes tbody");
  const part = rows.slice(state.page * PAGE, (state.page + 1) * PAGE);
  body.replaceChildren(...part.map(e => {
    const tr = el("tr", { "data-i": e.i, onclick: () => open(e.i) });
    if (e.i === state.sel) tr.classList.add("sel");
    for (const [key] of COLS) {
      const v = e[key];
      const td = el("td", { text: key === "kept" ? (v ? "yes" : "no") : fmt(v) });
      if (typeof v === "number") td.className = "num";
      if (key === "outcome") td.className = v;
      if (key === "reason") { td.className = "reason"; td.title = v; }
      tr.append(td);
    }
    return tr;
  }));
  document.getElementById("count").textContent = `${rows.length} of ${EP.length} episodes`;
  const pages = Math.max(1, Math.ceil(rows.length / PAGE));
  document.getElementById("page").textContent = `page ${state.page + 1} / ${pages}`;
}

// A transcript is gzipped JSON in base64 (page.py); inflated only when its episode is opened.
async function transcript(i) {
  const node = document.getElementById("t" + i);
  if (!node) return null;
  const bin = atob(node.textContent.trim());
  const bytes = new Uint8Array(bin.length);
  for (let k = 0; k < bin.length; k++) bytes[k] = bin.charCodeAt(k);
  const stream = new Blob([bytes]).stream().pipeThrough(new DecompressionStream("gzip"));
  return JSON.parse(await new Response(stream).text());
}

async function open(i) {
  state.sel = i;
  document.getElementById("detail").dataset.opened = "";
  for (const tr of document.querySelectorAll("#episodes tbody tr")) tr.classList.toggle("sel", Number(tr.dataset.i) === i);
  const e = EP[i], t = await transcript(i);
  if (state.sel !== i) return;  // another episode was clicked meanwhile
  const d = document.getElementById("detail");
  d.replaceChildren();
  d.append(el("h2", { text: `#${i} ${e.task}` + (e.sample !== null ? ` sample ${e.sample}` : "") + (e.step !== null ? ` step ${e.step}` : "") }));
  d.append(el("div", {}, el("span", { class: e.outcome, text: e.outcome }), ` reward ${fmt(e.reward)}, ended ${e.exit}, ${e.turns} turns` + (e.reason ? ` - ${e.reason}` : "")));
  if (P.kind === "grpo" && e.group !== null) d.append(groupStrip(e));
  if (!t) { d.append(el("p", { class: "hint", text: "No transcript stored for this episode." })); return; }
  d.append(el("h2", { text: "Verdict" }), kv(t.verdict));
  d.append(el("h2", { text: "Final diff against the buggy repository" }));
  d.append(t.diff ? diffBlock(t.diff) : el("p", { class: "hint", text: "no change submitted (or none recorded in this file)" }));
  d.append(el("h2", { text: "Transcript" }));
  const legend = el("div", { class: "legend" }, el("span", { class: "tok-trained", text: "in the loss (assistant mask 1)" }),
    el("span", { class: "tok-untrained", text: "not in the loss" }),
    `${t.trained} of ${t.tokens} tokens trained; ${t.turn_tokens} sampled in assistant turns`);
  d.append(legend);
  if (t.stray_trained) d.append(el("p", { class: "anomaly", text: `${t.stray_trained} trained token(s) lie outside every assistant turn` }));
  for (const b of t.blocks) d.append(message(b));
  d.append(el("h2", { text: "Episode record" }), kv(t.record));
  d.dataset.opened = String(i);
}

function message(b) {
  let who = b.role;
  if (b.role === "assistant" && b.tokens !== undefined) {
    who += ` - ${b.trained} of ${b.tokens} sampled tokens trained` + (b.cut ? ", cut off at the token limit" : "");
  }
  const box = el("div", { class: "msg " + b.role }, el("div", { class: "who", text: who }));
  const pre = el("pre");
  if (b.runs) {
    for (const [m, text] of b.runs) pre.append(el("span", { class: m ? "tok-trained" : "tok-untrained", text }));
  } else if (b.role === "assistant" && b.tokens !== undefined) {
    const cls = b.trained === b.tokens ? "tok-trained" : b.trained === 0 ? "tok-untrained" : "";
    pre.append(el("span", { class: cls, text: b.text || "(empty reply)" }));
  } else {
    pre.textContent = b.text;
  }
  box.append(pre);
  return box;
}

function diffBlock(text) {
  const pre = el("pre", { class: "diff" });
  for (const line of text.split("\n")) {
    const cls = line.startsWith("+++") || line.startsWith("---") ? "" : line.startsWith("+") ? "add" : line.startsWith("-") ? "del" : line.startsWith("@@") ? "hunk" : "";
    pre.append(cls ? el("span", { class: cls, text: line }) : line + "\n");
  }
  return pre;
}

function kv(obj) {
  const dl = el("dl", { class: "kv" });
  for (const [k, v] of Object.entries(obj || {})) {
    if (v === null || v === "" || (typeof v === "object" && Object.keys(v).length === 0)) continue;
    const text = typeof v === "object" ? JSON.stringify(v, null, 1) : String(v);
    dl.append(el("dt", { text: k }), el("dd", {}, el("pre", { class: "block", text })));
  }
  return dl;
}

function groupCard(e, current) {
  return el("div", { class: "group-card" + (current ? " cur" : ""), "data-i": e.i, onclick: () => { show("episodes"); open(e.i); } },
    el("div", {}, el("b", { text: `#${e.i} s${fmt(e.sample)} ` }), el("span", { class: e.outcome, text: e.outcome })),
    el("div", {}, "adv ", el("span", { class: "adv", text: e.advantage === null ? "none" : e.advantage.toFixed(3) }),
      e.kept ? "" : " (not trained on)"),
    el("div", { text: `reward ${fmt(e.reward)}, ${e.exit}, ${e.tokens} tok.` }),
    el("div", { class: "acts", text: e.actions }));
}
function groupStrip(e) {
  const members = (P.groups[`${e.step}/${e.group}`] || []).map(i => EP[i]);
  return el("div", {}, el("h2", { text: `Group ${e.group} of step ${e.step} (${members.length} episodes)` }),
    el("div", { class: "strip" }, ...members.map(m => groupCard(m, m.i === e.i))));
}

function renderGroups() {
  const sel = document.getElementById("group-step");
  if (!sel.options.length) {
    for (const s of uniq("step")) sel.append(el("option", { value: s, text: s }));
    sel.onchange = renderGroups;
  }
  const keys = Object.keys(P.groups).filter(k => k.split("/")[0] === sel.value);
  document.getElementById("group-count").textContent = `${keys.length} group(s)`;
  document.getElementById("groups").replaceChildren(...keys.map(k => {
    const members = P.groups[k].map(i => EP[i]);
    const mean = members.reduce((s, m) => s + m.reward, 0) / members.length;
    return el("div", { class: "group-row" }, el("h3", { text: `group ${k.split("/")[1]}: ${members[0].task}, mean reward ${mean.toFixed(3)}` }),
      el("div", { class: "strip" }, ...members.map(m => groupCard(m, false))));
  }));
}

const SVG = "http://www.w3.org/2000/svg";
function svg(tag, attrs) { const e = document.createElementNS(SVG, tag); for (const [k, v] of Object.entries(attrs)) e.setAttribute(k, v); return e; }
function chart(name, xs, ys) {
  const W = 260, H = 90, pad = 4;
  const pts = xs.map((x, j) => [x, ys[j]]).filter(p => p[1] !== null && p[0] !== null);
  const box = el("div", { class: "chart" });
  const last = pts.length ? pts[pts.length - 1][1] : null;
  box.append(el("div", { class: "name", text: `${name}  (last ${fmt(last)})` }));
  const s = svg("svg", { viewBox: `0 0 ${W} ${H}`, preserveAspectRatio: "none" });
  if (pts.length) {
    const x0 = Math.min(...pts.map(p => p[0])), x1 = Math.max(...pts.map(p => p[0]));
    const y0 = Math.min(...pts.map(p => p[1])), y1 = Math.max(...pts.map(p => p[1]));
    const X = x => pad + (x1 === x0 ? (W - 2 * pad) / 2 : (x - x0) / (x1 - x0) * (W - 2 * pad));
    const Y = y => H - pad - (y1 === y0 ? (H - 2 * pad) / 2 : (y - y0) / (y1 - y0) * (H - 2 * pad));
    s.append(svg("polyline", { points: pts.map(p => `${X(p[0])},${Y(p[1])}`).join(" "), fill: "none", stroke: "#2f6fdb", "stroke-width": 1.5 }));
    for (const p of pts) s.append(svg("circle", { cx: X(p[0]), cy: Y(p[1]), r: 2, fill: "#2f6fdb" }));
    const lab = svg("text", { x: pad, y: 10, "font-size": 9, fill: "#778" }); lab.textContent = `${fmt(y0)} .. ${fmt(y1)}`; s.append(lab);
  }
  box.append(s);
  return box;
}
const FIRST = ["rollout/reward", "rollout/pass_rate", "train/adv_abs_mean", "zero_adv_frac", "loss/policy", "approx_kl",
  "kl_ref", "entropy", "grad_norm", "policy_tokens", "rollout/turns", "rollout/errors", "time/step"];
function renderMetrics() {
  const box = document.getElementById("metrics");
  if (box.childElementCount) return;
  const m = P.metrics, keys = Object.keys(m.series);
  keys.sort((a, b) => (FIRST.indexOf(a) + 1 || 999) - (FIRST.indexOf(b) + 1 || 999));
  if (!keys.length) box.append(el("p", { class: "hint", text: "no metrics.jsonl in this run" }));
  for (const k of keys) box.append(chart(k, m.steps, m.series[k]));
}

function renderPasses() {
  const ev = P.eval, pk = document.getElementById("passk");
  if (pk.childElementCount) return;
  const t = el("table", { id: "passk-table" }, el("tr", {}, ...["metric", "mean", "95% interval", "tasks", ""].map(h => el("th", { text: h }))));
  for (const r of ev.passk) {
    const bar = svg("svg", { width: 200, height: 14, viewBox: "0 0 200 14" });
    bar.append(svg("rect", { x: 0, y: 3, width: 200 * r.mean, height: 8, fill: "#9cc3f5" }),
      svg("line", { x1: 200 * r.low, x2: 200 * r.high, y1: 7, y2: 7, stroke: "#123", "stroke-width": 1.5 }));
    t.append(el("tr", {}, el("td", { text: `pass@${r.k}` }), el("td", { class: "num", text: r.mean.toFixed(3) }),
      el("td", { text: `[${r.low.toFixed(3)}, ${r.high.toFixed(3)}]` }), el("td", { class: "num", text: String(r.tasks) }), el("td", {}, bar)));
  }
  pk.append(ev.passk.length ? t : el("p", { class: "hint", text: "no pass@k (fewer than one scored episode per task)" }));
  const width = Math.max(0, ...Object.values(ev.matrix).map(c => c.length));
  const m = el("table", { class: "matrix", id: "matrix-table" }, el("tr", {}, el("th", { text: "task" }), el("th", { text: "passes" }),
    ...Array.from({ length: width }, (_, j) => el("th", { text: String(j) }))));
  for (const task of ev.tasks) {
    const cells = ev.matrix[task] || [];
    const tr = el("tr", {}, el("td", { text: task }), el("td", { class: "num", text: `${cells.filter(c => c[1] === "pass").length}/${cells.length}` }));
    for (const [s, o, i] of cells) {
      const td = el("td", { class: `cell ${i === null ? "none" : o}`, title: `${task} sample ${s}: ${o}` });
      if (i !== null) td.onclick = () => { show("episodes"); open(i); };
      tr.append(td);
    }
    m.append(tr);
  }
  document.getElementById("matrix").append(m);
}

function summary() {
  const n = EP.length, count = k => EP.filter(e => e.outcome === k).length;
  document.getElementById("title").textContent = P.title;
  document.getElementById("summary").textContent = `${P.source} - ${count("pass")} pass, ${count("fail")} fail, ${count("error")} error of ${n}`
    + (P.model ? ` - model ${P.model}` : "") + (P.tokens ? "" : " - trained tokens shown per turn (no tokenizer given)");
}

summary();
setupTabs();
setupFilters();
refresh();
