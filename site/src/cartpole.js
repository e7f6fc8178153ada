// The CartPole page: PPO learns to balance a pole in the worker (py/cartpole.py); the page
// draws each training episode's return as it ends, and animates the newest policy's cart.
// The worker sends the run's events in the format of events.jsonl (folded by run-events.js,
// the dashboard's own) and, now and then, the states of an episode the newest policy played
// greedily ("frames"), which the page plays back at the environment's own pace.

import { Chart } from "./chart.js";
import { deviceSwitch, runFile, startPyburn } from "./common.js";
import { apply, freshRun } from "./run-events.js";

const $ = (id) => document.getElementById(id);
// CartPole's track (x within ±2.4 m), its pole (1 m) and its time step (20 ms)
const TRACK = 2.4;
const POLE = 1.0;
const TICK_MS = 20;
const MEAN_OVER = 20;

const chart = new Chart($("chart"));
chart.define("return", { color: "#1c7ed6", range: [0, 500], axis: "left", dots: true });
chart.define("mean", { color: "#d9480f", range: [0, 500] });
chart.draw();

/** What the page offers scripts (and the end-to-end tests). */
const page = { state: "idle", run: freshRun("browser"), returns: [], frames: [], shown: 0,
               summary: null };
window.cartpoleDemo = page;

/** Draws the cart at position `x` (m) with its pole at angle `theta` (radians from upright,
 * positive leaning right). */
function drawCart([x, theta]) {
  const canvas = $("cart");
  const pen = canvas.getContext("2d");
  const scale = canvas.width / (2 * TRACK * 1.1);
  const ground = canvas.height * 0.78;
  const cx = canvas.width / 2 + x * scale;
  pen.clearRect(0, 0, canvas.width, canvas.height);
  pen.strokeStyle = "#adb5bd";
  pen.lineWidth = 2;
  pen.beginPath();
  pen.moveTo(canvas.width / 2 - TRACK * scale, ground);
  pen.lineTo(canvas.width / 2 + TRACK * scale, ground);
  pen.stroke();
  const [width, height] = [0.5 * scale, 0.3 * scale];
  pen.fillStyle = "#343a40";
  pen.fillRect(cx - width / 2, ground - height, width, height);
  pen.strokeStyle = "#d9480f";
  pen.lineWidth = 0.1 * scale;
  pen.lineCap = "round";
  pen.beginPath();
  pen.moveTo(cx, ground - height);
  pen.lineTo(cx + Math.sin(theta) * POLE * scale, ground - height - Math.cos(theta) * POLE * scale);
  pen.stroke();
}

/** Plays the newest greedy episode, frame by frame, at 20 ms a step; then again. */
let frame = 0;
let last = 0;
function play(now) {
  if (page.frames.length && now - last >= TICK_MS) {
    last = now;
    frame = (frame + 1) % page.frames.length;
    drawCart(page.frames[frame]);
  }
  requestAnimationFrame(play);
}
drawCart([0, 0]);
requestAnimationFrame(play);

const py = await startPyburn({ status: $("status"), notice: $("notice") });
const device = deviceSwitch($("devices"), py);
await runFile(py, "py/cartpole.py");

function setState(state) {
  page.state = state;
  $("state").textContent = state;
  const running = state === "training" || state === "stopping";
  $("start").disabled = running;
  $("stop").disabled = state !== "training";
  for (const input of $("devices").querySelectorAll("input, select")) input.disabled = running;
  if (!running && !py.gpu.available) $("devices").querySelector('[value="wgpu"]').disabled = true;
}

py.on("run-event", (event) => {
  apply(page.run, event);
  if (event.event !== "metrics") return;
  const { episode_return: value, steps_per_s: speed } = event.metrics;
  page.returns.push(value);
  const recent = page.returns.slice(-MEAN_OVER);
  const mean = recent.reduce((a, b) => a + b, 0) / recent.length;
  chart.add("return", event.step, value);
  chart.add("mean", event.step, mean);
  chart.draw();
  $("step").textContent = event.step.toLocaleString("en");
  $("episodes").textContent = page.returns.length;
  $("mean").textContent = mean.toFixed(1);
  if (speed) $("speed").textContent = `${Math.round(speed).toLocaleString("en")} steps/s`;
});
py.on("frames", ({ states, step }) => {
  page.frames = states;
  page.shown = states.length;
  frame = 0;
  $("shown").textContent = `${states.length} steps (the policy after ${step.toLocaleString("en")})`;
});

$("start").addEventListener("click", async () => {
  page.run = freshRun("browser");
  page.returns = [];
  page.summary = null;
  chart.clear();
  setState("training");
  try {
    page.summary = await py.call("train", device(), Number($("steps").value));
    setState(page.summary.stopped ? "stopped" : "done");
  } catch (error) {
    setState("failed");
    $("status").textContent = `training failed: ${error.message}`;
    $("status").className = "status error";
  }
});
$("stop").addEventListener("click", () => {
  setState("stopping");
  py.call("stop");
});

setState("idle");
document.body.dataset.ready = "true";
