// Types of pyburn's page loader (pyburn.js): `loadPyburn` and the session it resolves to.

/** A typed array a tensor came back as, with the tensor's shape. */
export type TensorArray = (
  | Float32Array
  | Float64Array
  | Int32Array
  | BigInt64Array
  | Uint8Array
  | Uint16Array
) & { shape: number[] };

/** What Python returns, as the page gets it: tensors as typed arrays, dicts as objects. */
export type PythonValue =
  | null
  | undefined
  | boolean
  | number
  | string
  | Uint8Array
  | TensorArray
  | PythonValue[]
  | { [key: string]: PythonValue };

/** WebGPU as the session found it. */
export interface GpuInfo {
  available: boolean;
  reason?: string;
  adapter?: Record<string, unknown>;
}

/** The app a build ships: its module and the functions the page may call. */
export interface AppInfo {
  name: string;
  module: string;
  exports: string[];
}

/** What the session's start found. */
export interface SessionInfo {
  pyodide: string;
  python: string;
  pyburn: string;
  /** pyburn's available devices, fastest first */
  devices: string[];
  gpu: GpuInfo;
  app?: AppInfo;
  /** whether the engine has JS Promise Integration (synchronous GPU reads) */
  jspi: boolean;
  /** seconds from the start to ready, and per stage */
  seconds: number;
  stages: Record<string, number>;
}

/** The events a session sends: output, loading status, a lost GPU, and what Python emits. */
export interface Events {
  stdout: string;
  stderr: string;
  status: { stage: string; message: string };
  "gpu-lost": string;
  [name: string]: unknown;
}

/** A started pyburn session. */
export declare class Pyburn extends EventTarget {
  readonly info: SessionInfo;
  readonly gpu: GpuInfo;
  readonly app: AppInfo | undefined;
  /** Runs Python source in the session's namespace; resolves to the last expression's value. */
  run(code: string): Promise<PythonValue>;
  /** Calls a Python function of the app (or one run() defined); typed arrays arrive as
   * memoryviews, tensors return as typed arrays with a `shape`. */
  call(name: string, ...args: unknown[]): Promise<PythonValue>;
  /** Calls `handler` on every event `name`; returns a function that stops it. */
  on<K extends keyof Events>(name: K, handler: (data: Events[K]) => void): () => void;
  /** Stops Python at once (worker sessions only). */
  terminate(): void;
}

export interface LoadOptions {
  /** the folder holding pyburn-web.json, relative to the page (default "./") */
  baseURL?: string;
  /** run Python in a module Web Worker (default) or in the page */
  worker?: boolean;
  /** sees every event from the start, loading status included */
  onEvent?: (name: string, data: unknown) => void;
}

/** Starts Python with pyburn (and the build's app) from the page's own origin. */
export declare function loadPyburn(options?: LoadOptions): Promise<Pyburn>;
