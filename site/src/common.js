// What every page of the site shares: starting pyburn with its progress shown, the notice
// when WebGPU is missing or lost, and the device switch.

import { loadPyburn } from "./web/pyburn.js";

/** Fetches one of the site's Python files and runs it in the session. */
export async function runFile(py, path) {
  const response = await fetch(path);
  if (!response.ok) throw new Error(`${path}: HTTP ${response.status}`);
  await py.run(await response.text());
}

/**
 * Starts pyburn, showing each loading stage in `status`; when WebGPU is missing (or lost
 * later) `notice` says so and that pyburn runs on flex. Sets `document.body.dataset.ready`
 * once the page may be used (the end-to-end tests wait for it).
 */
export async function startPyburn({ status, notice }) {
  const say = (text, kind = "") => {
    status.textContent = text;
    status.className = `status ${kind}`;
  };
  const started = performance.now();
  let py;
  try {
    py = await loadPyburn({
      baseURL: "./",
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
  if (!py.gpu.available) {
    showNotice(notice, `WebGPU is not available here: ${py.gpu.reason}. pyburn runs on flex, ` +
      "its pure-Python device, instead: the same results, more slowly.");
  }
  py.on("gpu-lost", (message) => {
    showNotice(notice, `${message}. pyburn switched to flex, its pure-Python device.`);
    py.gpu.available = false;
    py.dispatchEvent(new CustomEvent("device-change", { detail: "flex" }));
  });
  return py;
}

function showNotice(notice, text) {
  notice.textContent = text;
  notice.hidden = false;
}

/**
 * The device switch: radio inputs named "device" inside `form` (WebGPU, flex, and cpu, shown
 * only where the site serves numpy). WebGPU is disabled when missing; the first choice comes
 * from `?device=` in the URL, else WebGPU where there is one. Returns a function giving the
 * current choice ("wgpu", "flex" or "cpu").
 */
export function deviceSwitch(form, py) {
  for (const label of form.querySelectorAll("label[data-device]")) {
    label.hidden = !py.info.devices.includes(label.dataset.device);
  }
  const inputs = [...form.querySelectorAll('input[name="device"]')];
  const gpuInput = inputs.find((i) => i.value === "wgpu");
  const fallBack = () => {
    gpuInput.disabled = true;
    inputs.find((i) => i.value === "flex").checked = true;
  };
  const wanted = new URLSearchParams(location.search).get("device");
  const first = wanted ?? (py.gpu.available ? "wgpu" : "flex");
  for (const input of inputs) input.checked = input.value === first;
  if (!py.gpu.available) fallBack();
  py.on("device-change", fallBack);
  return () => inputs.find((i) => i.checked).value;
}
