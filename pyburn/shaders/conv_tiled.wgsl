// Convolution and transposed convolution as an implicit GEMM for GPUs, tiled through workgroup
// memory: the product of conv.wgsl (see there for the map from an output position and a kernel
// offset to an input position, and for `info`), computed by a workgroup of {{rows}} x {{cols}}
// invocations as a tile of 8*{{rows}} rows (output channels of a group) by 8*{{cols}} columns
// (the output positions of the box's images). The sum runs kernel offset by kernel offset
// (three nested loops) and, at each offset, over the channels in 8-deep steps: the workgroup
// stages the weight's slab (8*{{rows}} rows x 8 channels) and the matching im2col slab of the
// input (8 channels x 8*{{cols}} columns, gathered with conv.wgsl's padding checks: zero where
// a column has no input position, or past the piece's last channel) in workgroup memory, then
// each invocation accumulates its 8x8 block (rows ty*8.., columns tx*8..) from them, reading
// vec4s: 64 multiply-adds per 4 loads. An invocation stages four neighbouring columns
// (neighbouring invocations on neighbouring quads), whose input offsets it finds once per
// kernel offset, and one row of the weight, for 8 / (256 / (2*{{cols}})) and
// 8 / (256 / (8*{{rows}})) channels. Picked on hardware adapters for convolutions that fill a
// tile and a slab (`conv.pick_variant`); on CPU drivers the barriers cost more than the
// reloads they save, and conv.wgsl is used.
//
// Each result goes through the same epilogue as conv.wgsl's (see there), at row `r` and
// column `j` of the four columns n4, qd, qh, qw.
//
// Placeholders: rows, cols (invocations per workgroup along each, rows * cols = 256, each a
// power of two from 8 to 32: the slabs take 256 * (rows + cols) bytes, at most 10 KiB);
// element, out_type, bindings, bases, epilogue: as in conv.wgsl.
// info: as in conv.wgsl (the same constants).

const NB = 0;      // images in the box
const GB = 1;      // groups in the box
const RB = 2;      // rows (output channels per group) in the box
const QS = 3;      // output sizes [3]
const PIECE = 24;  // e_from, e_to, kd0, kd1, kh0, kh1, kw0, kw1, accumulate (0 or 1)
const OUT = 33;    // out: offset, strides along n, g, r, q[3]
const X = 40;      // x: offset, strides along n, g, e, p[3]
const W = 47;      // w: offset, strides along g, r, e, k[3]
const EPI = 54;    // the epilogue's operands, 7 each: as OUT

@group(0) @binding(0) var<storage, read> info: array<i32>;
@group(0) @binding(1) var<storage, read_write> out: array<{{out_type}}>;
@group(0) @binding(2) var<storage, read> x: array<{{element}}>;
@group(0) @binding(3) var<storage, read> w: array<{{element}}>;
{{bindings}}

// the slabs, channel-major: slab_w[kk * 2*{{rows}} + r / 4][r % 4] is the weight's row r at
// channel kk of the step, slab_x[kk * 2*{{cols}} + c / 4][c % 4] the input at column c
var<workgroup> slab_w: array<vec4<f32>, 16 * {{rows}}>;
var<workgroup> slab_x: array<vec4<f32>, 16 * {{cols}}>;

