// Runs pyburn's tests inside Pyodide (CPython compiled to WebAssembly: the Python of the
// browser, with no numpy) under Node, fully offline.
//
//   node tests/pyodide/run.mjs PYTEST_ARG...   (test paths relative to the repository root,
//                                               and any pytest option, e.g. -rs)
//
// `make test` prepares what this needs and runs it after the desktop suite:
//   build/pyodide-wheels/*.whl  pytest and its pure-Python dependencies, for Python 3.14
//   build/dist/pyburn-*.whl     the pyburn wheel, exactly as users install it
//   build/conformance-golden.json  float64 references written by the desktop run, read by the
//                                  conformance suite where numpy is absent
// Exit status: pytest's (0 when every test passed), or 1 when the run could not start.

import { exitWith, root, startPyodide } from "./pyodide.mjs";

const wheelDirs = ["build/pyodide-wheels", "build/dist"];

// Imports pyburn from the installed wheel before pytest puts the repository on sys.path: every
// later `import pyburn...` resolves through sys.modules and pyburn.__path__ to site-packages,
// so the tests exercise the wheel (packaging mistakes show up here) and not the source tree.
const runPytest = `
import os
import sys

def run_pytest(root, pytest_args):
    sys.dont_write_bytecode = True  # the repository is mounted: leave no __pycache__ in it
    import pyburn

    where = os.path.dirname(pyburn.__file__)
    if where.startswith(root + "/"):
        raise RuntimeError(f"pyburn was imported from the source tree ({where}), not the wheel")
    print(f"pyburn {pyburn.__version__} from {where}; Python {sys.version.split()[0]}",
          flush=True)
    os.chdir(root)
    # Node has no WebGPU: this run is the flex suite (e2e/conformance.py runs the conformance
    # suite on WebGPU in Chromium), so tests/conftest.py must not ask for an adapter
    os.environ["PYBURN_SKIP"] = "wgpu"
    import pytest

    return int(pytest.main(["-q", "-p", "no:cacheprovider", *pytest_args]))

run_pytest
`;

async function main(pytestArgs) {
  if (pytestArgs.length === 0) throw new Error("usage: node tests/pyodide/run.mjs PYTEST_ARG...");
  const pyodide = await startPyodide(wheelDirs);
  pyodide.mountNodeFS(root, root); // same path as on the host, so tracebacks name real files
  const run = pyodide.runPython(runPytest);
  try {
    return run(root, pyodide.toPy(pytestArgs));
  } finally {
    run.destroy();
  }
}

await exitWith(() => main(process.argv.slice(2)));
