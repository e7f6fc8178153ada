// Byte-compiles a folder of Python modules with Pyodide's own Python (3.14) under Node.js,
// for `pyburn web build` and the demo site: __pycache__/*.cpython-314.pyc next to every
// module, so that a page imports pyburn without compiling it first.
//
//   node compile.mjs PYODIDE_DIR TREE_DIR [--sourceless]
//
// --sourceless writes each module's .pyc beside its .py (where Python imports it from once the
// build removed the .py: pyburn/web/wheel.py), instead of in __pycache__.
//
// The desktop's Python may be another version, whose .pyc a page cannot use; Pyodide is
// already at hand, since the build copies it. The .pyc files are "unchecked hash" ones:
// Python uses them without comparing the sources' timestamps, which an unpacked wheel does
// not keep.

import path from "node:path";
import { pathToFileURL } from "node:url";

const COMPILE = `
import compileall, py_compile
mode = py_compile.PycInvalidationMode.UNCHECKED_HASH
if not compileall.compile_dir("/tree", quiet=1, invalidation_mode=mode, stripdir="/tree",
                              legacy=sourceless):
    raise RuntimeError("a module does not compile")
`;

async function main([pyodideDir, tree, ...flags]) {
  if (!pyodideDir || !tree) throw new Error("usage: node compile.mjs PYODIDE_DIR TREE_DIR [--sourceless]");
  const indexURL = path.resolve(pyodideDir) + path.sep;
  const { loadPyodide } = await import(pathToFileURL(path.join(indexURL, "pyodide.mjs")).href);
  const pyodide = await loadPyodide({ indexURL });
  pyodide.FS.mkdir("/tree");
  pyodide.mountNodeFS("/tree", path.resolve(tree));
  pyodide.globals.set("sourceless", flags.includes("--sourceless"));
  pyodide.runPython(COMPILE);
}

try {
  await main(process.argv.slice(2));
} catch (error) {
  process.stderr.write(`compile.mjs failed: ${error.message}\n`);
  process.exitCode = 1;
}
