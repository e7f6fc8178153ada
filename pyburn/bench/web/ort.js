// The onnxruntime-web peer of `pyburn bench web`: an ONNX file of pyburn/bench/quant.py
// (served under /quant/) in a session of the wasm execution provider, on one thread as
// pyburn's wasm device (the page is not cross-origin isolated, so it could not have more),
// timed as in_page.py times pyburn's products.

ort.env.wasm.wasmPaths = "/node_modules/onnxruntime-web/dist/";
ort.env.wasm.numThreads = 1;

const ARRAYS = { float32: Float32Array, uint8: Uint8Array, int8: Int8Array, int32: Int32Array };

/**
 * Runs each model of `models` ({name: [url, inputs]}, inputs {name: [type, dims, flat
 * values]}): one untimed run of each (the engine's optimizing compiler takes over hot code
 * meanwhile), then `samples` runs of each, the models taking turns run by run (the machine's
 * other work falls on all alike); a run makes `session.run` calls back to back until it lasts
 * `minMs` (so that a page's 0.1 ms timer does not round a small product). Returns, by name,
 * the milliseconds per call of each timed run and the first output's values of the first
 * call, for the check.
 */
async function run(models, samples, minMs) {
  const entries = [];
  for (const [name, [url, inputs]] of Object.entries(models)) {
    const session = await ort.InferenceSession.create(url, { executionProviders: ["wasm"] });
    const feeds = {};
    for (const [input, [type, dims, values]] of Object.entries(inputs)) {
      feeds[input] = new ort.Tensor(type, ARRAYS[type].from(values), dims);
    }
    const first = await session.run(feeds);
    entries.push({ name, session, feeds, output: Array.from(first[session.outputNames[0]].data) });
  }
  const timed = async ({ session, feeds }) => {
    let calls = 0;
    const started = performance.now();
    while (calls === 0 || performance.now() - started < minMs) {
      await session.run(feeds);
      calls++;
    }
    return (performance.now() - started) / calls;
  };
  for (const entry of entries) await timed(entry);
  const times = Object.fromEntries(entries.map(({ name }) => [name, []]));
  for (let i = 0; i < samples; i++) {
    for (const entry of entries) times[entry.name].push(await timed(entry));
  }
  const results = {};
  for (const { name, session, output } of entries) {
    await session.release();
    results[name] = { times: times[name], output };
  }
  return results;
}

window.ortBench = { run, version: ort.env.versions.web };
document.body.dataset.ready = "true";
