// What every page of the site shares: starting pyburn with its progress shown, the notice
// when WebGPU is missing or lost, and the device switch.

import { loadPyburn } from "./web/pyburn.js";

/**
 * `work` (an async function) made to run one call at a time: a call made while one runs asks
 * for one more run once that ends (a drawing finished meanwhile is read then) and waits for it.
 */
export function oneAtATime(work) {
  let running = null;
  let again = false;
  return async () => {
    if (running) {
      again = true;
      return running;
    }
    running = (async () => {
      do {
        again = false;
        await work();
      } while (again);
    })();
    try {
      return await running;
    } finally {
      running = null;
    }
  };
}

/** Fetches one of the site's Python files and runs it in the session. */
export async function runFile(py, path) {
  const response = await fetch(path);
  if (!response.ok) throw new Error(`${path}: HTTP ${response.status}`);
  await py.run(await response.text());
}

/**
 * Starts pyburn, showing each loading stage in `status`; when WebGPU is missing (or lost
 * later) `notice` says so and which CPU device pyburn runs on instead. Sets `document.body.dataset.ready`
 * once the page may be used (the end-to-end tests wait for it). A page opened with
 * `?device=wgpu` compiles the GPU kernels the site recorded while Python starts, one opened
 * with another device does not, and otherwise the loader decides (on a hardware adapter).
 */
export async function startPyburn({ status, notice }) {
  const say = (text, kind = "") => {
    status.textContent = text;
    status.className = `status ${kind}`;
  };
  const started = performance.now();
  const wanted = new URLSearchParams(location.search).get("device");
  let py;
  try {
    py = await loadPyburn({
      baseURL: "./",
      precompile: wanted === null ? undefined : wanted === "wgpu",
      onEvent: (name, data) => name === "status" && say(`${data.message}…`),
    });
  } catch (error) {
    say(`pyburn could not start: ${error.message}`, "error");
    throw error;
  }
  // For the browser's console (and the end-to-end tests): `await pyburn.run("...")`.
  window.pyburn = py;
  const seconds = ((performance.now() - started) / 1000).toFixed(1);
  const gpu = py.gpu.available ? `WebGPU on ${py.gpu.adapter.name}` : "no WebGPU";
  say(`pyburn ${py.info.pyburn}, Python ${py.info.python}, ${gpu}; started in ${seconds} s`,
    "ready");
  const cpu = cpuDevice(py);
  if (!py.gpu.available) {
    showNotice(notice, `WebGPU is not available here: ${py.gpu.reason}. pyburn runs on ` +
      `${CPU_DEVICES[cpu]} instead: the same results.`);
  }
  py.on("gpu-lost", (message) => {
    showNotice(notice, `${message}. pyburn switched to ${CPU_DEVICES[cpu]}.`);
    py.gpu.available = false;
    py.dispatchEvent(new CustomEvent("device-change", { detail: cpu }));
  });
  return py;
}

/** What each CPU device of the page is, for the notices. */
const CPU_DEVICES = {
  wasm: "wasm (its WebAssembly SIMD kernels)",
  cpu: "cpu (numpy compiled to WebAssembly)",
  flex: "flex (its pure-Python device, more slowly)",
};

/** The fastest CPU device pyburn offers here: wasm where the engine has WebAssembly SIMD. */
function cpuDevice(py) {
  return py.info.devices.find((d) => d in CPU_DEVICES) ?? "flex";
}

function showNotice(notice, text) {
  notice.textContent = text;
  notice.hidden = false;
}

/**
 * The device switch: radio inputs named "device" inside `form` (WebGPU, wasm where the
 * engine has WebAssembly SIMD, flex, and cpu where the site serves numpy). WebGPU is
 * disabled when missing; the first choice comes from `?device=` in the URL, else pyburn's
 * default device (a hardware WebGPU adapter, else wasm, else a fallback adapter). Returns a
 * function giving the current choice ("wgpu", "wasm", "flex" or "cpu").
 */
export function deviceSwitch(form, py) {
  for (const label of form.querySelectorAll("label[data-device]")) {
    label.hidden = !py.info.devices.includes(label.dataset.device);
  }
  const inputs = [...form.querySelectorAll('input[name="device"]')];
  const gpuInput = inputs.find((i) => i.value === "wgpu");
  const fallBack = () => {
    gpuInput.disabled = true;
    inputs.find((i) => i.value === cpuDevice(py)).checked = true;
  };
  const wanted = new URLSearchParams(location.search).get("device");
  const offered = inputs.map((i) => i.value);
  const first = wanted ?? py.info.devices.find((d) => offered.includes(d)) ?? "flex";
  for (const input of inputs) input.checked = input.value === first;
  if (!py.gpu.available) fallBack();
  py.on("device-change", fallBack);
  return () => inputs.find((i) => i.checked).value;
}
