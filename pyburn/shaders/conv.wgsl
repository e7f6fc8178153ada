// Convolution as an implicit GEMM, for the forward and the transposed convolution alike:
//
//     out[n, g, r, q] = sum over e and kernel offsets k of  w[g, r, e, k] * x[n, g, e, p(q, k)]
//
// (g a group, r an output channel within it, e an input channel within it, q an output
// position and k a kernel offset, each with three spatial coordinates). No column buffer is
// made: the input position p(q, k) is computed per spatial dim as num = q * A + k * B + C,
// which exists when num >= 0, num % D == 0 and num / D < the input's size; otherwise the
// term is zero (padding, or, in a transposed convolution, an offset the stride skips).
//     convolution:             A = stride, B = dilation,  C = -padding before, D = 1
//     transposed convolution:  A = 1,      B = -dilation, C = padding,         D = stride
// 1-d and 2-d convolutions are 3-d ones with leading spatial sizes of 1.
//
// Register-blocked like matmul.wgsl: each invocation computes 4 rows by 4 columns (columns
// are the output positions of every image in the box); a workgroup of {{rows}} x {{cols}}
// invocations covers a tile of 4*{{rows}} rows by 4*{{cols}} columns. An invocation finds its
// four columns' input offsets along a spatial dim once per kernel coordinate along it (three
// nested loops; `pb_conv_along`), then runs the channel loop with nothing in it but loads and multiply-adds;
// a kernel offset, row or plane that none of its columns uses is skipped. The loops run over
// the piece of channels [e_from, e_to) and kernel coordinates [kd0, kd1) x [kh0, kh1) x
// [kw0, kw1) that Python chose to fit the loop budget; pieces after the first add to the
// output.
//
// Each result goes through an epilogue before it is stored: elementwise code over it
// (`anchor`) and other inputs at the same point (a bias, a per-channel scale, an activation:
// consumers the fusion backend fused into the convolution); a plain convolution's only
// stores it (adding what is there in pieces after the first).
//
// This is the kernel for CPU drivers (llvmpipe, SwiftShader) and small convolutions;
// conv_tiled.wgsl computes the same product through workgroup memory on GPUs, with the same
// info and epilogue (`conv.pick_variant` chooses).
//
// Placeholders: rows, cols (invocations per workgroup along each, rows * cols = 64);
// element (the stored type of x and w); out_type (out's);
// bindings (declarations of the epilogue's operands, from binding 4 on); bases (statements
// before the store loop: where each starts, for the group and the four columns); epilogue
// (statements computing `result`, the value stored to out, from `s`, the sum, at row `r`
// and column `j` of the block).
// info: see the constants below, then per epilogue operand the layout of OUT; operands: out
// at binding 1, x at 2, w at 3, the epilogue's from 4 on. The helpers both kernels share
// (`pb_conv_columns`, `pb_conv_along` in functions.wgsl) read it by these numbers.

const NB = 0;      // images in the box
const GB = 1;      // groups in the box
const RB = 2;      // rows (output channels per group) in the box
const QS = 3;      // output sizes [3]
const SS = 6;      // input sizes [3]
const KS = 9;      // kernel sizes [3]
const MAP = 12;    // A[3], B[3], C[3], D[3]
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

