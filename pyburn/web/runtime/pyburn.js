// pyburn in a web page: Python (Pyodide) with pyburn installed, in a module Web Worker so that
// the page stays responsive, behind a promise API.
//
//   import { loadPyburn } from "./pyburn/pyburn.js";    // (the demo site serves it as web/)
//   const py = await loadPyburn({ baseURL: "./" });      // the folder with pyburn-web.json
//   py.on("stdout", (text) => output.append(text));
//   await py.run("import pyburn\nx = pyburn.ones(3)\nprint(x.device)");
//   await py.run("def double(xs):\n    return [2 * x for x in xs]");
//   await py.call("double", [1, 2, 3]);                 // [2, 4, 6]
//   py.gpu;   // {available: true, adapter: {...}} or {available: false, reason: "..."}
//
// An app built with `pyburn web build` is imported at start: `py.call("predict", pixels)`
// calls its function; a typed array arrives in Python as a memoryview (`pyburn.tensor(view)`),
// and a tensor it returns comes back as a typed array of its dtype with a `shape`.
//
// Events: "stdout" and "stderr" (text as Python writes it), "status" ({stage, message} while
// loading), and any name page code emits from Python with
// `from pyburn_web import emit; emit("progress", {...})`.

import { Session } from "./session.js";
import { unpack } from "./wire.js";

/** A started pyburn session: run Python, call its functions, listen to its events. */
export class Pyburn extends EventTarget {
  /** @param {(op: string, args: any[]) => Promise<any>} send */
  constructor(send, terminate) {
    super();
    this._send = send;
    this._terminate = terminate;
    /** What `start` found: versions, `gpu`, `jspi`, start-up seconds. */
    this.info = null;
    /** The app the build ships ({name, module, exports}), or undefined. */
    this.app = undefined;
  }

  /** WebGPU as found at start: {available, reason?, adapter?}. */
  get gpu() {
    return this.info.gpu;
  }

  /** Runs Python source in the session's namespace; resolves to the last expression's value. */
  run(code) {
    return this._send("run", [code]);
  }

  /** Calls the Python function `name` (the app's, or one an earlier run() defined); resolves
   * to its result, tensors as typed arrays with a `shape`. */
  call(name, ...args) {
    return this._send("call", [name, ...args]);
  }

  /** Calls `handler(data)` on every event `name`; returns a function that stops it. */
  on(name, handler) {
    const listener = (event) => handler(event.detail);
    this.addEventListener(name, listener);
    return () => this.removeEventListener(name, listener);
  }

  /** Stops Python at once (the worker is terminated; in-page sessions cannot be stopped). */
  terminate() {
    this._terminate();
  }
}

/**
 * Starts pyburn: Pyodide from the same origin, micropip, the pyburn wheel and WebGPU.
 * @param {{baseURL?: string, worker?: boolean, onEvent?: (name: string, data: any) => void,
 *   precompile?: boolean}} options
 *   baseURL: the folder holding pyburn-web.json (relative to the page); worker: run Python in a
 *   module Web Worker (default) or in the page itself; onEvent: sees every event, from the
 *   start; precompile: compile the GPU kernels the build recorded while Python starts (the
 *   default: only on a hardware adapter, where WebGPU is the default device; pass true when
 *   the page will use WebGPU on any adapter, false when it will not use WebGPU).
 * @returns {Promise<Pyburn>}
 */
export async function loadPyburn({ baseURL = "./", worker = true, onEvent, precompile } = {}) {
  const base = new URL(baseURL, document.baseURI).href;
  let py;
  const emit = (name, data) => {
    onEvent?.(name, data);
    py.dispatchEvent(new CustomEvent(name, { detail: data }));
  };
  if (worker) {
    const thread = new Worker(new URL("./worker.js", import.meta.url), { type: "module" });
    const pending = new Map();
    let next = 0;
    const fail = (message) => {
      for (const { reject } of pending.values()) reject(new Error(message));
      pending.clear();
    };
    thread.onmessage = ({ data }) => {
      if (data.event !== undefined) return emit(data.event, data.data);
      const waiting = pending.get(data.id);
      pending.delete(data.id);
      if ("error" in data) waiting.reject(new Error(data.error));
      else waiting.resolve(unpack(data.value));
    };
    thread.onerror = (event) => fail(`the pyburn worker failed: ${event.message}`);
    const send = (op, args) =>
      new Promise((resolve, reject) => {
        const id = next++;
        pending.set(id, { resolve, reject });
        thread.postMessage({ id, op, args });
      });
    const terminate = () => {
      thread.terminate();
      fail("the pyburn worker was terminated");
    };
    py = new Pyburn(send, terminate);
    py.info = await send("start", [base, { precompile }]);
    py.app = py.info.app;
  } else {
    const session = new Session(emit);
    const ops = {
      run: (code) => session.run(code),
      call: (name, ...args) => session.call(name, args),
    };
    const refuse = () => {
      throw new Error("a session running in the page cannot be terminated");
    };
    py = new Pyburn((op, args) => ops[op](...args), refuse);
    py.info = await session.start(base, { precompile });
    py.app = py.info.app;
  }
  return py;
}
