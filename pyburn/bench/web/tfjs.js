// The TensorFlow.js peer of `pyburn bench web`: the MNIST MLP (784-128-10, with the inputs
// normalised as pyburn's MnistMLP does), batches of 64, Adam at lr 1e-3, in a custom loop
// with `optimizer.minimize` on one batch kept on the device, timed as in_page.py times
// pyburn: rounds of ROUND steps, each ended by a read of a weight (waiting for the device),
// for at least `seconds`.

const BATCH = 64;
const ROUND = 5;
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

// The draw-a-digit page's CNN (pyburn.models.MnistCNN: conv 3×3 8, batch norm, ReLU, max
// pool, conv 3×3 16, batch norm, ReLU, max pool, 784-64, ReLU, 64-10), with random weights:
// the time does not depend on their values.
function cnn() {
  const normal = (shape) => tf.randomNormal(shape, 0, 0.1);
  const norm = (channels) => [tf.zeros([channels]), tf.ones([channels]), normal([channels]), tf.ones([channels])];
  const w1 = normal([3, 3, 1, 8]);
  const w2 = normal([3, 3, 8, 16]);
  const [bn1, bn2] = [norm(8), norm(16)];
  const fc1 = [normal([784, 64]), tf.zeros([64])];
  const fc2 = [normal([64, 10]), tf.zeros([10])];
  const block = (x, w, [mean, variance, offset, scale]) =>
    tf.maxPool(tf.relu(tf.batchNorm(tf.conv2d(x, w, 1, "same"), mean, variance, offset, scale)), 2, 2, "valid");
  /** The class probabilities of one image (784 values in [0, 1]), read back. */
  return (image) => {
    const probabilities = tf.tidy(() => {
      let x = tf.tensor4d(image, [1, 28, 28, 1]).sub(MEAN).div(STD);
      x = block(block(x, w1, bn1), w2, bn2).reshape([1, 784]);
      x = tf.relu(x.matMul(fc1[0]).add(fc1[1]));
      return tf.softmax(x.matMul(fc2[0]).add(fc2[1]));
    });
    return probabilities.data().finally(() => probabilities.dispose());
  };
}

async function use(backend) {
  if (!(await tf.setBackend(backend))) throw new Error(`TF.js has no ${backend} backend here`);
  await tf.ready();
}

/** performance.now() once the first prediction of a fresh page is back (cold start). */
async function firstPrediction(backend, image) {
  await use(backend);
  await cnn()(new Float32Array(image));
  return performance.now();
}

/** Milliseconds of `count` predictions, after one untimed. */
async function latency(backend, image, count) {
  await use(backend);
  const predict = cnn();
  const pixels = new Float32Array(image);
  await predict(pixels);
  const times = [];
  for (let i = 0; i < count; i++) {
    const started = performance.now();
    await predict(pixels);
    times.push(performance.now() - started);
  }
  return times;
}

/** Milliseconds per image of `repeat` runs of `count` predictions back to back, after one
 * untimed (as in_page.py's cnn_latency times pyburn's). */
async function latencyBackToBack(backend, image, count, repeat) {
  await use(backend);
  const predict = cnn();
  const pixels = new Float32Array(image);
  await predict(pixels);
  const times = [];
  for (let run = 0; run < repeat; run++) {
    const started = performance.now();
    for (let i = 0; i < count; i++) await predict(pixels);
    times.push((performance.now() - started) / count);
  }
  return times;
}

/** Samples per second of `repeat` runs on TF.js backend `backend` ("webgpu", "cpu", "wasm"). */
async function train(backend, seconds, repeat) {
  await use(backend);
  const { step, finished } = trainer();
  step();
  await finished();
  const rates = [];
  for (let run = 0; run < repeat; run++) {
    let steps = 0;
    const started = performance.now();
    while (steps === 0 || performance.now() - started < seconds * 1000) {
      for (let i = 0; i < ROUND; i++) step();
      await finished();
      steps += ROUND;
    }
    rates.push((steps * BATCH) / ((performance.now() - started) / 1000));
  }
  return rates;
}

/** GFLOP/s of `repeat` products of two random size x size matrices, each read back (one
 * element), after one untimed (as in_page.py times pyburn's). */
async function matmul(backend, size, repeat) {
  await use(backend);
  const a = tf.randomNormal([size, size]);
  const b = tf.randomNormal([size, size]);
  const once = async () => {
    const c = tf.matMul(a, b);
    const corner = c.slice([0, 0], [1, 1]);
    await corner.data();
    tf.dispose([c, corner]);
  };
  await once();
  const rates = [];
  for (let run = 0; run < repeat; run++) {
    const started = performance.now();
    await once();
    rates.push((2 * size ** 3) / ((performance.now() - started) / 1000) / 1e9);
  }
  tf.dispose([a, b]);
  return rates;
}

window.tfjsBench = { firstPrediction, latency, latencyBackToBack, train, matmul, version: tf.version.tfjs };
document.body.dataset.ready = "true";
