// One pyburn session: Pyodide started from the same origin, the pyburn wheel unpacked into its
// site-packages, the app's files written where its Python finds them, and WebGPU connected (or
// the reason it is not). The worker (worker.js) wraps a session in a message protocol;
// `loadPyburn({worker: false})` uses one directly in the page.

import { startWebGPU } from "./gpu.js";
import { fromPython } from "./wire.js";

/**
 * What the build (`pyburn web build`, or the demo site's) writes as `pyburn-web.json`: where
 * Pyodide and the wheels are, relative to that file, the Pyodide packages to load, and the
 * app: its module, its public functions and its files (under `app/`); WebGPU's device request
 * and the kernels to compile while Python starts (see gpu.js).
 * @typedef {{pyodide: string, packages?: string[], wheels: string[],
 *   app?: {name: string, module: string, exports: string[], files: string[]},
 *   webgpu?: import("./gpu.js").Request, kernels?: string}} Manifest
 */

const MANIFEST = "pyburn-web.json";
const SITE_PACKAGES = "/lib/python3.14/site-packages";
// where the app's files go; the app's module is imported from there, with it as the cwd
const APP_DIR = "/home/pyodide/app";
// Where pyburn keeps what outlives a visit (generated shaders, autotune's picks): a folder of
// Emscripten's IDBFS, which IndexedDB backs; pyburn finds it as $PYBURN_DATA.
const KEPT = "/pyburn-kept";

// Entering Python through a "promising" call lets a synchronous read (`t.tolist()` on WebGPU)
// block on the GPU with `pyodide.ffi.run_sync`. Engines without JS Promise Integration refuse
// such calls, so there the session makes plain calls, and synchronous GPU reads raise
// pyburn's ReadbackError, which names the `_async` form.
const HAS_JSPI = typeof WebAssembly.Suspending === "function";

// Python run once pyburn is installed: connect WebGPU (taking the device gpu.js started, if
// any) and say what was found. A device lost later is announced to the page as the event
// "gpu-lost".
const CONNECT = `
from pyburn_web import early_gpu, emit
from pyburn.backends.wgpu import browser
await browser.connect(on_lost=lambda message: emit("gpu-lost", message), early=await early_gpu())
`;

/** Text decoder per stream, so a character split across two writes decodes whole. */
function textStream(emit, name) {
  const decoder = new TextDecoder();
  return {
    write(bytes) {
      emit(name, decoder.decode(bytes, { stream: true }));
      return bytes.length;
    },
  };
}

/** A value Python returned (or emitted), as plain JS data that `postMessage` can copy. */
export function plain(value) {
  if (value && typeof value.toJs === "function") {
    try {
      return value.toJs({ dict_converter: Object.fromEntries, create_pyproxies: false });
    } finally {
      value.destroy();
    }
  }
  return value;
}

/** The bytes at `url`, fetched now; a failure names the file. */
async function fetchBytes(url) {
  const response = await fetch(url);
  if (!response.ok) throw new Error(`${url}: ${response.status} ${response.statusText}`);
  return new Uint8Array(await response.arrayBuffer());
}

export class Session {
  /**
   * @param {(event: string, data: any) => void} emit where output, progress and status go
   */
  constructor(emit) {
    this.emit = emit;
    this.kept = null;
    this.pyodide = null;
    this.gpu = null;
    this.globals = null;
  }

