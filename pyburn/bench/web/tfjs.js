// The TensorFlow.js peer of `pyburn bench web`: the MNIST MLP (784-128-10, with the inputs
// normalised as pyburn's MnistMLP does), batches of 64, Adam at lr 1e-3, in a custom loop
// with `optimizer.minimize` on one batch kept on the device, timed as in_page.py times
// pyburn: steps for at least `seconds`, then one read of a weight to wait for the device.

const BATCH = 64;
const MEAN = 0.1307;
const STD = 0.3081;

tf.wasm.setWasmPaths("/node_modules/@tensorflow/tfjs-backend-wasm/dist/");

function trainer() {
  const dense = (inputs, outputs) => ({
    w: tf.variable(tf.randomUniform([inputs, outputs], -1 / Math.sqrt(inputs), 1 / Math.sqrt(inputs))),
    b: tf.variable(tf.zeros([outputs])),
  });
  const fc1 = dense(784, 128);
  const fc2 = dense(128, 10);
  const x = tf.randomUniform([BATCH, 784], 0, 1);
  const labels = tf.oneHot(tf.tensor1d(Array.from({ length: BATCH }, (_, i) => (7 * i) % 10), "int32"), 10);
  const optimizer = tf.train.adam(1e-3);
  const loss = () => {
    const hidden = tf.relu(x.sub(MEAN).div(STD).matMul(fc1.w).add(fc1.b));
    return tf.losses.softmaxCrossEntropy(labels, hidden.matMul(fc2.w).add(fc2.b));
  };
  return {
    step: () => optimizer.minimize(loss),
    // `await data()`: TF.js's webgpu backend breaks on the synchronous dataSync().
    finished: () => fc2.b.data(),
  };
}

/** Samples per second of `repeat` runs on TF.js backend `backend` ("webgpu", "cpu", "wasm"). */
async function train(backend, seconds, repeat) {
  if (!(await tf.setBackend(backend))) throw new Error(`TF.js has no ${backend} backend here`);
  await tf.ready();
  const { step, finished } = trainer();
  step();
  await finished();
  const rates = [];
  for (let run = 0; run < repeat; run++) {
    let steps = 0;
    const started = performance.now();
    while (steps === 0 || performance.now() - started < seconds * 1000) {
      step();
      steps += 1;
    }
    await finished();
    rates.push((steps * BATCH) / ((performance.now() - started) / 1000));
  }
  return rates;
}

window.tfjsBench = { train, version: tf.version.tfjs };
document.body.dataset.ready = "true";
