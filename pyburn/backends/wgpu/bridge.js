// The JavaScript half of pyburn's browser GpuRuntime (browser.py): the calls Python makes
// many times per training step, each done here in one crossing of Pyodide's foreign function
// interface. Building a descriptor from a Python dict costs about 70 µs in Chromium and
// three calls on a compute pass about 17 µs; one call into this bridge costs 2 to 15 µs.
// browser.py evaluates this file once (pyodide.code.run_js); it is an expression: the
// bridge object.
({
  /** Records one dispatch into `pass`: a bind group of group 0 from the flat
   * (binding, buffer, offset, size) quadruples in `flat`, then the pipeline and the grid. */
  dispatch(device, pass, pipeline, layout, x, y, z, ...flat) {
    const entries = [];
    for (let i = 0; i < flat.length; i += 4) {
      entries.push({ binding: flat[i], resource: { buffer: flat[i + 1], offset: flat[i + 2], size: flat[i + 3] } });
    }
    pass.setPipeline(pipeline);
    pass.setBindGroup(0, device.createBindGroup({ layout, entries }));
    pass.dispatchWorkgroups(x, y, z);
  },

  /** Ends `pass` and submits the encoder it belongs to. */
  submit(device, encoder, pass) {
    pass.end();
    device.queue.submit([encoder.finish()]);
  },

  /** Copies the bytes of the Python object `data` (a PyProxy of a bytes-like object) into
   * `buffer` at `offset`: a view of Python's memory, no copy before WebGPU's own. */
  write(device, buffer, offset, data) {
    const view = data.getBuffer("u8");
    try {
      device.queue.writeBuffer(buffer, offset, view.data);
    } finally {
      view.release();
    }
  },

  /** A storage buffer of `size` bytes usable as copy source and destination. */
  buffer(device, size) {
    const usage = GPUBufferUsage.STORAGE | GPUBufferUsage.COPY_SRC | GPUBufferUsage.COPY_DST;
    return device.createBuffer({ size, usage });
  },

  /** A compute pipeline of entry point `entry` of the WGSL module `code`, and the layout of
   * its bind group 0. */
  pipeline(device, code, entry) {
    const module = device.createShaderModule({ code });
    const pipeline = device.createComputePipeline({ layout: "auto", compute: { module, entryPoint: entry } });
    return [pipeline, pipeline.getBindGroupLayout(0)];
  },

  /** Resolves to a copy of `size` bytes of `buffer` from `offset`, once the work submitted
   * so far is done (through a mappable staging buffer, destroyed afterwards). */
  async read(device, buffer, offset, size) {
    const staging = device.createBuffer({ size, usage: GPUBufferUsage.MAP_READ | GPUBufferUsage.COPY_DST });
    try {
      const encoder = device.createCommandEncoder();
      encoder.copyBufferToBuffer(buffer, offset, staging, 0, size);
      device.queue.submit([encoder.finish()]);
      await staging.mapAsync(GPUMapMode.READ);
      return new Uint8Array(staging.getMappedRange().slice(0));
    } finally {
      staging.destroy();
    }
  },
})
