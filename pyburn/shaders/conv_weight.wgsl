// A convolution's gradient with respect to its weight, as an implicit GEMM:
//
//     dw[g, r, c, k] = sum over images n and output positions q of
//                      gy[n, g, r, q] * x[n, g, c, q * stride + k * dilation - padding]
//
// (g a group, r an output channel and c an input channel within it, k a kernel offset; three
// spatial coordinates each, 1-d and 2-d being 3-d with leading sizes of 1). Each invocation
// computes 4 output channels by 4 input channels of one kernel offset, so the input position
// is the same for its four columns; the output positions whose input position lies inside
// the input form a range per dim (`info`'s table, from Python), so the loops have no bounds
// tests.
//
// The sum is split (split-K): the (image, position) steps of the piece Python chose to fit
// the loop budget, in row-major order and per kernel offset, are cut into SPLITS chunks of
// nearly equal length, and chunk s writes its partial sum to slot s of dw (Python sums the
// slots afterwards), so that a small dw still gives a large GPU many workgroups. The chunk
// is the slowest part of the workgroup index: neighbouring workgroups read the same images.
// The first piece stores, later ones add.
//
// Placeholders: rows, cols (invocations per workgroup along each, rows * cols = 64);
// element (the stored type of every operand); store (f32 `s` as element).
// info: see the constants below, then the table: per spatial dim d and kernel coordinate i
// along it, [first q, end q, shift] with input coordinate q * stride + shift (the entries of
// dim d start at TABLE + 3 * (sum of the kernel sizes before d)). Operands: dw (its slots)
// at binding 1, gy at 2, x at 3.

const GB = 0;      // groups in the box
const RB = 1;      // rows (output channels per group) in the box
const CB = 2;      // columns (input channels per group) in the box
const SPLITS = 3;  // chunks the steps are split into
const ADD = 4;     // 1: add to what dw holds (a later piece), 0: store
const KS = 5;      // kernel sizes [3]
const STRIDE = 8;  // the convolution's strides [3]
const PIECE = 11;  // n0, n1, then q0[3], q1[3]: the images and output positions summed here
const DW = 19;     // dw: offset, strides along the slot, g, r, c, k[3]
const GY = 27;     // gy: offset, strides along n, g, r, q[3]
const X = 34;      // x: offset, strides along n, g, c, p[3]
const TABLE = 41;

@group(0) @binding(0) var<storage, read> info: array<i32>;
@group(0) @binding(1) var<storage, read_write> dw: array<{{element}}>;
@group(0) @binding(2) var<storage, read> gy: array<{{element}}>;
@group(0) @binding(3) var<storage, read> x: array<{{element}}>;

// [first q, end q, shift] of kernel coordinate i along spatial dim d, the range cut to the
// piece's output positions.
fn span(d: i32, i: i32) -> vec3<i32> {
    var at = TABLE;
    for (var e = 0; e < d; e++) {
        at += 3 * info[KS + e];
    }
    at += 3 * i;
    return vec3<i32>(max(info[at], info[PIECE + 2 + d]), min(info[at + 1], info[PIECE + 5 + d]),
                     info[at + 2]);
}