@compute @workgroup_size(256)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
    let rows = info[RB];
    let columns = info[NB] * info[QS] * info[QS + 1] * info[QS + 2];
    let tiles_r = (rows + 8 * {{rows}} - 1) / (8 * {{rows}});
    let tiles_c = (columns + 8 * {{cols}} - 1) / (8 * {{cols}});
    let tg = pb_group(wid, nwg);
    let g = tg / (tiles_r * tiles_c);
    if (g >= info[GB]) {
        return;
    }
    let tile = tg % (tiles_r * tiles_c);
    let row0 = (tile / tiles_c) * 8 * {{rows}};
    let col0 = (tile % tiles_c) * 8 * {{cols}};
    let t = i32(lid);
    // what this invocation stages: the quad of columns t % (2*cols) at channels t / (2*cols)
    // + every (256 / (2*cols))th, and the weight's row t % (8*rows) at channels t / (8*rows)
    // + every (256 / (8*rows))th; rows and columns past the edge are clamped (never stored)
    let quad = t % (2 * {{cols}});
    let j4 = min(vec4<i32>(col0 + 4 * quad) + vec4<i32>(0, 1, 2, 3), vec4<i32>(columns - 1));
    let staged = pb_conv_columns(j4);
    let w_row = t % (8 * {{rows}});
    let e_from = info[PIECE];
    let e_to = info[PIECE + 1];
    let x_step = info[X + 3];
    let w_step = info[W + 3];
    let x_base = vec4<i32>(info[X] + g * info[X + 2]) + staged[0] * info[X + 1];
    let w_base = info[W] + g * info[W + 1] + min(row0 + w_row, rows - 1) * info[W + 2];
    let w_kd = info[W + 4];
    let w_kh = info[W + 5];
    let w_kw = info[W + 6];
    let kd1 = info[PIECE + 3];
    let kh1 = info[PIECE + 5];
    let kw1 = info[PIECE + 7];
    let ty = t / {{cols}};
    let tx = t % {{cols}};
    var acc: array<vec4<f32>, 16>;
    for (var kd = info[PIECE + 2]; kd < kd1; kd++) {
        let pd = pb_conv_along(staged[1], kd, 0);
        for (var kh = info[PIECE + 4]; kh < kh1; kh++) {
            let ph = pb_conv_along(staged[2], kh, 1);
            for (var kw = info[PIECE + 6]; kw < kw1; kw++) {
                let pw = pb_conv_along(staged[3], kw, 2);
                let ok = (pd >= vec4<i32>(0)) & (ph >= vec4<i32>(0)) & (pw >= vec4<i32>(0));
                // a column without an input position reads its image's first element, unused
                let xk = x_base + select(vec4<i32>(0), pd + ph + pw, ok);
                let wk = w_base + kd * w_kd + kh * w_kh + kw * w_kw;
                for (var e0 = e_from; e0 < e_to; e0 += 8) {
                    for (var kk = t / (2 * {{cols}}); kk < 8; kk += 256 / (2 * {{cols}})) {
                        let e = e0 + kk;
                        var v = vec4<f32>(0.0);
                        if (e < e_to) {
                            let at = xk + vec4<i32>(e * x_step);
                            v = select(v, vec4<f32>(pb_load_x(at.x), pb_load_x(at.y),
                                                    pb_load_x(at.z), pb_load_x(at.w)), ok);
                        }
                        slab_x[kk * 2 * {{cols}} + quad] = v;
                    }
                    for (var kk = t / (8 * {{rows}}); kk < 8; kk += 256 / (8 * {{rows}})) {
                        let e = e0 + kk;
                        var v = 0.0;
                        if (e < e_to) {
                            v = pb_load_w(wk + e * w_step);
                        }
                        slab_w[kk * 2 * {{rows}} + w_row / 4][w_row % 4] = v;
                    }
                    workgroupBarrier();
                    for (var kk = 0; kk < 8; kk++) {
                        let a0 = slab_w[kk * 2 * {{rows}} + ty * 2];
                        let a1 = slab_w[kk * 2 * {{rows}} + ty * 2 + 1];
                        let b0 = slab_x[kk * 2 * {{cols}} + tx * 2];
                        let b1 = slab_x[kk * 2 * {{cols}} + tx * 2 + 1];
                        // the outer product of the rows' 8 values and the columns' 8: acc[2 * i + h] is
                        // row i, columns 4h..4h+3
                        for (var i = 0; i < 4; i++) {
                            acc[2 * i] += a0[i] * b0;
                            acc[2 * i + 1] += a0[i] * b1;
                            acc[2 * i + 8] += a1[i] * b0;
                            acc[2 * i + 9] += a1[i] * b1;
                        }
                    }
                    workgroupBarrier();
                }
            }
        }
    }
    // what the stores need from info, loaded before any store (see conv.wgsl)
    let out_base = info[OUT] + g * info[OUT + 2];
    let out_row = info[OUT + 3];
    let out_n = info[OUT + 1];
    let out_q = vec3<i32>(info[OUT + 4], info[OUT + 5], info[OUT + 6]);
    let accumulate = info[PIECE + 8] != 0;
    let row = row0 + ty * 8;
    // the invocation's eight columns, as two quads (h) of four (j)
    for (var h = 0; h < 2; h++) {
        let col = col0 + tx * 8 + 4 * h;
        let nq = pb_conv_columns(min(vec4<i32>(col) + vec4<i32>(0, 1, 2, 3),
                                     vec4<i32>(columns - 1)));
        let n4 = nq[0];
        let qd = nq[1];
        let qh = nq[2];
        let qw = nq[3];
        let out_col = n4 * out_n + qd * out_q.x + qh * out_q.y + qw * out_q.z;
{{bases}}
        for (var i = 0; i < 8; i++) {
            for (var j = 0; j < 4; j++) {
                let r = row + i;
                if (r < rows && col + j < columns) {
                    let at = out_base + r * out_row + out_col[j];
                    var s = acc[2 * i + h][j];
{{epilogue}}
                    out[at] = result;
                }
            }
        }
    }
}
