#!/usr/bin/env node
// npx pyburn-web assets DIR: writes what a page needs beside its bundle into DIR (see
// assets.mjs); for Vite, DIR is the project's public/ folder.

import { copyAssets } from "./assets.mjs";

const [command, dir] = process.argv.slice(2);
if (command !== "assets" || !dir) {
  process.stderr.write("usage: npx pyburn-web assets DIR   (the folder served beside the page)\n");
  process.exit(2);
}
const written = copyAssets(dir);
console.log(`pyburn-web: ${written.length} files written into ${dir}`);
