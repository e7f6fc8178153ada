"""The wasm backend (in progress, issue 17): tensors in a WebAssembly memory, primitives as
pyburn's own WebAssembly SIMD kernels, run by the JavaScript engine under Pyodide and by
wasmtime on the desktop. So far: the assembler (`assemble`), the engines (`engine`,
`browser`, `native`), the memory (`memory`), the elementwise kernels generated from the op
table (`elementwise`) and the matmul kernel (`matmul`). It registers no device yet."""
