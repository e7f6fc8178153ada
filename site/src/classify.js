// The classify page: a canvas to draw a shape on (or a generated shape painted onto it), the
// canvas averaged down to the model's size, and the prediction of the zoo classifier the site
// trained at build time, computed by pyburn in the worker (py/classify.py).

import { deviceSwitch, oneAtATime, runFile, startPyburn } from "./common.js";

const $ = (id) => document.getElementById(id);
const DEVICE_NAMES = { wgpu: "WebGPU", wasm: "wasm", flex: "flex", cpu: "cpu (numpy)" };
const canvas = $("canvas");
// Read back after every stroke, so kept in memory the CPU reads fastest.
const pen = canvas.getContext("2d", { willReadFrequently: true });
// the pen's width on the canvas: about 2.5 pixels of the model's image, as the generated
// outlines are 1.6 to 3.2
const PEN_WIDTH = 20;

let py = null;
let device = null;
let about = null; // the model's metadata (py/classify.py's load)

/**
 * The canvas as the model's input: each `side`×`side` block of canvas pixels averaged into
 * one pixel, as bytes, one plane per colour (R, G, B), rows top down.
 */
function modelPixels(side) {
  const block = canvas.width / side;
  const rgba = pen.getImageData(0, 0, canvas.width, canvas.height).data;
  const pixels = new Uint8Array(3 * side * side);
  for (let y = 0; y < side; y++) {
    for (let x = 0; x < side; x++) {
      const sums = [0, 0, 0];
      for (let dy = 0; dy < block; dy++) {
        const row = (y * block + dy) * canvas.width;
        for (let dx = 0; dx < block; dx++) {
          const at = 4 * (row + x * block + dx);
          for (let c = 0; c < 3; c++) sums[c] += rgba[at + c];
        }
      }
      for (let c = 0; c < 3; c++) pixels[(c * side + y) * side + x] = Math.round(sums[c] / block ** 2);
    }
  }
  return pixels;
}

/** Paints `pixels` (as `modelPixels` gives them) onto `target`, one block per pixel. */
function paint(target, pixels, side) {
  const block = target.width / side;
  const context = target.getContext("2d");
  for (let y = 0; y < side; y++) {
    for (let x = 0; x < side; x++) {
      const [r, g, b] = [0, 1, 2].map((c) => pixels[(c * side + y) * side + x]);
      context.fillStyle = `rgb(${r},${g},${b})`;
      context.fillRect(x * block, y * block, block, block);
    }
  }
}

function drawBars(probabilities) {
  const bars = $("bars");
  bars.replaceChildren();
  const labels = about ? about.labels : [];
  const best = probabilities ? probabilities.indexOf(Math.max(...probabilities)) : -1;
  labels.forEach((label, i) => {
    const p = probabilities ? probabilities[i] : 0;
    bars.insertAdjacentHTML("beforeend",
      `<span class="digit">${label}</span>` +
      `<div class="track ${i === best ? "best" : ""}" data-label="${label}" data-p="${p}">` +
      `<div class="fill" style="width:${(100 * p).toFixed(1)}%"></div></div>` +
      `<span class="value">${(100 * p).toFixed(1)}%</span>`);
  });
}

function clear() {
  pen.fillStyle = $("background").value;
  pen.fillRect(0, 0, canvas.width, canvas.height);
  $("drawn").textContent = "";
  $("answer").textContent = "–";
  $("timing").textContent = "";
  drawBars(null);
}

// One prediction at a time; a drawing finished meanwhile is read when the current one ends.
const predictLatest = oneAtATime(predictOnce);