@compute @workgroup_size(64)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
    let rows = info[RB];
    let positions = info[QS] * info[QS + 1] * info[QS + 2];
    let columns = info[NB] * positions;
    let tiles_r = (rows + 4 * {{rows}} - 1) / (4 * {{rows}});
    let tiles_c = (columns + 4 * {{cols}} - 1) / (4 * {{cols}});
    let t = pb_group(wid, nwg);
    let g = t / (tiles_r * tiles_c);
    if (g >= info[GB]) {
        return;
    }
    let tile = t % (tiles_r * tiles_c);
    let row = (tile / tiles_c) * 4 * {{rows}} + (i32(lid) / {{cols}}) * 4;
    let col = (tile % tiles_c) * 4 * {{cols}} + (i32(lid) % {{cols}}) * 4;
    // rows and columns past the edge are clamped for loading; their results are not stored
    let r4 = min(vec4<i32>(row) + vec4<i32>(0, 1, 2, 3), vec4<i32>(rows - 1));
    let j4 = min(vec4<i32>(col) + vec4<i32>(0, 1, 2, 3), vec4<i32>(columns - 1));
    let nq = pb_conv_columns(j4);
    let n4 = nq[0];
    let qd = nq[1];
    let qh = nq[2];
    let qw = nq[3];
    let e_from = info[PIECE];
    let e_to = info[PIECE + 1];
    let x_step = vec4<i32>(info[X + 3]);
    let w_step = vec4<i32>(info[W + 3]);
    let x_base = vec4<i32>(info[X] + g * info[X + 2] + e_from * info[X + 3])
        + n4 * info[X + 1];
    let w_base = vec4<i32>(info[W] + g * info[W + 1] + e_from * info[W + 3])
        + r4 * info[W + 2];
    let w_kd = info[W + 4];
    let w_kh = info[W + 5];
    let w_kw = info[W + 6];
    let kd1 = info[PIECE + 3];
    let kh1 = info[PIECE + 5];
    let kw1 = info[PIECE + 7];
    var acc: array<vec4<f32>, 4>;
    for (var kd = info[PIECE + 2]; kd < kd1; kd++) {
        let pd = pb_conv_along(qd, kd, 0);
        if (!any(pd >= vec4<i32>(0))) {
            continue;
        }
        for (var kh = info[PIECE + 4]; kh < kh1; kh++) {
            let ph = pb_conv_along(qh, kh, 1);
            let ok_dh = (pd >= vec4<i32>(0)) & (ph >= vec4<i32>(0));
            if (!any(ok_dh)) {
                continue;
            }
            let w_dh = w_base + vec4<i32>(kd * w_kd + kh * w_kh);
            for (var kw = info[PIECE + 6]; kw < kw1; kw++) {
                let pw = pb_conv_along(qw, kw, 2);
                let ok = ok_dh & (pw >= vec4<i32>(0));
                if (!any(ok)) {
                    continue;
                }
                // a column without an input position reads its image's first element, unused
                var xk = x_base + select(vec4<i32>(0), pd + ph + pw, ok);
                var wk = w_dh + vec4<i32>(kw * w_kw);
                for (var e = e_from; e < e_to; e++) {
                    let av = vec4<f32>(pb_load_w(wk.x), pb_load_w(wk.y), pb_load_w(wk.z),
                                       pb_load_w(wk.w));
                    let bv = select(vec4<f32>(0.0), vec4<f32>(pb_load_x(xk.x), pb_load_x(xk.y),
                                                              pb_load_x(xk.z), pb_load_x(xk.w)),
                                    ok);
                    acc[0] += av.x * bv;
                    acc[1] += av.y * bv;
                    acc[2] += av.z * bv;
                    acc[3] += av.w * bv;
                    xk += x_step;
                    wk += w_step;
                }
            }
        }
    }
    // what the stores need from info, loaded before any store (a store to out could, for
    // all the compiler knows, change info)
    let out_base = info[OUT] + g * info[OUT + 2];
    let out_col = n4 * info[OUT + 1] + qd * info[OUT + 4] + qh * info[OUT + 5]
        + qw * info[OUT + 6];
    let out_row = info[OUT + 3];
    let accumulate = info[PIECE + 8] != 0;
{{bases}}
    for (var i = 0; i < 4; i++) {
        for (var j = 0; j < 4; j++) {
            let r = row + i;
            if (r < rows && col + j < columns) {
                let at = out_base + r * out_row + out_col[j];
                var s = acc[i][j];
{{epilogue}}
                out[at] = result;
            }
        }
    }
}
