// One pyburn session: Pyodide started from the same origin, micropip loaded from it, the pyburn
// wheel installed, and WebGPU connected (or the reason it is not). The worker (worker.js) wraps a
// session in a message protocol; `loadPyburn({worker: false})` uses one directly in the page.

/**
 * What the build (`make site`, site/build.py) writes next to the pages as `pyburn-web.json`:
 * where Pyodide and the wheels are, relative to that file, and the Pyodide packages to load.
 * @typedef {{pyodide: string, packages?: string[], wheels: string[]}} Manifest
 */

const MANIFEST = "pyburn-web.json";
// Where pyburn keeps what outlives a visit (generated shaders, autotune's picks): a folder of
// Emscripten's IDBFS, which IndexedDB backs; pyburn finds it as $PYBURN_DATA.
const KEPT = "/pyburn-kept";

// Entering Python through a "promising" call lets a synchronous read (`t.tolist()` on WebGPU)
// block on the GPU with `pyodide.ffi.run_sync`. Engines without JS Promise Integration refuse
// such calls, so there the session makes plain calls, and synchronous GPU reads raise
// pyburn's ReadbackError, which names the `_async` form.
const HAS_JSPI = typeof WebAssembly.Suspending === "function";

// Python run once pyburn is installed: connect WebGPU and say what was found. A device lost
// later is announced to the page as the event "gpu-lost".
const CONNECT = `
from pyburn_web import emit
from pyburn.backends.wgpu import browser
await browser.connect(on_lost=lambda message: emit("gpu-lost", message))
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
   * Starts Python: Pyodide, micropip, the pyburn wheel, WebGPU. `baseURL` is the folder that
   * holds pyburn-web.json. Resolves to {pyodide, python, pyburn, devices, gpu, jspi, seconds,
   * stages} (`devices`: pyburn's available devices, fastest first; `stages`: the seconds each
   * stage took).
   */
  async start(baseURL) {
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
    const manifest = await (await fetch(new URL(MANIFEST, base))).json();
    const indexURL = new URL(manifest.pyodide, base).href;

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
    });

    status("micropip", "loading micropip");
    // numpy, where the site serves a full Pyodide distribution (the cpu device)
    const packages = ["micropip", ...(manifest.packages ?? [])];
    await pyodide.loadPackage(packages, { messageCallback: () => {} });
    status("pyburn", "installing pyburn");
    const micropip = pyodide.pyimport("micropip");
    try {
      for (const wheel of manifest.wheels) {
        await micropip.install(new URL(wheel, base).href);
      }
    } finally {
      micropip.destroy();
    }

    status("webgpu", "looking for a WebGPU adapter");
    this.pyodide = pyodide;
    if (this.kept) pyodide.runPython(`import os; os.environ["PYBURN_DATA"] = "${KEPT}"`);
    this.globals = pyodide.globals.get("dict")();
    this.gpu = plain(await pyodide.runPythonAsync(CONNECT, { globals: this.globals }));
    const versions = plain(pyodide.runPython(
      "import sys, pyburn\n{'python': sys.version.split()[0], 'pyburn': pyburn.__version__, " +
        "'devices': [d.name for d in pyburn.available_devices()]}",
    ));
    status("ready", "ready");
    return {
      pyodide: pyodide.version,
      ...versions,
      gpu: this.gpu,
      jspi: HAS_JSPI,
      seconds: (performance.now() - started) / 1000,
      stages,
    };
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
    // Arrays and objects become lists and dicts, typed arrays memoryviews.
    const pyArgs = args.map((a) => this.pyodide.toPy(a));
    try {
      // An async def returns a promise either way; a plain one runs with JSPI where it can.
      const result = HAS_JSPI ? fn.callPromising(...pyArgs) : fn(...pyArgs);
      return plain(await result);
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
