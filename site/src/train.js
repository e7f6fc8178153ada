// The train page: starts, pauses, resumes and stops training in the worker (py/train.py),
// draws the loss and accuracy as they come, and saves the weights. The worker sends the
// run's events in the format of a Learner's events.jsonl; the page folds them as
// `pyburn dash` does (run-events.js, the dashboard's own) and draws the folded curves.

import { Chart } from "./chart.js";
import { deviceSwitch, runFile, startPyburn } from "./common.js";
import { apply, freshRun } from "./run-events.js";

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

/** What the page offers scripts (and the end-to-end tests): the run's state as folded from
 * its events, and each batch's and each epoch's values. */
const page = { state: "idle", run: freshRun("browser"), progress: [], epochs: [], summary: null };
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

/** The chart's series from the folded curves. */
function drawRun() {
  const curves = page.run.curves;
  chart.set("loss", curves.loss?.train ?? []);
  chart.set("accuracy", curves.accuracy?.train ?? []);
  chart.set("test", curves.accuracy?.valid ?? []);
  chart.draw();
}

py.on("run-event", (event) => {
  apply(page.run, event);
  if (event.event === "metrics" && event.split === "train") {
    const { loss, accuracy, samples_per_s: speed } = event.metrics;
    page.progress.push({ step: event.step, epoch: event.epoch, loss, accuracy });
    $("epoch").textContent = event.epoch;
    $("step").textContent = event.step;
    $("loss").textContent = loss.toFixed(4);
    $("speed").textContent = `${Math.round(speed).toLocaleString("en")} images/s`;
  } else if (event.event === "metrics") {
    const tested = event.metrics.accuracy;
    page.epochs.push({ epoch: event.epoch, step: event.step, test_accuracy: tested });
    $("test").textContent = `${(100 * tested).toFixed(1)}% after epoch ${event.epoch}`;
  } else if (page.state !== "idle" && ["paused", "resumed"].includes(event.state)) {
    // the loop holds after the batch in flight, and says so
    setState(event.state === "paused" ? "paused" : "training");
  }
  drawRun();
});

$("start").addEventListener("click", async () => {
  page.progress = [];
  page.epochs = [];
  page.run = freshRun("browser");
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