/** What the page offers scripts (and the end-to-end tests). */
const demo = {
  lastInput: null,
  lastResult: null,
  lastSample: null,
  async predict() {
    if (!py) return null; // still loading: the drawing is read once pyburn is ready
    return predictLatest();
  },
  /** Paints generated shape number `index` (a random one when undefined) and reads it. */
  async sample(index) {
    const chosen = index ?? Math.floor(Math.random() * 2 ** 30);
    const shape = await py.call("sample", chosen);
    paint(canvas, shape.pixels, about.image_size);
    $("drawn").textContent = `a generated ${shape.label} (number ${shape.index})`;
    demo.lastSample = { index: shape.index, label: shape.label };
    return demo.predict();
  },
};
window.classifyDemo = demo;

// Drawing: strokes of the pen's colour on the background.
let drawing = false;
canvas.addEventListener("pointerdown", (event) => {
  drawing = true;
  canvas.setPointerCapture(event.pointerId);
  pen.strokeStyle = $("pen").value;
  pen.lineWidth = PEN_WIDTH;
  pen.lineCap = pen.lineJoin = "round";
  pen.beginPath();
  pen.moveTo(event.offsetX, event.offsetY);
  pen.lineTo(event.offsetX + 0.01, event.offsetY);
  pen.stroke();
  $("drawn").textContent = "";
  demo.lastSample = null;
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
$("background").addEventListener("change", clear);
clear();

async function predictOnce() {
  const pixels = modelPixels(about.image_size);
  paint($("preview"), pixels, about.image_size);
  const wanted = device();
  let result;
  try {
    result = await py.call("predict", pixels, wanted);
  } catch (error) {
    if (wanted !== "wgpu") throw error;
    // WebGPU failed (the device was lost): say so and go on with the CPU device.
    py.dispatchEvent(new CustomEvent("gpu-lost", { detail: error.message.trim().split("\n").at(-1) }));
    result = await py.call("predict", pixels, device());
  }
  demo.lastInput = pixels;
  demo.lastResult = result;
  const p = result.probabilities;
  $("answer").textContent = about.labels[p.indexOf(Math.max(...p))];
  $("timing").textContent = `${result.ms.toFixed(1)} ms on ${DEVICE_NAMES[result.device]}`;
  drawBars(p);
}

/** What the page says about the model, its training and its preprocessing. */
function describe(model) {
  const side = model.image_size;
  const block = canvas.width / side;
  const options = Object.entries(model.config).map(([k, v]) => `, ${k}=${v}`).join("");
  $("model").textContent = `model: ${model.model} of pyburn's zoo (${model.description}), ` +
    `here create("${model.model}", weights=…${options}): ` +
    `${model.parameters.toLocaleString("en")} parameters. Its weights were trained when this site was ` +
    `built, from random ones, on ${model.train_images.toLocaleString("en")} generated ` +
    `${side}×${side} shapes (${model.data}, ${model.steps} steps on the cpu device): ` +
    `${(100 * model.test_accuracy).toFixed(1)}% right on ` +
    `${model.test_images.toLocaleString("en")} held-out generated shapes.`;
  const { mean, std, resize, crop } = model.preprocessing;
  const round = (values) => values.map((v) => v.toFixed(3)).join(", ");
  $("preprocessing").textContent = `preprocessing: the canvas averaged over ${block}×${block} ` +
    `blocks to ${side}×${side} (the registry entry's resize to ${resize} and crop to ${crop} ` +
    `are for photos, not used here), scaled to [0, 1], then per channel minus (${round(mean)}) ` +
    `and divided by (${round(std)}): the ${model.model} registry entry's.`;
}

const started = await startPyburn({ status: $("status"), notice: $("notice") });
device = deviceSwitch($("devices"), started);
await runFile(started, "py/classify.py");
about = await started.call("load", new URL("data/shapes-resnet18.safetensors", location.href).href);
describe(about);
drawBars(null);
py = started;
// the first prediction's work (the model, its kernels) now; a failure shows at the first one
await started.call("warm", device()).catch(() => {});
$("devices").addEventListener("change", () => demo.predict());
$("random").addEventListener("click", () => demo.sample());
await demo.sample(0); // a first shape to look at
document.body.dataset.ready = "true";
