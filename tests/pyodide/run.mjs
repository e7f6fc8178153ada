// Runs pyburn's tests inside Pyodide (CPython compiled to WebAssembly: the Python of the
// browser, with no numpy) under Node, fully offline.
//
//   node tests/pyodide/run.mjs TEST_PATH...     (paths relative to the repository root)
//
// `make test` prepares what this needs and runs it after the desktop suite:
//   build/pyodide-wheels/*.whl  pytest and its pure-Python dependencies, for Python 3.14
//   build/dist/pyburn-*.whl     the pyburn wheel, exactly as users install it
//   build/conformance-golden.json  float64 references written by the desktop run, read by the
//                                  conformance suite where numpy is absent
// Exit status: pytest's (0 when every test passed), or 1 when the run could not start.

import fs from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { loadPyodide } from "pyodide";

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..", "..");
const wheelDirs = ["build/pyodide-wheels", "build/dist"];

// Imports pyburn from the installed wheel before pytest puts the repository on sys.path: every
// later `import pyburn...` resolves through sys.modules and pyburn.__path__ to site-packages,
// so the tests exercise the wheel (packaging mistakes show up here) and not the source tree.
const runPytest = `
import os
import sys

def run_pytest(root, test_paths):
    sys.dont_write_bytecode = True  # the repository is mounted: leave no __pycache__ in it
    import pyburn

    where = os.path.dirname(pyburn.__file__)
    if where.startswith(root + "/"):
        raise RuntimeError(f"pyburn was imported from the source tree ({where}), not the wheel")
    print(f"pyburn {pyburn.__version__} from {where}; Python {sys.version.split()[0]}",
          flush=True)
    os.chdir(root)
    import pytest

    return int(pytest.main(["-q", "-p", "no:cacheprovider", *test_paths]))

run_pytest
`;

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

async function main(testPaths) {
  if (testPaths.length === 0) throw new Error("usage: node tests/pyodide/run.mjs TEST_PATH...");
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
  pyodide.mountNodeFS(root, root); // same path as on the host, so tracebacks name real files
  const run = pyodide.runPython(runPytest);
  try {
    return run(root, pyodide.toPy(testPaths));
  } finally {
    run.destroy();
  }
}

try {
  process.exitCode = await main(process.argv.slice(2));
} catch (error) {
  // The message carries the Python traceback; the JS stack would print the minified runtime.
  process.stderr.write(`pyodide run failed: ${error.message}\n`);
  process.exitCode = 1;
}
