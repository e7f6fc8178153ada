// What a page bundled with pyburn-web needs beside its bundle: the worker and its modules,
// pyburn-web.json, Pyodide's runtime (from the pinned `pyodide` dependency) with the standard
// library and lock this package carries, and the pyburn wheel. `copyAssets(dir)` writes them
// into `dir`; the esbuild plugin does so after each build, and `npx pyburn-web assets DIR`
// for any other bundler (Vite: DIR = public/).

import fs from "node:fs";
import path from "node:path";
import { createRequire } from "node:module";
import { fileURLToPath } from "node:url";

const HERE = path.dirname(fileURLToPath(import.meta.url));
const require = createRequire(import.meta.url);
/** the loader's modules the worker imports (the page's bundle holds its own copy) */
const LOADER = ["worker.js", "session.js", "gpu.js", "wire.js"];
/** what comes from the `pyodide` package itself */
const FROM_PYODIDE = ["pyodide.mjs", "pyodide.asm.mjs", "pyodide.asm.wasm"];

/** The folder of the `pyodide` package, checked to be the version the lock was made for. */
function pyodideFolder() {
  const manifest = require.resolve("pyodide/package.json");
  const { version } = JSON.parse(fs.readFileSync(manifest, "utf8"));
  const wanted = JSON.parse(fs.readFileSync(path.join(HERE, "package.json"), "utf8"))
    .dependencies.pyodide;
  if (version !== wanted) {
    throw new Error(`pyburn-web needs pyodide ${wanted}, found ${version}: npm install pyodide@${wanted}`);
  }
  return path.dirname(manifest);
}

/** Write everything a page needs into `dir` (created if missing); returns the files written. */
export function copyAssets(dir) {
  const written = [];
  const copy = (from, to) => {
    fs.mkdirSync(path.dirname(to), { recursive: true });
    fs.copyFileSync(from, to);
    written.push(path.relative(dir, to));
  };
  for (const name of LOADER) copy(path.join(HERE, name), path.join(dir, name));
  const pyodide = pyodideFolder();
  for (const name of FROM_PYODIDE) copy(path.join(pyodide, name), path.join(dir, "pyodide", name));
  const assets = path.join(HERE, "assets");
  for (const entry of fs.readdirSync(assets, { recursive: true, withFileTypes: true })) {
    if (!entry.isFile()) continue;
    const from = path.join(entry.parentPath ?? entry.path, entry.name);
    copy(from, path.join(dir, path.relative(assets, from)));
  }
  return written;
}

/**
 * The esbuild plugin: after each successful build, the assets go into the build's output
 * folder (`outdir`, or the folder of `outfile`), where the bundle's `loadPyburn()` finds them.
 *   esbuild.build({entryPoints: ["page.js"], bundle: true, format: "esm", outdir: "dist",
 *                  plugins: [pyburnWeb()]})
 */
export function pyburnWeb() {
  return {
    name: "pyburn-web",
    setup(build) {
      const { outdir, outfile } = build.initialOptions;
      const dir = outdir ?? (outfile && path.dirname(outfile));
      if (!dir) throw new Error("pyburn-web's plugin needs esbuild's outdir or outfile");
      build.onEnd((result) => {
        if (result.errors.length === 0) copyAssets(path.resolve(dir));
      });
    },
  };
}
