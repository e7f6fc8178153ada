// The draw-a-digit pages: a canvas to draw on, MNIST's preprocessing (digit.js), and the
// prediction of the model the site ships, computed by pyburn in the worker (py/mnist.py):
// on a device of the page (mnist.html), or on a `pyburn serve` process reached over the
// page's WebSocket (remote.html, whose #server field names it).

import { deviceSwitch, oneAtATime, runFile, startPyburn } from "./common.js";
import { mnistPixels, showPixels } from "./digit.js";

const $ = (id) => document.getElementById(id);
const DEVICE_NAMES = { wgpu: "WebGPU", wasm: "wasm", flex: "flex", cpu: "cpu (numpy)" };
const canvas = $("canvas");
const server = $("server"); // remote.html only
// Read back after every stroke (digit.js), so kept in memory the CPU reads fastest.
const pen = canvas.getContext("2d", { willReadFrequently: true });

function clear() {
  pen.fillStyle = "#000";
  pen.fillRect(0, 0, canvas.width, canvas.height);
  showPixels($("preview"), new Float32Array(784));
  $("answer").textContent = "–";
  $("timing").textContent = "";
  drawBars(null);
}

function drawBars(probabilities) {
  const bars = $("bars");
  bars.replaceChildren();
  const best = probabilities ? probabilities.indexOf(Math.max(...probabilities)) : -1;
  for (let digit = 0; digit < 10; digit++) {
    const p = probabilities ? probabilities[digit] : 0;
    const row = digit === best ? "best" : "";
    bars.insertAdjacentHTML("beforeend",
      `<span class="digit">${digit}</span>` +
      `<div class="track ${row}" data-digit="${digit}" data-p="${p}">` +
      `<div class="fill" style="width:${(100 * p).toFixed(1)}%"></div></div>` +
      `<span class="value">${(100 * p).toFixed(1)}%</span>`);
  }
}

// One prediction at a time; a drawing finished meanwhile is read when the current one ends.
const predictLatest = oneAtATime(predictOnce);
let py = null;
let device = null;

/** What the page offers scripts (and the end-to-end tests): predict, and the last result. */
const demo = {
  lastInput: null,
  lastResult: null,
  async predict() {
    if (!py) return null; // still loading: the drawing is read once pyburn is ready
    return predictLatest();
  },
};
window.mnistDemo = demo;

// Drawing: white strokes on black, as MNIST's digits are.
let drawing = false;
canvas.addEventListener("pointerdown", (event) => {
  drawing = true;
  canvas.setPointerCapture(event.pointerId);
  pen.strokeStyle = "#fff";
  pen.lineWidth = 20;
  pen.lineCap = pen.lineJoin = "round";
  pen.beginPath();
  pen.moveTo(event.offsetX, event.offsetY);
  pen.lineTo(event.offsetX + 0.01, event.offsetY);
  pen.stroke();
});
canvas.addEventListener("pointermove", (event) => {
  if (!drawing) return;
  pen.lineTo(event.offsetX, event.offsetY);
  pen.stroke();
});
canvas.addEventListener("pointerup", () => {
  drawing = false;
  demo.predict();
});
$("clear").addEventListener("click", clear);
clear();

async function predictOnce() {
  const image = mnistPixels(canvas);
  if (!image) return clear();
  showPixels($("preview"), image);
  const wanted = device();
  let result;
  try {
    result = await py.call("predict", image, wanted);
  } catch (error) {
    if (server) return unreachable(error);
    if (wanted !== "wgpu") throw error;
    // WebGPU failed (the device was lost): say so and go on with the CPU device.
    py.dispatchEvent(new CustomEvent("gpu-lost", { detail: error.message.trim().split("\n").at(-1) }));
    result = await py.call("predict", image, device());
  }
  demo.lastInput = image;
  demo.lastResult = result;
  const p = result.probabilities;
  const where = DEVICE_NAMES[result.device] ??
    result.device.replace("remote+", "pyburn serve at ");
  $("answer").textContent = p.indexOf(Math.max(...p));
  $("timing").textContent = `${result.ms.toFixed(1)} ms on ${where}`;
  if (server) $("notice").hidden = true; // the server answers again
  drawBars(p);
}

/** The remote page's answer when its server cannot be used: what went wrong, and the fix. */
function unreachable(error) {
  demo.lastResult = { error: error.message };
  const notice = $("notice");
  notice.textContent = `The server at ${server.value} could not be used ` +
    `(${error.message.trim().split("\n").at(-1)}). Is \`${$("command").textContent}\` ` +
    "running?";
  notice.hidden = false;
  drawBars(null);
}

if (server) {
  $("origin").textContent = location.origin;
  server.value = new URLSearchParams(location.search).get("server") ?? "ws://127.0.0.1:3000";
}
const started = await startPyburn({ status: $("status"), notice: $("notice") });
device = server ? () => `remote+${server.value.trim()}` : deviceSwitch($("devices"), started);
await runFile(started, "py/mnist.py");
const about = await started.call("load", new URL("data/mnist.safetensors", location.href).href);
const accuracy = about.test_accuracy ? `, ${(100 * about.test_accuracy).toFixed(2)}% on ` +
  `MNIST's ${about.test_images} test images` : "";
$("model").textContent = `model: ${about.model.toUpperCase()}${accuracy}`;
py = started;
// the first prediction's work (the model, its kernels) now, so that the first drawing after
// "ready" answers at once; a failure shows at that drawing instead
await started.call("warm", device()).catch(() => {});
(server ?? $("devices")).addEventListener("change", () => demo.predict());
await demo.predict(); // a drawing made while the page loaded
document.body.dataset.ready = "true";
