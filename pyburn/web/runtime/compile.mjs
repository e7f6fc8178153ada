// Byte-compiles Python with Pyodide's own Python (3.14) under Node.js, for `pyburn web build`
// and the demo site, so that a page imports modules without compiling them first:
//
//   node compile.mjs PYODIDE_DIR TREE_DIR [--sourceless]
//       __pycache__/*.cpython-314.pyc next to every module of TREE_DIR; --sourceless writes
//       each module's .pyc beside its .py (where Python imports it from once the build
//       removed the .py: pyburn/web/wheel.py), instead of in __pycache__.
//   node compile.mjs PYODIDE_DIR --stdlib OUT_ZIP PACKAGE_DIR MODULE...
//       Pyodide's standard library zip rewritten to OUT_ZIP with its members stored: the
//       modules that Pyodide's own start and the import of each MODULE (found in PACKAGE_DIR)
//       load are there as .pyc in place of their .py (pyburn/web/pyodide.py says why).
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

// PEP 552's layout: the magic number, flags 0b01 (hash-based, unchecked), the source's hash,
// the marshalled code. The code's file name is the member's path inside the zip on sys.path,
// as zipimport gives it to modules compiled from source, so tracebacks name the same file.
const STDLIB = `
import importlib, importlib.util, marshal, sys, zipfile
stdlib = next(p for p in sys.path if p.endswith(".zip"))
sys.path.append("/package")
for name in modules:
    importlib.import_module(name)
loaded = {m.__file__[len(stdlib) + 1:] for m in list(sys.modules.values())
          if (getattr(m, "__file__", None) or "").startswith(stdlib + "/")}
with zipfile.ZipFile(stdlib) as source, zipfile.ZipFile("/out/" + out_name, "w") as out:
    for member in source.infolist():
        data = source.read(member)
        if member.filename in loaded:
            code = compile(data, f"{stdlib}/{member.filename}", "exec", dont_inherit=True)
            header = importlib.util.MAGIC_NUMBER + (1).to_bytes(4, "little")
            out.writestr(member.filename[:-3] + ".pyc",
                         header + importlib.util.source_hash(data) + marshal.dumps(code))
        else:
            out.writestr(member, data, compress_type=zipfile.ZIP_STORED)
`;

const USAGE = "usage: node compile.mjs PYODIDE_DIR TREE_DIR [--sourceless]\n" +
  "       node compile.mjs PYODIDE_DIR --stdlib OUT_ZIP PACKAGE_DIR MODULE...";

/** `folder` of this machine at `where` in Pyodide's file system. */
function mount(pyodide, where, folder) {
  pyodide.FS.mkdirTree(where);
  pyodide.mountNodeFS(where, path.resolve(folder));
}

async function main([pyodideDir, tree, ...rest]) {
  if (!pyodideDir || !tree) throw new Error(USAGE);
  const indexURL = path.resolve(pyodideDir) + path.sep;
  const { loadPyodide } = await import(pathToFileURL(path.join(indexURL, "pyodide.mjs")).href);
  const pyodide = await loadPyodide({ indexURL, env: { PYTHONNODEBUGRANGES: "1" } });
  if (tree === "--stdlib") {
    const [outZip, packageDir, ...modules] = rest;
    if (!outZip || !packageDir) throw new Error(USAGE);
    mount(pyodide, "/out", path.dirname(outZip));
    mount(pyodide, "/package", packageDir);
    pyodide.globals.set("out_name", path.basename(outZip));
    pyodide.globals.set("modules", pyodide.toPy(modules));
    pyodide.runPython(STDLIB);
    return;
  }
  mount(pyodide, "/tree", tree);
  pyodide.globals.set("sourceless", rest.includes("--sourceless"));
  pyodide.runPython(COMPILE);
}

try {
  await main(process.argv.slice(2));
} catch (error) {
  process.stderr.write(`compile.mjs failed: ${error.message}\n`);
  process.exitCode = 1;
}
