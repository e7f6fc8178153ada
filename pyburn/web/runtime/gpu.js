// WebGPU started while Pyodide starts: the adapter and the device are requested, and the
// compute pipelines a build recorded (`kernels` in pyburn-web.json) are compiled, before
// Python runs. Compiling a pipeline takes 10-100 ms on a software adapter (SwiftShader), and
// the browser's GPU process does it beside the worker that starts Python, so a page's first
// GPU prediction no longer waits for them. Python's `browser.connect(early=...)` takes what
// this found; where anything fails here it asks WebGPU itself and reports why.

/**
 * The device request a build writes into pyburn-web.json (`webgpu`), from
 * pyburn/backends/wgpu/browser.py: the optional features and the limits asked at the
 * adapter's own values.
 * @typedef {{features: string[], limits: string[]}} Request
 */

/**
 * Resolves to {adapter, device, features, pipelines: [[source, entry, pipeline], ...]}, or
 * null where there is no WebGPU, no adapter or no device.
 * @param {Request} request
 * @param {URL | null} kernelsURL the recorded kernels: a JSON list of [entry, WGSL source]
 * @param {boolean | undefined} precompile compile the recorded kernels (undefined: only on
 *   a hardware adapter, where WebGPU is pyburn's default device)
 */
export async function startWebGPU(request, kernelsURL, precompile) {
  const gpu = globalThis.navigator?.gpu;
  const adapter = gpu && await gpu.requestAdapter();
  if (!adapter) return null;
  const features = request.features.filter((name) => adapter.features.has(name));
  const requiredLimits = Object.fromEntries(request.limits.map((name) => [name, adapter.limits[name]]));
  const device = await adapter.requestDevice({ requiredFeatures: features, requiredLimits });
  const software = adapter.info?.isFallbackAdapter || adapter.info?.architecture === "swiftshader";
  const kernels = kernelsURL && (precompile ?? !software) ? await fetchKernels(kernelsURL) : [];
  // All at once: the browser queues them; one that fails is left to Python, which compiles
  // it again when it is used and reports the error there.
  const compiled = await Promise.allSettled(kernels.map(([entry, code]) =>
    device.createComputePipelineAsync({
      layout: "auto",
      compute: { module: device.createShaderModule({ code }), entryPoint: entry },
    })));
  const pipelines = kernels
    .map(([entry, code], i) => [code, entry, compiled[i].value])
    .filter(([, , pipeline]) => pipeline);
  return { adapter, device, features, pipelines };
}

/** The recorded kernels, or none where the file cannot be read. */
async function fetchKernels(url) {
  const response = await fetch(url);
  return response.ok ? response.json() : [];
}
