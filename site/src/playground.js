// The playground page: an editor, an output pane, and the snippet run by py/playground.py.

import { runFile, startPyburn } from "./common.js";

const $ = (id) => document.getElementById(id);
const editor = $("editor");
const output = $("output");

async function loadExample() {
  editor.value = await (await fetch(`examples/${$("examples").value}`)).text();
}

function write(text, stream) {
  const span = document.createElement("span");
  span.className = stream;
  span.textContent = text;
  output.append(span);
  output.scrollTop = output.scrollHeight;
}

// Tab indents with four spaces; Ctrl+Enter (or Cmd+Enter) runs.
editor.addEventListener("keydown", (event) => {
  if (event.key === "Tab") {
    event.preventDefault();
    editor.setRangeText("    ", editor.selectionStart, editor.selectionEnd, "end");
  } else if (event.key === "Enter" && (event.ctrlKey || event.metaKey)) {
    event.preventDefault();
    $("run").click();
  }
});
$("examples").addEventListener("change", loadExample);
await loadExample();

const py = await startPyburn({ status: $("status"), notice: $("notice") });
py.on("stdout", (text) => write(text, "stdout"));
py.on("stderr", (text) => write(text, "stderr"));
await runFile(py, "py/playground.py");

/** What the page offers scripts (and the end-to-end tests): the last run's outcome. */
const page = { runs: 0, ok: null };
window.playground = page;

$("run").addEventListener("click", async () => {
  $("run").disabled = true;
  output.replaceChildren();
  $("took").textContent = "running…";
  const started = performance.now();
  try {
    page.ok = await py.call("run_snippet", editor.value);
  } catch (error) {
    write(`${error.message}\n`, "stderr");
    page.ok = false;
  }
  $("took").textContent = `${page.ok ? "done" : "failed"} in ` +
    `${((performance.now() - started) / 1000).toFixed(2)} s`;
  page.runs += 1;
  $("run").disabled = false;
});
$("run").disabled = false;
document.body.dataset.ready = "true";
