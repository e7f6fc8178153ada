// Starting Pyodide (CPython compiled to WebAssembly) under Node with pyburn's wheels installed,
// fully offline. Shared by the test run (run.mjs) and the benchmark run (bench.mjs).

import fs from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { loadPyodide } from "pyodide";

/** The repository root (this file lives in tests/pyodide/). */
export const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..", "..");

function wheelsIn(dir) {
  const full = path.join(root, dir);
  const names = fs.existsSync(full) ? fs.readdirSync(full).filter((n) => n.endsWith(".whl")) : [];
  if (names.length === 0) throw new Error(`no wheels in ${dir}: run 'make test' to build them`);
  return names.map((n) => path.join(full, n));
}

// Pyodide hands each chunk of output over as soon as Python writes it (pytest's progress dots
// appear as they happen). The chunk is a view of WebAssembly memory that Python reuses, so it is
// copied before Node may queue it.
function unbatched(stream) {
  return { write: (bytes) => (stream.write(Buffer.from(bytes)), bytes.length) };
}

/**
 * A Pyodide instance whose output goes straight to this process's stdout and stderr, with every
 * wheel of `wheelDirs` (folders relative to the repository root) installed into site-packages.
 */
export async function startPyodide(wheelDirs) {
  const wheels = wheelDirs.flatMap(wheelsIn);
  const pyodide = await loadPyodide();
  pyodide.setStdout(unbatched(process.stdout));
  pyodide.setStderr(unbatched(process.stderr));
  // Unpacking a pure wheel into site-packages is all an install is (and works offline).
  const extractDir = pyodide.runPython("import sysconfig; sysconfig.get_path('purelib')");
  for (const wheel of wheels) {
    // A raw Node Buffer is refused ("Unknown typed array type 'Buffer'"): pass a Uint8Array.
    pyodide.unpackArchive(new Uint8Array(fs.readFileSync(wheel)), "wheel", { extractDir });
  }
  return pyodide;
}

/** Sets the exit status to what `main()` returns, or to 1 (with the message) if it throws. */
export async function exitWith(main) {
  try {
    process.exitCode = await main();
  } catch (error) {
    // The message carries the Python traceback; the JS stack would print the minified runtime.
    process.stderr.write(`pyodide run failed: ${error.message}\n`);
    process.exitCode = 1;
  }
}
