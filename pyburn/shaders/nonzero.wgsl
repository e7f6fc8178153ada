// nonzero: the coordinates of every nonzero element, in row-major order. `found` is the
// inclusive running count of nonzero elements (a cumsum of the truth values), so element i,
// when nonzero, is row found[i] - 1 of the output.
//
// Placeholders: workgroup.
// info: [n in this launch, rank, shape[rank], index of the launch's first element,
//        flags offset, found offset, out offset]

@group(0) @binding(0) var<storage, read> info: array<i32>;
@group(0) @binding(1) var<storage, read_write> out: array<i32>;
@group(0) @binding(2) var<storage, read> flags: array<u32>;
@group(0) @binding(3) var<storage, read> found: array<i32>;

@compute @workgroup_size({{workgroup}})
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
    let i = pb_group(wid, nwg) * {{workgroup}} + i32(lid);
    if (i >= info[0]) {
        return;
    }
    let rank = info[1];
    if (flags[info[3 + rank] + i] == 0u) {
        return;
    }
    let row = info[5 + rank] + (found[info[4 + rank] + i] - 1) * rank;
    var rest = info[2 + rank] + i;
    for (var d = rank - 1; d >= 0; d--) {
        let size = info[2 + d];
        out[row + d] = rest % size;
        rest /= size;
    }
}
