// Max pooling over the three trailing spatial dims (1-d and 2-d pooling have leading sizes of
// 1), padded with -inf: one invocation per output element walks its window in row-major
// order and keeps the first maximum, NaN counting as the largest. The position stored (when
// the kernel has an index output) is the flat index of that element within the unpadded
// spatial dims; padding is never read, so a window whose elements are all -inf names its
// first element inside the input. The walk covers the window offsets [k0, k1) that Python
// chose to fit the loop budget; a piece after the first merges with what the earlier ones
// stored (their offsets come first, so they win ties).
//
// Placeholders: workgroup; element (stored type of x and out); store (f32 `s` as element);
// index_binding (the declaration of `index`, binding 3, or nothing); previous_index (the
// index stored by the earlier pieces, or 0 without an index output); store_index (a
// statement storing `best_at` at `index[at_index]`, or nothing).
// info: see the constants below, then the lead dims: shape[L], x's strides along them[L],
// out's strides along them[L]. Operands: out at binding 1, x at 2, index at 3 (the same
// strides as out).

const COUNT = 0;    // output elements in the box
const LEAD = 1;     // rank L of the lead (batch and channel) dims
const QS = 2;       // output sizes [3]
const SS = 5;       // input sizes [3]
const KS = 8;       // window sizes [3]
const STRIDE = 11;  // [3]
const PAD = 14;     // padding before [3]
const DIL = 17;     // dilation [3]
const PIECE = 20;   // k0, k1
const X = 22;       // x: offset, strides along the spatial dims [3]
const OUT = 26;     // out: offset, strides along the output dims [3]
const INDEX = 30;   // index: offset
const DIMS = 31;

@group(0) @binding(0) var<storage, read> info: array<i32>;
@group(0) @binding(1) var<storage, read_write> out: array<{{element}}>;
@group(0) @binding(2) var<storage, read> x: array<{{element}}>;
{{index_binding}}

@compute @workgroup_size({{workgroup}})
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
    let i = pb_group(wid, nwg) * {{workgroup}} + i32(lid);
    if (i >= info[COUNT]) {
        return;
    }
    let rank = info[LEAD];
    let positions = info[QS] * info[QS + 1] * info[QS + 2];
    let lead = i / positions;
    let q = i % positions;
    let qp = pb_unravel3(q, QS);
    let origin = qp * vec3<i32>(info[STRIDE], info[STRIDE + 1], info[STRIDE + 2])
        - vec3<i32>(info[PAD], info[PAD + 1], info[PAD + 2]);
    let dilation = vec3<i32>(info[DIL], info[DIL + 1], info[DIL + 2]);
    let sizes = vec3<i32>(info[SS], info[SS + 1], info[SS + 2]);
    let x_strides = vec3<i32>(info[X + 1], info[X + 2], info[X + 3]);
    let x_base = info[X] + pb_strided(lead, rank, DIMS, DIMS + rank);
    var best = -pb_inf();
    var best_at = -1;
    for (var k = info[PIECE]; k < info[PIECE + 1]; k++) {
        let p = origin + pb_unravel3(k, KS) * dilation;
        if (all(p >= vec3<i32>(0)) && all(p < sizes)) {
            let value = pb_load_x(x_base + p.x * x_strides.x + p.y * x_strides.y
                                  + p.z * x_strides.z);
            if (best_at < 0 || (!pb_isnan(best) && (pb_isnan(value) || value > best))) {
                best = value;
                best_at = (p.x * sizes.y + p.y) * sizes.z + p.z;
            }
        }
    }
    let lead_out = pb_strided(lead, rank, DIMS, DIMS + 2 * rank);
    let q_out = dot(qp, vec3<i32>(info[OUT + 1], info[OUT + 2], info[OUT + 3]));
    let at = info[OUT] + lead_out + q_out;
    let at_index = info[INDEX] + lead_out + q_out;
    if (info[PIECE] > 0) {
        let previous = pb_load_out(at);
        let previous_at = {{previous_index}};
        let wins = best_at >= 0 && !pb_isnan(previous) && (pb_isnan(best) || best > previous);
        if (previous_at >= 0 && !wins) {
            return;
        }
    }
    let s = best;
    out[at] = {{store}};
    {{store_index}}
}
