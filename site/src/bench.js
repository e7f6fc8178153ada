// The benchmark page: pyburn's benchmark suite runs in the worker (py/bench.py) on the
// devices and families the visitor picks. Each benchmark's records come as it finishes and
// become rows of the table, grouped by case; at the end the records file (the desktop's
// format, written by pyburn.bench.record) can be downloaded, and the board's charts of the
// run (pyburn.bench.board's page) show in a frame.

import { runFile, startPyburn } from "./common.js";

const $ = (id) => document.getElementById(id);
/** The families ticked at first: small and quick (about 20 s with WebGPU on SwiftShader,
 * wasm and flex at the default timing); flex's matmul has a plain-Python peer. */
const QUICK = ["binary", "softmax", "launch_overhead", "matmul"];
/** The device the others are compared with when it ran. */
const REFERENCE = "flex";

/** What the page offers scripts (and the end-to-end tests). */
const page = { state: "idle", records: [], summary: null };
window.benchDemo = page;

const py = await startPyburn({ status: $("status"), notice: $("notice") });
await runFile(py, "py/bench.py");

/** Why WebGPU cannot be ticked here, or null. */
const noGpu = !py.gpu.available ? py.gpu.reason
  : !py.info.jspi ? "this browser cannot wait for a GPU read inside Python (no JavaScript " +
    "Promise Integration), and the suite reads synchronously"
  : null;
const gpuBox = $("devices").querySelector('[value="wgpu"]');
gpuBox.closest("label").title = noGpu ?? "";
const offered = [];
for (const label of $("devices").querySelectorAll("label[data-device]")) {
  const device = label.dataset.device;
  label.hidden = !py.info.devices.includes(device);
  label.querySelector("input").checked = !label.hidden && !(device === "wgpu" && noGpu);
  if (!label.hidden) offered.push(device);
}
py.on("device-change", () => setState(page.state));

for (const family of await py.call("families", offered)) {
  const input = Object.assign(document.createElement("input"),
    { type: "checkbox", name: "family", value: family.family,
      checked: QUICK.includes(family.family) });
  const only = family.devices.length === 1 ? ` (${family.devices[0]} only)` : "";
  const label = document.createElement("label");
  label.title = family.about;
  label.append(input, ` ${family.family}`,
    Object.assign(document.createElement("span"), { className: "muted", textContent: only }));
  $("family-list").append(label);
}

const ticked = (name) =>
  [...document.querySelectorAll(`input[name="${name}"]:checked:not(:disabled)`)]
    .map((input) => input.value);
const number = (x) => x.toLocaleString("en", { maximumSignificantDigits: 3 });

function setState(state) {
  page.state = state;
  $("state").textContent = state;
  const running = state === "running" || state === "stopping";
  for (const input of document.querySelectorAll("form input, form select")) {
    input.disabled = running;
  }
  if (noGpu || !py.gpu.available) gpuBox.disabled = true;  // (lost since the page started)
  $("start").disabled = running;
  $("stop").disabled = state !== "running";
  $("download").disabled = running || !page.records.length;
}

/** The device the others are compared with: `REFERENCE` when it ran, else the run's last. */
function referenceDevice() {
  const devices = [...new Set(page.records.map((r) => r.device))];
  return devices.includes(REFERENCE) || !devices.length ? REFERENCE : devices.at(-1);
}

/** The speed of `record` over that of its case on the reference device ("–" when that was
 * not measured): the ratio of the medians. */
function versus(record) {
  const family = (r) => r.benchmark.split(".")[0];
  const other = page.records.find((r) => r.device === referenceDevice() &&
    r.case === record.case && family(r) === family(record));
  if (!other) return "–";
  const ratio = record.higher_is_better ? record.median / other.median
    : other.median / record.median;
  return `${number(ratio)}×`;
}

