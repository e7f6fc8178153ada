// From a drawing to MNIST's input: MNIST's digits were scaled, keeping their aspect ratio, to
// fit a 20×20 box, then placed in a 28×28 image with their centre of mass in the middle. A
// drawing gets the same treatment, so the model sees what it was trained on.

const SIZE = 28;
const BOX = 20;
// a canvas pixel counts as ink above this grey level (0..1), for the bounding box
const INK = 0.05;

/**
 * The grey levels (0..1, white ink on black) of `canvas`, as an MNIST image: a Float32Array
 * of 28×28 values, row by row; null when nothing is drawn.
 */
export function mnistPixels(canvas) {
  const { width, height } = canvas;
  const rgba = canvas.getContext("2d").getImageData(0, 0, width, height).data;
  let top = height, bottom = -1, left = width, right = -1;
  for (let y = 0; y < height; y++) {
    for (let x = 0; x < width; x++) {
      if (rgba[4 * (y * width + x)] / 255 > INK) {
        top = Math.min(top, y);
        bottom = Math.max(bottom, y);
        left = Math.min(left, x);
        right = Math.max(right, x);
      }
    }
  }
  if (bottom < 0) return null;
  const boxW = right - left + 1;
  const boxH = bottom - top + 1;
  const scale = BOX / Math.max(boxW, boxH);
  const outW = Math.max(1, Math.round(boxW * scale));
  const outH = Math.max(1, Math.round(boxH * scale));
  const small = areaResample(rgba, width, left, top, boxW, boxH, outW, outH);
  return centred(small, outW, outH);
}

/**
 * The box (left, top, boxW, boxH) of the red channel of `rgba` (rows of `width` pixels)
 * resized to outW×outH by area averaging: each output pixel is the mean of the source area it
 * covers, fractions of pixels included (what anti-aliased scaling of the digits did).
 */
function areaResample(rgba, width, left, top, boxW, boxH, outW, outH) {
  const out = new Float32Array(outW * outH);
  const sx = outW / boxW;
  const sy = outH / boxH;
  for (let y = 0; y < boxH; y++) {
    const y0 = y * sy;
    const y1 = y0 + sy;
    for (let x = 0; x < boxW; x++) {
      const value = rgba[4 * ((top + y) * width + left + x)] / 255;
      if (value === 0) continue;
      const x0 = x * sx;
      const x1 = x0 + sx;
      for (let ty = Math.floor(y0); ty < Math.min(Math.ceil(y1), outH); ty++) {
        const wy = Math.min(y1, ty + 1) - Math.max(y0, ty);
        for (let tx = Math.floor(x0); tx < Math.min(Math.ceil(x1), outW); tx++) {
          const wx = Math.min(x1, tx + 1) - Math.max(x0, tx);
          out[ty * outW + tx] += value * wx * wy;
        }
      }
    }
  }
  return out;
}

/**
 * `small` (w×h) placed in a 28×28 image with its centre of mass on pixel (14, 14), counting
 * pixels by their index: where MNIST's digits have theirs (14.0 ± 0.3 over the test set).
 */
function centred(small, w, h) {
  let mass = 0, cx = 0, cy = 0;
  for (let y = 0; y < h; y++) {
    for (let x = 0; x < w; x++) {
      const v = small[y * w + x];
      mass += v;
      cx += v * x;
      cy += v * y;
    }
  }
  const dx = Math.round(SIZE / 2 - cx / mass);
  const dy = Math.round(SIZE / 2 - cy / mass);
  const image = new Float32Array(SIZE * SIZE);
  for (let y = 0; y < h; y++) {
    for (let x = 0; x < w; x++) {
      const tx = x + dx;
      const ty = y + dy;
      if (tx >= 0 && tx < SIZE && ty >= 0 && ty < SIZE) {
        image[ty * SIZE + tx] = Math.min(1, small[y * w + x]);
      }
    }
  }
  return image;
}

/** Draws a 28×28 image (values 0..1) onto `canvas`, scaled up with visible pixels. */
export function showPixels(canvas, image) {
  const context = canvas.getContext("2d");
  const cell = canvas.width / SIZE;
  context.fillStyle = "#000";
  context.fillRect(0, 0, canvas.width, canvas.height);
  for (let i = 0; i < SIZE * SIZE; i++) {
    const grey = Math.round(255 * image[i]);
    context.fillStyle = `rgb(${grey},${grey},${grey})`;
    context.fillRect((i % SIZE) * cell, Math.floor(i / SIZE) * cell, cell, cell);
  }
}
