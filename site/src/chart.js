// A small line chart on a canvas: series of (x, y) points, each with its own y range.

export class Chart {
  /** @param {HTMLCanvasElement} canvas */
  constructor(canvas) {
    this.canvas = canvas;
    this.series = new Map();
    this.margin = { left: 44, right: 44, top: 12, bottom: 26 };
  }

  /** Declares a series: colour, y range (null: from its points), and which axis it labels. */
  define(name, { color, range = null, axis = null, dots = false }) {
    this.series.set(name, { color, range, axis, dots, points: [] });
  }

  add(name, x, y) {
    this.series.get(name).points.push([x, y]);
  }

  /** Replaces a series' points ([x, y] pairs). */
  set(name, points) {
    this.series.get(name).points = points;
  }

  clear() {
    for (const s of this.series.values()) s.points = [];
    this.draw();
  }

  draw() {
    const { canvas, margin } = this;
    const pen = canvas.getContext("2d");
    const width = canvas.width - margin.left - margin.right;
    const height = canvas.height - margin.top - margin.bottom;
    pen.clearRect(0, 0, canvas.width, canvas.height);
    pen.font = "11px system-ui, sans-serif";
    pen.strokeStyle = "#d9dee3";
    pen.strokeRect(margin.left, margin.top, width, height);
    const all = [...this.series.values()].flatMap((s) => s.points);
    const xMax = Math.max(1, ...all.map(([x]) => x));
    pen.fillStyle = "#5b6570";
    pen.textAlign = "center";
    for (let i = 0; i <= 4; i++) {
      const x = Math.round((xMax * i) / 4);
      pen.fillText(String(x), margin.left + (width * x) / xMax, canvas.height - 8);
    }
    for (const s of this.series.values()) {
      if (s.points.length === 0) continue;
      const ys = s.points.map(([, y]) => y);
      const [lo, hi] = s.range ?? [0, Math.max(...ys) * 1.05 || 1];
      const at = ([x, y]) => [
        margin.left + (width * x) / xMax,
        margin.top + height * (1 - (y - lo) / (hi - lo)),
      ];
      pen.strokeStyle = pen.fillStyle = s.color;
      if (s.dots) {
        for (const point of s.points) {
          const [px, py] = at(point);
          pen.beginPath();
          pen.arc(px, py, 3.5, 0, 2 * Math.PI);
          pen.fill();
        }
      } else {
        pen.beginPath();
        s.points.forEach((point, i) => (i ? pen.lineTo(...at(point)) : pen.moveTo(...at(point))));
        pen.stroke();
      }
      if (s.axis) {
        const left = s.axis === "left";
        pen.textAlign = left ? "right" : "left";
        const x = left ? margin.left - 4 : margin.left + width + 4;
        pen.fillText(hi.toFixed(2), x, margin.top + 8);
        pen.fillText(lo.toFixed(2), x, margin.top + height);
      }
    }
  }
}