  /**
   * Starts Python: Pyodide, the pyburn wheel, WebGPU, the app. `baseURL` is the folder that
   * holds pyburn-web.json; `precompile` says whether to compile the build's recorded GPU
   * kernels while Python starts (undefined: on a hardware adapter only). Resolves to
   * {pyodide, python, pyburn, devices, gpu, jspi, seconds, stages} (`devices`: pyburn's available devices, fastest first; `stages`: the seconds each
   * stage took).
   */
  async start(baseURL, { precompile } = {}) {
    const started = performance.now();
    const base = new URL(baseURL, globalThis.location?.href);
    const stages = {};
    let stage = null;
    let since = started;
    const status = (next, message) => {
      const now = performance.now();
      if (stage) stages[stage] = (now - since) / 1000;
      [stage, since] = [next, now];
      this.emit("status", { stage: next, message });
    };

    status("manifest", "reading pyburn-web.json");
    const found = await fetch(new URL(MANIFEST, base));
    if (!found.ok) {
      throw new Error(`no ${MANIFEST} at ${base} (${found.status}): baseURL must name the ` +
        "folder a pyburn build wrote");
    }
    const manifest = await found.json();
    const indexURL = new URL(manifest.pyodide, base).href;
    // The wheels and the app's files download while Pyodide starts.
    const wheels = manifest.wheels.map((wheel) => fetchBytes(new URL(wheel, base)));
    const appFiles = (manifest.app?.files ?? []).map(
      async (name) => [name, await fetchBytes(new URL(name, base))]);
    // WebGPU's device and the recorded kernels, also while Pyodide starts
    const gpu = manifest.webgpu ? startWebGPU(manifest.webgpu,
      manifest.kernels ? new URL(manifest.kernels, base) : null, precompile).catch(() => null) : null;
    for (const pending of [...wheels, ...appFiles]) pending.catch(() => {});  // awaited below

    status("pyodide", "starting Python (Pyodide)");
    const { loadPyodide } = await import(new URL("pyodide.mjs", indexURL).href);
    const pyodide = await loadPyodide({
      indexURL,
      // Pyodide would otherwise print its package-loading chatter to the console.
      messageCallback: () => {},
    });
    this.kept = await keptFolder(pyodide);
    pyodide.setStdout(textStream(this.emit, "stdout"));
    pyodide.setStderr(textStream(this.emit, "stderr"));
    pyodide.registerJsModule("pyburn_web", {
      // Page code reports progress with `from pyburn_web import emit; emit("name", data)`.
      emit: (name, data) => this.emit(name, plain(data)),
      // undefined, not null, where there is none: Python sees None (null is its jsnull)
      early_gpu: async () => (gpu && await gpu) ?? undefined,
    });

    // numpy, where the build serves a full Pyodide distribution (the cpu device)
    if (manifest.packages?.length) {
      status("packages", `loading ${manifest.packages.join(", ")}`);
      await pyodide.loadPackage(manifest.packages, { messageCallback: () => {} });
    }
    status("pyburn", "installing pyburn");
    // A pure wheel is a zip of site-packages: unpacking it is all micropip would do here.
    for (const wheel of wheels) {
      pyodide.unpackArchive(await wheel, "wheel", { extractDir: SITE_PACKAGES });
    }
    pyodide.runPython("import importlib; importlib.invalidate_caches()");

    status("webgpu", "looking for a WebGPU adapter");
    this.pyodide = pyodide;
    if (this.kept) pyodide.runPython(`import os; os.environ["PYBURN_DATA"] = "${KEPT}"`);
    this.globals = pyodide.globals.get("dict")();
    this.forPage = pyodide.pyimport("pyburn.interop").for_page;
    this.gpu = plain(await pyodide.runPythonAsync(CONNECT, { globals: this.globals }));
    if (manifest.app) {
      status("app", `starting ${manifest.app.name}`);
      await this.startApp(manifest.app, await Promise.all(appFiles));
    }
    const versions = plain(pyodide.runPython(
      "import sys, pyburn\n{'python': sys.version.split()[0], 'pyburn': pyburn.__version__, " +
        "'devices': [d.name for d in pyburn.available_devices()]}",
    ));
    status("ready", "ready");
    return {
      pyodide: pyodide.version,
      ...versions,
      gpu: this.gpu,
      app: manifest.app && { name: manifest.app.name, module: manifest.app.module,
                             exports: manifest.app.exports },
      jspi: HAS_JSPI,
      seconds: (performance.now() - started) / 1000,
      stages,
    };
  }

  /** Writes the app's files under APP_DIR and imports its module, whose namespace becomes
   * the session's: `call` finds the app's functions there, and `run` runs beside them. */
  async startApp(app, files) {
    const { FS } = this.pyodide;
    for (const [name, bytes] of files) {
      const path = `${APP_DIR}/${name.replace(/^app\//, "")}`;
      FS.mkdirTree(path.slice(0, path.lastIndexOf("/")));
      FS.writeFile(path, bytes);
    }
    FS.mkdirTree(APP_DIR);
    this.globals.destroy();
    this.globals = await this.pyodide.runPythonAsync(`
import importlib, os, sys
os.chdir(${JSON.stringify(APP_DIR)})
sys.path.insert(0, ${JSON.stringify(APP_DIR)})
importlib.import_module(${JSON.stringify(app.module)}).__dict__
`);
  }

  /** Runs Python source in the session's namespace; resolves to its last expression's value. */
  async run(code) {
    try {
      return plain(await this.pyodide.runPythonAsync(code, { globals: this.globals }));
    } finally {
      await this.keep();
    }
  }

  /** Writes what Python kept in `KEPT` during a request to IndexedDB. */
  async keep() {
    if (this.kept) await syncfs(this.pyodide, false).catch(() => {});
  }

  /** Calls the Python function `name` of the session's namespace (`async def` ones too). */
  async call(name, args) {
    const fn = this.globals.get(name);
    if (fn === undefined || typeof fn.callPromising !== "function") {
      fn?.destroy?.();
      throw new Error(`Python has no function named ${name}: define it with run() first`);
    }
    // Arrays and objects become lists and dicts, typed arrays memoryviews of their format
    // (`pyburn.tensor(view)` makes a tensor of the matching dtype).
    const pyArgs = args.map((a) => this.pyodide.toPy(a));
    try {
      // An async def returns a promise either way; a plain one runs with JSPI where it can.
      let result = HAS_JSPI ? fn.callPromising(...pyArgs) : fn(...pyArgs);
      result = await result;
      // tensors in the result come back as typed arrays with a `shape`
      const encoded = await this.forPage(result);
      result?.destroy?.();
      return fromPython(plain(encoded));
    } finally {
      fn.destroy();
      for (const a of pyArgs) a?.destroy?.();
      await this.keep();
    }
  }
}

/** `FS.syncfs` as a promise: from IndexedDB into the folder (`populate`), or back. */
function syncfs(pyodide, populate) {
  return new Promise((resolve, reject) => pyodide.FS.syncfs(populate, (error) =>
    error ? reject(error) : resolve()));
}

/** `KEPT`, mounted on IndexedDB and filled from it; null where IndexedDB is refused (some
 * private windows): then nothing outlives the visit. */
async function keptFolder(pyodide) {
  try {
    pyodide.FS.mkdirTree(KEPT);
    pyodide.FS.mount(pyodide.FS.filesystems.IDBFS, {}, KEPT);
    await syncfs(pyodide, true);
    return KEPT;
  } catch {
    return null;
  }
}