/** The peers measured in the same run, as "1.5× python (zip loops)"; "–" when none was. */
function peers(record) {
  // (Python's None arrives as undefined)
  const measured = record.peers.filter((p) => typeof p.ratio === "number");
  return measured.length ? measured.map((p) => `${number(p.ratio)}× ${p.peer}`).join(", ")
    : "–";
}

/** A row of the table for `record` (the `index`th of the run), after its case's others. */
function addRow(record, index) {
  const key = `${record.benchmark.split(".")[0]}: ${record.case}`;
  const row = document.createElement("tr");
  row.dataset.key = key;
  row.dataset.device = record.device;
  row.dataset.index = index;
  for (const text of [key, record.device, `${number(record.median)} ${record.unit}`,
    `${number(record.min)}–${number(record.max)}`, peers(record), ""]) {
    row.insertCell().textContent = text;
  }
  row.cells[1].title = record.adapter ?? "";
  row.cells[4].title = record.peers.filter((p) => typeof p.ratio !== "number")
    .map((p) => `${p.peer}: not here`).join(", ");
  const same = [...$("results").tBodies[0].rows].filter((r) => r.dataset.key === key);
  if (same.length) same.at(-1).after(row);
  else $("results").tBodies[0].append(row);
}

function drawVersus() {
  for (const row of $("results").tBodies[0].rows) {
    row.cells[5].textContent = versus(page.records[Number(row.dataset.index)]);
  }
  $("versus").textContent = `speed vs ${referenceDevice()}`;
}

py.on("bench-progress", ({ benchmark, done, total }) => {
  const [family, device] = benchmark.split(".");
  $("progress").max = total;
  $("progress").value = done;
  $("running").textContent = `${family} on ${device} (${done + 1} of ${total})…`;
});
py.on("bench-records", (records) => {
  for (const record of records) addRow(record, page.records.push(record) - 1);
  drawVersus();
  $("count").textContent = page.records.length;
});

$("board").addEventListener("load", () => {
  const shown = $("board").contentDocument?.documentElement;
  if (shown) $("board").style.height = `${shown.scrollHeight}px`;
});

$("start").addEventListener("click", async () => {
  page.records = [];
  page.summary = null;
  $("results").tBodies[0].replaceChildren();
  $("skipped").replaceChildren();
  $("board").srcdoc = "";
  $("count").textContent = "0";
  const devices = ticked("device");
  const families = ticked("family");
  setState("running");
  const started = performance.now();
  let failure = null;
  try {
    page.summary = await py.call("run", families, devices, $("size").value,
      Number($("repeat").value), Number($("min-time").value), navigator.userAgent,
      navigator.platform, navigator.hardwareConcurrency ?? 1);
  } catch (error) {
    failure = error;  // the records of the benchmarks before it are kept
  }
  $("elapsed").textContent = `${((performance.now() - started) / 1000).toFixed(1)} s`;
  $("running").textContent = `${page.records.length} records`;
  if (page.records.length) $("board").srcdoc = await py.call("board");
  for (const { benchmark, reason } of page.summary?.skipped ?? []) {
    $("skipped").append(Object.assign(document.createElement("li"),
      { textContent: `${benchmark} not measured: ${reason}` }));
  }
  if (failure) {
    $("status").textContent = `the run failed: ${failure.message}`;
    $("status").className = "status error";
    setState("failed");
  } else if (page.summary.stopped) {
    setState("stopped");
  } else {
    $("progress").value = $("progress").max;
    setState("done");
  }
});
$("stop").addEventListener("click", () => {
  setState("stopping");
  py.call("stop");
});
$("download").addEventListener("click", async () => {
  const file = await py.call("records_file");
  const link = document.createElement("a");
  link.href = URL.createObjectURL(new Blob([file.text], { type: "application/x-ndjson" }));
  link.download = file.name;
  link.click();
  URL.revokeObjectURL(link.href);
});

setState("idle");
document.body.dataset.ready = "true";
