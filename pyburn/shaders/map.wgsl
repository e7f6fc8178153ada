// Elementwise map: out[i] = value, for every point i of the iteration space, every operand
// read or written through its own offset and strides (so views need no copies). Unary,
// binary and ternary ops, casts, copies, fills, pads and fused chains are all this kernel.
//
// Each invocation computes `unroll` points, `workgroup` apart: neighbouring invocations
// touch neighbouring elements (coalesced on GPUs), and an input that is the same at every
// point (a scalar, or anything broadcast over the whole space) is loaded once for all of
// them. On llvmpipe, where every invocation pays for its setup and every load for its
// bounds check, that is most of the cost of a long fused chain.
//
// A fused kernel may store some of its intermediate values too (values that something else
// holds): each goes to an output of its own, `out1`, `out2`, ..., at the same point.
//
// Placeholders
//   workgroup, unroll  invocations per workgroup, points per invocation
//   out_type           stored element type of `out`
//   inputs             declarations of the other buffers, operand k at binding k + 1: the
//                      other outputs `out1`, ..., then the inputs `in<k>`
//   at                 the body of `at(i, k)` (general, or the one-dim form: no division)
//   uniforms           statements loading the inputs that are the same at every point
//   loads              statements reading the others at point i (`let a = in1[at(i, 1)];`),
//                      then the statements computing intermediate values, then the stores
//                      to the other outputs (`out1[at(i, 1)] = lv3;`)
//   value              the element stored to out[...], from the loaded values
//
// info: [n points, rank, shape[rank], then per operand k (0 = out, then the other outputs,
//        then the inputs): offset, strides[rank]]

@group(0) @binding(0) var<storage, read> info: array<i32>;
@group(0) @binding(1) var<storage, read_write> out: array<{{out_type}}>;
{{inputs}}

// Offset of point i in operand k.
fn at(i: i32, k: i32) -> i32 {
{{at}}
}

@compute @workgroup_size({{workgroup}})
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
    let first = pb_group(wid, nwg) * ({{workgroup}} * {{unroll}}) + i32(lid);
    let n = info[0];
    if (first >= n) {
        return;
    }
{{uniforms}}
    for (var u = 0; u < {{unroll}}; u++) {
        let i = first + u * {{workgroup}};
        if (i < n) {
{{loads}}
            out[at(i, 0)] = {{value}};
        }
    }
}
