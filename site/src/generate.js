// The generate page: a prompt, a way of choosing each token, and the continuation by the small
// Llama the site trained at build time, made in the worker (py/generate.py), which sends each
// token as a "token" event the moment it is chosen; the page writes it out as it comes.

import { deviceSwitch, runFile, startPyburn } from "./common.js";

const $ = (id) => document.getElementById(id);
const DEVICE_NAMES = { wgpu: "WebGPU", wasm: "wasm", flex: "flex", cpu: "cpu (numpy)" };

/** What the page offers scripts (and the end-to-end tests). */
const page = { state: "loading", tokens: [], result: null, about: null };
window.generateDemo = page;

/** Shows only the parameters the chosen strategy takes. */
function showParameters() {
  const strategy = $("strategy").value;
  for (const field of $("sampling").querySelectorAll("[data-for]")) {
    field.hidden = !field.dataset.for.split(" ").includes(strategy);
  }
}

function setState(state) {
  page.state = state;
  $("state").textContent = state;
  const running = state === "generating";
  $("generate").disabled = running || !$("prompt").value;
  for (const input of document.querySelectorAll("#devices input, #sampling input, #sampling select")) {
    input.disabled = running;
  }
  if (!running && !py.gpu.available) $("devices").querySelector('[value="wgpu"]').disabled = true;
}

/** The output pane: the prompt, then the new text as it comes. */
function startOutput(prompt) {
  const output = $("output");
  output.replaceChildren();
  const shown = document.createElement("span");
  shown.className = "prompt";
  shown.textContent = prompt;
  const made = document.createElement("span");
  made.id = "made";
  output.append(shown, made);
}

/** What the page says about the model and how it was trained. */
function describe(about) {
  const config = about.config;
  $("model").textContent = `model: the zoo's ${about.model} (${about.description}), ` +
    `shrunk to ${config.num_hidden_layers} layers of ${config.hidden_size} features, ` +
    `${config.num_attention_heads} query heads sharing ${config.num_key_value_heads} ` +
    `key/value heads, ${about.parameters.toLocaleString("en")} parameters, a vocabulary of ` +
    `${config.vocab_size} characters and a context of ${about.context}. Trained when this ` +
    `site was built, from random weights, on ${about.text} (${about.characters} characters; ` +
    `${about.steps} steps on the cpu device, down to a loss of ${about.loss.toFixed(3)} nats ` +
    `per character): the tokenizer is a character-level tokenizer.json, read by ` +
    "pyburn.models.Tokenizer.";
  $("prompt").maxLength = about.context - 1;
}

const py = await startPyburn({ status: $("status"), notice: $("notice") });
const device = deviceSwitch($("devices"), py);
await runFile(py, "py/generate.py");
const data = (name) => new URL(`data/${name}`, location.href).href;
page.about = await py.call("load", data("zen-llama.safetensors"), data("zen-tokenizer.json"));
describe(page.about);
// the first generation's work (the model, its kernels) now; a failure shows at the first one
await py.call("warm", device()).catch(() => {});

py.on("token", ({ id, text, count, seconds }) => {
  page.tokens.push(id);
  $("made").textContent += text;
  $("count").textContent = count;
  if (count === 1) $("first").textContent = `after ${(1000 * seconds).toFixed(0)} ms`;
  $("speed").textContent = `${(count / seconds).toFixed(1)} tokens/s`;
});

$("strategy").addEventListener("change", showParameters);
$("prompt").addEventListener("input", () => setState(page.state));
$("generate").addEventListener("click", async () => {
  const prompt = $("prompt").value;
  const strategy = $("strategy").value;
  const parameters = { temperature: Number($("temperature").value),
                       top_k: Number($("top-k").value), top_p: Number($("top-p").value) };
  page.tokens = [];
  page.result = null;
  startOutput(prompt);
  $("count").textContent = $("first").textContent = $("speed").textContent = "–";
  setState("generating");
  try {
    page.result = await py.call("complete", prompt, device(), Number($("max-new").value),
                                strategy, Number($("seed").value), parameters);
    const { tokens_per_s: speed, device: used, ids } = page.result;
    $("speed").textContent = `${ids.length} tokens, ${speed.toFixed(1)} tokens/s`;
    $("device").textContent = DEVICE_NAMES[used];
    setState("done");
  } catch (error) {
    setState("failed");
    $("status").textContent = `generation failed: ${error.message}`;
    $("status").className = "status error";
  }
});

showParameters();
setState("idle");
document.body.dataset.ready = "true";
