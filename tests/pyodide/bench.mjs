// Runs `pyburn bench` inside Pyodide under Node, from the pyburn wheel, fully offline: the
// numbers of the pure-Python backend in the Python of the browser.
//
//   node tests/pyodide/bench.mjs [BENCH_ARG...]   (default: matmul.flex)
//
// Arguments are those of `pyburn bench` (e.g. `elementwise.flex --json`). `make bench-pyodide`
// builds the wheel (build/dist/) and runs this. Exit status: the command's, or 1 when the run
// could not start.

import { exitWith, startPyodide } from "./pyodide.mjs";

async function main(benchArgs) {
  const pyodide = await startPyodide(["build/dist"]);
  // Where the numbers come from, on stderr so that stdout stays the report (or its JSON).
  process.stderr.write(`Pyodide ${pyodide.version} under Node ${process.version}\n`);
  const cli = pyodide.runPython("from pyburn.cli import main\nmain");
  try {
    return cli(pyodide.toPy(["bench", ...benchArgs]));
  } finally {
    cli.destroy();
  }
}

const args = process.argv.slice(2);
await exitWith(() => main(args.length > 0 ? args : ["matmul.flex"]));
