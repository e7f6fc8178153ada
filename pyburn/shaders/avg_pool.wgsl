// Average pooling over boxes of the three trailing spatial dims (1-d and 2-d pooling have
// leading sizes of 1): one invocation per output element sums its box and divides. Along each
// spatial dim, output position i has a row (start, stop, count) in the tables of info: the box
// covers [start, stop) (Python clipped it to the input, so padding is never read) and its
// divisor is the product of the three counts, or info[DIVISOR] when that is nonzero. Sliding
// windows (whatever the padding counts) and adaptive pooling's windows of varying size are
// both such boxes. The walk covers the offsets [k0, k1) of the largest box (KS) that Python
// chose to fit the loop budget; a piece after the first adds its share to what the earlier
// ones stored.
//
// Placeholders: workgroup; element (stored type of x and out); store (f32 `s` as element).
// info: see the constants below, then the lead dims: shape[L], x's strides along them[L],
// out's strides along them[L]; then the tables, at info[TABLES]: 3 ints per output position
// along each spatial dim in turn. Operands: out at binding 1, x at 2.

const COUNT = 0;     // output elements in the box
const LEAD = 1;      // rank L of the lead (batch and channel) dims
const QS = 2;        // output sizes [3]
const KS = 5;        // largest box sizes [3]
const PIECE = 8;     // k0, k1
const X = 10;        // x: offset, strides along the spatial dims [3]
const OUT = 14;      // out: offset, strides along the output dims [3]
const DIVISOR = 18;  // the divisor of every box, or 0: the product of the counts
const TABLES = 19;   // where the tables start
const DIMS = 20;

@group(0) @binding(0) var<storage, read> info: array<i32>;
@group(0) @binding(1) var<storage, read_write> out: array<{{element}}>;
@group(0) @binding(2) var<storage, read> x: array<{{element}}>;

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
    let row_d = info[TABLES] + 3 * qp.x;
    let row_h = info[TABLES] + 3 * (info[QS] + qp.y);
    let row_w = info[TABLES] + 3 * (info[QS] + info[QS + 1] + qp.z);
    let start = vec3<i32>(info[row_d], info[row_h], info[row_w]);
    let stop = vec3<i32>(info[row_d + 1], info[row_h + 1], info[row_w + 1]);
    let x_strides = vec3<i32>(info[X + 1], info[X + 2], info[X + 3]);
    let x_base = info[X] + pb_strided(lead, rank, DIMS, DIMS + rank);
    var total = 0.0;
    for (var k = info[PIECE]; k < info[PIECE + 1]; k++) {
        let p = start + pb_unravel3(k, KS);
        if (all(p < stop)) {
            total += pb_load_x(x_base + p.x * x_strides.x + p.y * x_strides.y
                               + p.z * x_strides.z);
        }
    }
    var divisor = f32(info[DIVISOR]);
    if (info[DIVISOR] == 0) {
        divisor = f32(info[row_d + 2] * info[row_h + 2] * info[row_w + 2]);
    }
    let lead_out = pb_strided(lead, rank, DIMS, DIMS + 2 * rank);
    let at = info[OUT] + lead_out + dot(qp, vec3<i32>(info[OUT + 1], info[OUT + 2], info[OUT + 3]));
    var s = total / divisor;
    if (info[PIECE] > 0) {
        s += pb_load_out(at);
    }
    out[at] = {{store}};
}
