// The default page of `pyburn web build`: starts the app, shows what it prints and the
// functions it offers, and runs its `main()` where it has one, showing what it returns.
// `window.py` is the session, for the console. `body[data-ready]` marks the end of the start
// (and of main), `body[data-error]` a failure.

import { loadPyburn } from "./pyburn.js";

const status = document.getElementById("status");
const output = document.getElementById("output");

function show(text, kind) {
  const span = document.createElement("span");
  span.className = kind;
  span.textContent = text;
  output.append(span);
}

/** A returned value as text: typed arrays with their shape, the rest as JSON. */
function describe(value) {
  if (ArrayBuffer.isView(value)) {
    const shape = value.shape ? ` shape [${value.shape}]` : "";
    return `${value.constructor.name}(${value.length})${shape} [${Array.from(value.slice(0, 10)).join(", ")}${value.length > 10 ? ", …" : ""}]`;
  }
  return JSON.stringify(value, (_, v) => (typeof v === "bigint" ? `${v}` : v));
}

try {
  const py = await loadPyburn({
    onEvent: (name, data) => {
      if (name === "status") status.textContent = data.message;
      else if (name === "stdout" || name === "stderr") show(data, name);
    },
  });
  window.py = py;
  const exports = py.app?.exports ?? [];
  for (const name of exports) {
    const item = document.createElement("li");
    item.innerHTML = `<code></code>`;
    item.firstChild.textContent = name;
    document.getElementById("exports").append(item);
  }
  const device = py.info.devices[0];
  if (exports.includes("main")) {
    status.textContent = `running main() on ${device}`;
    const result = await py.call("main");
    if (result !== undefined && result !== null) show(`main() returned ${describe(result)}\n`, "result");
  }
  status.textContent = `ready in ${py.info.seconds.toFixed(1)} s, on ${device}`;
} catch (error) {
  status.textContent = `failed: ${error.message.trim().split("\n").at(-1)}`;
  show(`${error.message}\n`, "stderr");
  document.body.dataset.error = "";
}
document.body.dataset.ready = "";
