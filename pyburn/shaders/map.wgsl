// Elementwise map: out[i] = value, for every point i of the iteration space, every operand
// read or written through its own offset and strides (so views need no copies). Unary,
// binary and ternary ops, casts, copies, fills and pads are all this kernel.
//
// Placeholders
//   workgroup  threads per workgroup
//   out_type   stored element type of `out`
//   inputs     declarations of the inputs, `in1` at binding 2, `in2` at binding 3, ...
//   loads      statements reading them: `let a = in1[at(i, rank, 1)];`
//   value      the element stored to out[...], from the loaded values
//
// info: [n points, rank, shape[rank], then per operand k (0 = out, 1.. = inputs):
//        offset, strides[rank]]

@group(0) @binding(0) var<storage, read> info: array<i32>;
@group(0) @binding(1) var<storage, read_write> out: array<{{out_type}}>;
{{inputs}}

// Offset of point i in operand k.
fn at(i: i32, rank: i32, k: i32) -> i32 {
    let base = 2 + rank + k * (rank + 1);
    return info[base] + pb_strided(i, rank, 2, base + 1);
}

@compute @workgroup_size({{workgroup}})
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
    let i = pb_group(wid, nwg) * {{workgroup}} + i32(lid);
    if (i >= info[0]) {
        return;
    }
    let rank = info[1];
{{loads}}
    out[at(i, rank, 0)] = {{value}};
}
