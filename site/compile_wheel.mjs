// Byte-compiles the pyburn wheel for the site, with Pyodide's own Python (3.14) under Node:
// the same wheel, with __pycache__/*.cpython-314.pyc next to every module (and its RECORD
// updated), so that the browser imports pyburn without compiling it first.
//
//   node site/compile_wheel.mjs IN.whl OUT_DIR       (writes OUT_DIR/<the same name>.whl)
//
// pyodide-build's `py-compile` would need this machine's Python to be 3.14, and its
// cross-build environment comes from GitHub; Pyodide itself is already in node_modules.
// The .pyc files are "unchecked hash" ones: Python uses them without looking at the sources'
// timestamps, which an installed wheel does not keep. The sources stay, for tracebacks.

import fs from "node:fs";
import path from "node:path";
import { loadPyodide } from "pyodide";

const COMPILE = `
import base64, compileall, hashlib, os, py_compile, shutil, zipfile

def compile_wheel(source, target):
    tree = "/tmp/wheel"
    shutil.rmtree(tree, ignore_errors=True)
    with zipfile.ZipFile(source) as wheel:
        wheel.extractall(tree)
        record = next(n for n in wheel.namelist() if n.endswith(".dist-info/RECORD"))
    mode = py_compile.PycInvalidationMode.UNCHECKED_HASH
    if not compileall.compile_dir(tree, quiet=1, invalidation_mode=mode, stripdir=tree):
        raise RuntimeError("a module of the wheel does not compile")
    names = sorted(os.path.relpath(os.path.join(folder, name), tree)
                   for folder, _, files in os.walk(tree) for name in files)
    lines = []
    with zipfile.ZipFile(target, "w", zipfile.ZIP_DEFLATED) as wheel:
        for name in names:
            if name == record:
                continue
            with open(os.path.join(tree, name), "rb") as file:
                data = file.read()
            wheel.writestr(name, data)
            digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=")
            lines.append(f"{name},sha256={digest.decode()},{len(data)}")
        wheel.writestr(record, "\\n".join(lines + [f"{record},,"]) + "\\n")
    return len([n for n in names if n.endswith(".pyc")])

compile_wheel
`;

async function main([input, outDir]) {
  if (!input || !outDir) throw new Error("usage: node site/compile_wheel.mjs IN.whl OUT_DIR");
  const pyodide = await loadPyodide();
  pyodide.FS.writeFile("/tmp/in.whl", new Uint8Array(fs.readFileSync(input)));
  const compile = pyodide.runPython(COMPILE);
  try {
    const count = compile("/tmp/in.whl", "/tmp/out.whl");
    fs.mkdirSync(outDir, { recursive: true });
    const output = path.join(outDir, path.basename(input));
    fs.writeFileSync(output, pyodide.FS.readFile("/tmp/out.whl"));
    console.log(`${output}: ${count} modules byte-compiled by Pyodide ${pyodide.version}`);
  } finally {
    compile.destroy();
  }
}

try {
  await main(process.argv.slice(2));
} catch (error) {
  process.stderr.write(`compile_wheel failed: ${error.message}\n`);
  process.exitCode = 1;
}
