// The train page: starts, pauses, resumes and stops training in the worker (py/train.py),
// draws the loss and accuracy as they come, and saves the weights.

import { Chart } from "./chart.js";
import { deviceSwitch, runFile, startPyburn } from "./common.js";

const $ = (id) => document.getElementById(id);
const chart = new Chart($("chart"));
chart.define("loss", { color: "#d9480f", axis: "left" });
chart.define("accuracy", { color: "#1c7ed6", range: [0, 1], axis: "right" });
chart.define("test", { color: "#2b8a3e", range: [0, 1], dots: true });
chart.draw();

const py = await startPyburn({ status: $("status"), notice: $("notice") });
const device = deviceSwitch($("devices"), py);
await runFile(py, "py/train.py");
await py.call("load", new URL("data/mnist-subset.safetensors", location.href).href);

/** What the page offers scripts (and the end-to-end tests). */
const page = { state: "idle", progress: [], epochs: [], summary: null };
window.trainDemo = page;

function setState(state) {
  page.state = state;
  $("state").textContent = state;
  const running = ["training", "pausing", "paused"].includes(state);
  $("start").disabled = running;
  $("pause").textContent = state === "paused" ? "Resume" : "Pause";
  $("pause").disabled = !running || state === "pausing";
  $("stop").disabled = !running;
  $("download").disabled = running || page.summary === null || page.summary.steps === 0;
  for (const input of $("devices").querySelectorAll("input, select")) input.disabled = running;
  if (!running && !py.gpu.available) $("devices").querySelector('[value="wgpu"]').disabled = true;
}

py.on("progress", (p) => {
  page.progress.push(p);
  chart.add("loss", p.step, p.loss);
  chart.add("accuracy", p.step, p.accuracy);
  chart.draw();
  $("epoch").textContent = p.epoch;
  $("step").textContent = p.step;
  $("loss").textContent = p.loss.toFixed(4);
  $("speed").textContent = `${Math.round(p.samples_per_s).toLocaleString("en")} images/s`;
});
py.on("epoch", (e) => {
  page.epochs.push(e);
  chart.add("test", e.step, e.test_accuracy);
  chart.draw();
  $("test").textContent = `${(100 * e.test_accuracy).toFixed(1)}% after epoch ${e.epoch}`;
});

$("start").addEventListener("click", async () => {
  page.progress = [];
  page.epochs = [];
  page.summary = null;
  chart.clear();
  setState("training");
  try {
    page.summary = await py.call("train", device(), Number($("hidden").value),
      Number($("epochs").value));
    setState(page.summary.stopped ? "stopped" : "done");
  } catch (error) {
    setState("failed");
    $("status").textContent = `training failed: ${error.message}`;
    $("status").className = "status error";
  }
});
// The loop holds after the batch in flight, and says so with a "state" event.
py.on("state", (state) => page.state !== "idle" && setState(state));
$("pause").addEventListener("click", async () => {
  if (page.state === "training") {
    setState("pausing");
    await py.call("pause");
  } else {
    await py.call("resume");
  }
});
$("stop").addEventListener("click", () => py.call("stop"));
$("download").addEventListener("click", async () => {
  const bytes = await py.call("weights");
  const link = document.createElement("a");
  link.href = URL.createObjectURL(new Blob([bytes], { type: "application/octet-stream" }));
  link.download = "mnist-mlp.safetensors";
  link.click();
  URL.revokeObjectURL(link.href);
});

setState("idle");
document.body.dataset.ready = "true";
