// The dashboard's web page (`pyburn dash --web`): each run's events (events.jsonl's lines, see
// pyburn/train/runlog.py) fetched from the server every second, folded as RunState folds them
// (pyburn/train/dashboard/state.py), drawn as one SVG chart per metric with every run and
// split in it, and the same plot kinds and smoothing as the terminal dashboard.

import { apply, freshRun } from "./events.js";

const POLL_MS = 1000;
const FULL_POINTS = 250;
const RECENT_POINTS = 1000;
const KINDS = ["full", "recent", "summary"];
const SPLIT_COLOURS = { train: "#4fd6e8", valid: "#e86fd6" };
const PALETTE = ["#4fd6e8", "#e86fd6", "#7bd66f", "#e8d66f", "#6f9be8", "#e86f6f", "#dddddd", "#9fe8f0"];
const WIDTH = 800;
const HEIGHT = 360;
const MARGIN = { left: 60, right: 10, top: 10, bottom: 24 };
// a series with at most this many points has each one marked
const MARKED = 50;

const $ = (id) => document.getElementById(id);
const view = { runs: [], metric: null, kind: "full", smoothing: 0.6 };

/** TensorBoard's debiased moving average; null (not finite) passes through. */
function smooth(points, weight) {
  if (weight <= 0) return points;
  let average = 0, seen = 0;
  return points.map(([x, y]) => {
    if (y === null) return [x, y];
    average = weight * average + (1 - weight) * y;
    seen += 1;
    return [x, average / (1 - weight ** seen)];
  });
}

/** At most `most` points: the means of equal runs of consecutive points. */
function downsample(points, most) {
  if (points.length <= most) return points;
  const out = [];
  for (let k = 0; k < most; k++) {
    const run = points.slice(Math.floor((k * points.length) / most),
                             Math.floor(((k + 1) * points.length) / most)).filter(([, y]) => y !== null);
    if (run.length) out.push([run.reduce((s, [x]) => s + x, 0) / run.length,
                              run.reduce((s, [, y]) => s + y, 0) / run.length]);
  }
  return out;
}

/** The series of the chosen metric: by split for one run, by run and split for several. */
function seriesOf(metric) {
  const found = [];
  view.runs.forEach((run, r) => {
    for (const [split, points] of Object.entries(run.curves[metric] ?? {})) {
      const name = view.runs.length === 1 ? split : `${run.name} ${split}`;
      found.push({ run: run.name, split, name, points });
    }
  });
  found.forEach((s, k) => {
    s.colour = view.runs.length === 1 ? (SPLIT_COLOURS[s.split] ?? "#ddd") : PALETTE[k % PALETTE.length];
  });
  return found;
}

function element(tag, attributes = {}, text = "") {
  const made = document.createElementNS(["svg", "polyline", "text", "circle"].includes(tag)
    ? "http://www.w3.org/2000/svg" : "http://www.w3.org/1999/xhtml", tag);
  for (const [k, v] of Object.entries(attributes)) made.setAttribute(k, v);
  if (text) made.textContent = text;
  return made;
}

function drawChart(series) {
  const svg = $("plot");
  svg.replaceChildren();
  const shown = series.map((s) => {
    const points = view.kind === "recent" ? s.points.slice(-RECENT_POINTS) : s.points;
    const smoothed = smooth(points, view.smoothing);
    return { ...s, points: view.kind === "full" ? downsample(smoothed, FULL_POINTS) : smoothed };
  });
  const all = shown.flatMap((s) => s.points.filter(([, y]) => y !== null));
  if (!all.length) return;
  const xs = all.map(([x]) => x), ys = all.map(([, y]) => y);
  let [x0, x1, y0, y1] = [Math.min(...xs), Math.max(...xs), Math.min(...ys), Math.max(...ys)];
  if (y1 - y0 < 1e-12 * Math.max(1, Math.abs(y1))) [y0, y1] = [y0 - 0.5, y1 + 0.5];
  const px = (x) => MARGIN.left + (x1 === x0 ? 0 : ((x - x0) / (x1 - x0)) * (WIDTH - MARGIN.left - MARGIN.right));
  const py = (y) => MARGIN.top + ((y1 - y) / (y1 - y0)) * (HEIGHT - MARGIN.top - MARGIN.bottom);
  for (const [y, label] of [[y1, y1], [y0, y0]]) {
    svg.append(element("text", { x: 4, y: py(y) + 4 }, Number(label).toPrecision(4)));
  }
  svg.append(element("text", { x: MARGIN.left, y: HEIGHT - 6 }, `step ${x0}`));
  svg.append(element("text", { x: WIDTH - 90, y: HEIGHT - 6 }, `step ${x1}`));
  for (const s of shown) {
    // a value that is not finite breaks the line, as in the terminal
    let segment = [];
    const flush = () => {
      if (segment.length) {
        svg.append(element("polyline", { points: segment.join(" "), stroke: s.colour,
                                         "data-run": s.run, "data-split": s.split }));
      }
      segment = [];
    };
    for (const [x, y] of s.points) {
      if (y === null) flush();
      else segment.push(`${px(x).toFixed(1)},${py(y).toFixed(1)}`);
    }
    flush();
    if (s.points.length <= MARKED) {  // few points (a validation per epoch): each one shown
      for (const [x, y] of s.points.filter(([, v]) => v !== null)) {
        svg.append(element("circle", { cx: px(x).toFixed(1), cy: py(y).toFixed(1), r: 3,
                                       fill: s.colour, "data-run": s.run, "data-split": s.split }));
      }
    }
  }
}

