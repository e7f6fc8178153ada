// gather: out[p] = x[p with its `axis` coordinate replaced by index[p]], for every point p of
// index's shape (index_select is a gather whose index is expanded along the other dims).
//
// Placeholders: workgroup; element (stored type of x and out).
// info: [n, rank, shape[rank], then per operand (out, index, x): offset, strides[rank],
//        step along the axis (x's axis stride; 0 for the others)]

@group(0) @binding(0) var<storage, read> info: array<i32>;
@group(0) @binding(1) var<storage, read_write> out: array<{{element}}>;
@group(0) @binding(2) var<storage, read> index: array<i32>;
@group(0) @binding(3) var<storage, read> x: array<{{element}}>;

// Offset of point i in operand k, and where operand k's axis step is.
fn at(i: i32, rank: i32, k: i32) -> i32 {
    let base = 2 + rank + k * (rank + 2);
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
    let step = info[2 + rank + 2 * (rank + 2) + 1 + rank];
    out[at(i, rank, 0)] = x[at(i, rank, 2) + index[at(i, rank, 1)] * step];
}
