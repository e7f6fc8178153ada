"""The npm package of the loader (`make npm`): installed into a scratch project with npm; its
types check a page with TypeScript (and refuse a wrong one); the page bundled with esbuild and
the package's plugin runs in Chromium, where a matrix product of typed arrays equals numpy's
in float64."""

from __future__ import annotations

import json
import random
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest
from conftest import ROOT, Watched

from pyburn.web.serve import serving

PACKAGES = ROOT / "build" / "npm"
ESBUILD = ROOT / "node_modules" / "esbuild" / "lib" / "main.js"
TSC = ROOT / "node_modules" / "typescript" / "bin" / "tsc"
TYPED = """import { loadPyburn, type TensorArray } from "pyburn-web";

const py = await loadPyburn({ baseURL: "./", onEvent: (name) => console.log(name) });
const result = await py.call("predict", new Float32Array(4));
const shape: number[] = (result as TensorArray).shape;
const stop = py.on("status", (status) => console.log(status.stage.toUpperCase()));
stop();
console.log(shape, py.info.devices[0], py.app?.exports, py.gpu.available);
"""
MISTYPED = """import { loadPyburn } from "pyburn-web";

const py = await loadPyburn({ baseURL: 3 });
await py.run(42);
"""
PAGE = """import { loadPyburn } from "pyburn-web";

const py = await loadPyburn();
await py.run("import pyburn\\ndef product(a, b):\\n" +
             "    return pyburn.tensor(a).reshape(3, 4) @ pyburn.tensor(b).reshape(4, 2)");
const [a, b] = JSON.parse(document.body.dataset.inputs);
const result = await py.call("product", new Float32Array(a), new Float32Array(b));
document.body.dataset.result = JSON.stringify({kind: result.constructor.name,
                                               shape: result.shape, values: Array.from(result)});
document.body.dataset.ready = "";
"""
BUILD = f"""import * as esbuild from {json.dumps(str(ESBUILD))};
import {{ pyburnWeb }} from "pyburn-web/plugin";

await esbuild.build({{entryPoints: ["page.js"], bundle: true, format: "esm", outdir: "dist",
                     plugins: [pyburnWeb()], logLevel: "error"}});
"""


@pytest.fixture(scope="module")
def project(tmp_path_factory) -> Path:
    """A scratch project with the package installed by npm."""
    (package,) = PACKAGES.glob("pyburn-web-*.tgz") or pytest.fail(
        "build/npm holds no pyburn-web-*.tgz: run `make npm`")
    project = tmp_path_factory.mktemp("npm-project")
    (project / "package.json").write_text('{"name": "page", "private": true, "type": "module"}')
    subprocess.run([shutil.which("npm"), "install", "--prefer-offline", "--no-audit",
                    "--no-fund", str(package)], cwd=project, check=True, capture_output=True,
                   timeout=300)
    return project


@pytest.fixture(scope="module")
def bundled(project) -> Path:
    """The page bundled by esbuild with the package's plugin: the output folder."""
    (project / "page.js").write_text(PAGE)
    (project / "build.mjs").write_text(BUILD)
    subprocess.run(["node", "build.mjs"], cwd=project, check=True, capture_output=True,
                   timeout=120)
    return project / "dist"


def typecheck(project: Path, source: str) -> subprocess.CompletedProcess:
    """TypeScript's verdict on the page `source`, against the installed package's types."""
    (project / "check.ts").write_text(source)
    return subprocess.run(["node", str(TSC), "--noEmit", "--strict", "--target", "es2022",
                           "--module", "esnext", "--moduleResolution", "bundler", "--lib",
                           "es2022,dom", "check.ts"], cwd=project, capture_output=True,
                          text=True, timeout=120)


def test_the_types_check_a_page_and_refuse_a_wrong_one(project):
    assert typecheck(project, TYPED).returncode == 0, typecheck(project, TYPED).stdout
    refused = typecheck(project, MISTYPED)
    assert refused.returncode != 0
    assert "'number' is not assignable to type 'string'" in refused.stdout


def test_the_bundled_page_runs_pyburn(browser, bundled):
    rng = random.Random(0)
    a = [rng.uniform(-1, 1) for _ in range(12)]
    b = [rng.uniform(-1, 1) for _ in range(8)]
    inputs = json.dumps([a, b]).replace('"', "&quot;")
    (bundled / "index.html").write_text(f'<!doctype html><body data-inputs="{inputs}">'
                                        '<script type="module" src="page.js"></script></body>')
    with serving({"/": bundled}) as base:
        watched = Watched(browser, base)
        try:
            page = watched.context.new_page()
            page.on("pageerror", lambda error: watched.errors.append(str(error)))
            page.goto(base)
            page.wait_for_selector("body[data-ready]", state="attached", timeout=120_000)
            result = json.loads(page.get_attribute("body", "data-result"))
            watched.check()
        finally:
            watched.close()
    f32 = np.float32
    expected = (np.array(a, f32).astype(np.float64).reshape(3, 4)
                @ np.array(b, f32).astype(np.float64).reshape(4, 2))
    assert (result["kind"], result["shape"]) == ("Float32Array", [3, 2])
    assert result["values"] == pytest.approx(expected.ravel().tolist(), abs=1e-5)