function drawSummary(series) {
  const table = $("summary");
  table.replaceChildren(element("tr", {}, ""));
  table.firstChild.innerHTML = "<th>series</th><th>last</th><th>min</th><th>at step</th><th>max</th><th>at step</th><th>points</th>";
  for (const s of series) {
    const finite = s.points.filter(([, y]) => y !== null);
    const row = element("tr", { "data-series": s.name });
    if (!finite.length) {
      row.innerHTML = `<td>${s.name}</td><td>-</td>`;
    } else {
      const low = finite.reduce((a, b) => (b[1] < a[1] ? b : a));
      const high = finite.reduce((a, b) => (b[1] > a[1] ? b : a));
      const last = s.points[s.points.length - 1][1];
      row.innerHTML = `<td style="color:${s.colour}">${s.name}</td><td>${last === null ? "NaN" : last.toPrecision(5)}</td>` +
        `<td>${low[1].toPrecision(5)}</td><td>${low[0]}</td><td>${high[1].toPrecision(5)}</td><td>${high[0]}</td><td>${s.points.length}</td>`;
    }
    table.append(row);
  }
}

function render() {
  const names = [...new Set(view.runs.flatMap((run) => Object.keys(run.curves)))]
    .sort((a, b) => (a !== "loss") - (b !== "loss") || a.localeCompare(b));
  if (view.metric === null && names.length) view.metric = names[0];
  const nav = $("metrics");
  nav.replaceChildren(...names.map((name) => {
    const button = element("button", { role: "tab", "aria-selected": String(name === view.metric),
                                       "data-metric": name }, name);
    button.onclick = () => { view.metric = name; render(); };
    return button;
  }));
  const series = view.metric === null ? [] : seriesOf(view.metric);
  $("chart-title").textContent = view.metric === null ? "waiting for the first logged values…"
    : `${view.metric} · ${view.kind}${view.kind === "summary" ? "" : ` · smoothing ${view.smoothing}`}`;
  const summary = view.kind === "summary";
  $("plot").hidden = summary;
  $("summary").hidden = !summary;
  if (summary) drawSummary(series); else drawChart(series);
  $("legend").replaceChildren(...series.map((s) => {
    const last = s.points.length ? s.points[s.points.length - 1][1] : null;
    return element("span", { style: `color:${s.colour}` },
                   `■ ${s.name} ${last === null ? "NaN" : last.toPrecision(4)}`);
  }));
  $("status").tBodies[0].replaceChildren(...view.runs.map((run) => {
    const row = element("tr", { "data-run": run.name });
    const status = run.status === "paused" && run.pausedFor === "nan"
      ? "paused: the loss is not finite" : run.status;
    row.innerHTML = `<td>${run.name}</td><td class="status-${run.status}">${status}</td>` +
      `<td>${run.step}</td><td>${run.epoch}/${run.epochs || "?"}</td>`;
    return row;
  }));
  const lines = view.runs.flatMap((run) => run.messages.map((m) =>
    view.runs.length === 1 ? m : `${run.name}: ${m}`));
  $("log").replaceChildren(...lines.slice(-200).map((line) => element("li", {}, line)));
}

async function poll() {
  for (const [k, run] of view.runs.entries()) {
    try {
      const answer = await (await fetch(`events?run=${k}&from=${run.offset}`)).json();
      if (answer.again) Object.assign(run, freshRun(run.name));
      for (const event of answer.events) apply(run, event);
      run.offset = answer.next;
    } catch (error) {
      run.messages.push(`the server did not answer: ${error.message}`);
    }
  }
  render();
  document.body.dataset.polls = String(Number(document.body.dataset.polls ?? 0) + 1);
  setTimeout(poll, POLL_MS);
}

function keys(event) {
  const names = [...$("metrics").children].map((b) => b.dataset.metric);
  const at = names.indexOf(view.metric);
  if (event.key === "ArrowRight" && names.length) view.metric = names[(at + 1) % names.length];
  else if (event.key === "ArrowLeft" && names.length) view.metric = names[(at - 1 + names.length) % names.length];
  else if (event.key === "ArrowDown" || event.key === "ArrowUp") {
    const step = event.key === "ArrowDown" ? 1 : KINDS.length - 1;
    view.kind = KINDS[(KINDS.indexOf(view.kind) + step) % KINDS.length];
    $("kind").value = view.kind;
  } else if (event.key === "+" || event.key === "-") {
    const next = view.smoothing + (event.key === "+" ? 0.1 : -0.1);
    view.smoothing = Math.round(Math.min(Math.max(next, 0), 0.99) * 100) / 100;
    $("smoothing").value = view.smoothing;
    $("smoothing-value").textContent = view.smoothing;
  } else return;
  event.preventDefault();
  render();
}

async function start() {
  const { runs } = await (await fetch("runs")).json();
  view.runs = runs.map(freshRun);
  $("runs-named").textContent = runs.join(", ");
  $("kind").onchange = () => { view.kind = $("kind").value; render(); };
  $("smoothing").oninput = () => {
    view.smoothing = Number($("smoothing").value);
    $("smoothing-value").textContent = view.smoothing;
    render();
  };
  document.addEventListener("keydown", keys);
  await poll();
  document.body.dataset.ready = "true";
}

start();