@compute @workgroup_size(64)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
    let rows = info[RB];
    let columns = info[CB];
    let offsets = info[KS] * info[KS + 1] * info[KS + 2];
    let tiles_r = (rows + 4 * {{rows}} - 1) / (4 * {{rows}});
    let tiles_c = (columns + 4 * {{cols}} - 1) / (4 * {{cols}});
    let per_chunk = info[GB] * offsets * tiles_r * tiles_c;
    let t = pb_group(wid, nwg);
    let chunk = t / per_chunk;
    if (chunk >= info[SPLITS]) {
        return;
    }
    let g = (t % per_chunk) / (offsets * tiles_r * tiles_c);
    let k = (t / (tiles_r * tiles_c)) % offsets;
    let tile = t % (tiles_r * tiles_c);
    let row = (tile / tiles_c) * 4 * {{rows}} + (i32(lid) / {{cols}}) * 4;
    let col = (tile % tiles_c) * 4 * {{cols}} + (i32(lid) % {{cols}}) * 4;
    // rows and columns past the edge are clamped for loading; their results are not stored
    let r4 = min(vec4<i32>(row) + vec4<i32>(0, 1, 2, 3), vec4<i32>(rows - 1));
    let c4 = min(vec4<i32>(col) + vec4<i32>(0, 1, 2, 3), vec4<i32>(columns - 1));
    let kd = k / (info[KS + 1] * info[KS + 2]);
    let kh = (k / info[KS + 2]) % info[KS + 1];
    let kw = k % info[KS + 2];
    let sd = span(0, kd);
    let sh = span(1, kh);
    let sw = span(2, kw);
    // this kernel offset's steps: lines (n, qd, qh) of `width` positions qw each
    let depth = max(0, sd.y - sd.x);
    let height = max(0, sh.y - sh.x);
    let width = max(0, sw.y - sw.x);
    let steps = (info[PIECE + 1] - info[PIECE]) * depth * height * width;
    let share = steps / info[SPLITS];
    let rest = steps % info[SPLITS];
    let first = chunk * share + min(chunk, rest);
    let end = first + share + select(0, 1, chunk < rest);
    // (divisors of 1 where a size is 0: there are no steps then, and the loop does not run)
    let line = first / max(width, 1);
    var qw0 = first - line * width;
    var qh = sh.x + line % max(height, 1);
    var qd = sd.x + (line / max(height, 1)) % max(depth, 1);
    var n = info[PIECE] + line / max(height * depth, 1);
    let gy_base = vec4<i32>(info[GY] + g * info[GY + 2]) + r4 * info[GY + 3];
    let x_base = vec4<i32>(info[X] + g * info[X + 2]) + c4 * info[X + 3];
    let gy_step = vec4<i32>(info[GY + 6]);
    let x_step = vec4<i32>(info[STRIDE + 2] * info[X + 6]);
    var acc: array<vec4<f32>, 4>;
    var at = first;
    while (at < end) {
        let stop = min(width, qw0 + end - at);
        let qw = sw.x + qw0;
        var gq = gy_base + vec4<i32>(n * info[GY + 1] + qd * info[GY + 4] + qh * info[GY + 5]
                                     + qw * info[GY + 6]);
        var xq = x_base + vec4<i32>(n * info[X + 1] + (qd * info[STRIDE] + sd.z) * info[X + 4]
                                    + (qh * info[STRIDE + 1] + sh.z) * info[X + 5]
                                    + (qw * info[STRIDE + 2] + sw.z) * info[X + 6]);
        for (var i = qw0; i < stop; i++) {
            let av = vec4<f32>(pb_load_gy(gq.x), pb_load_gy(gq.y), pb_load_gy(gq.z),
                               pb_load_gy(gq.w));
            let bv = vec4<f32>(pb_load_x(xq.x), pb_load_x(xq.y), pb_load_x(xq.z), pb_load_x(xq.w));
            acc[0] += av.x * bv;
            acc[1] += av.y * bv;
            acc[2] += av.z * bv;
            acc[3] += av.w * bv;
            gq += gy_step;
            xq += x_step;
        }
        at += stop - qw0;
        qw0 = 0;
        qh++;
        if (qh == sh.y) {
            qh = sh.x;
            qd++;
            if (qd == sd.y) {
                qd = sd.x;
                n++;
            }
        }
    }
    let base = info[DW] + chunk * info[DW + 1] + g * info[DW + 2] + kd * info[DW + 5]
        + kh * info[DW + 6] + kw * info[DW + 7];
    for (var i = 0; i < 4; i++) {
        for (var j = 0; j < 4; j++) {
            if (row + i < rows && col + j < columns) {
                let to = base + (row + i) * info[DW + 3] + (col + j) * info[DW + 4];
                var s = acc[i][j];
                if (info[ADD] != 0) {
                    s += pb_load_dw(to);
                }
                dw[to] = {{store}};
            }
        }
    }
}
