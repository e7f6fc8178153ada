// arange: out[i] = start + (first + i) * step, in the compute type {{T}} (exact, wrapping
// arithmetic for i32; f32 arithmetic for floats).
//
// info: [n in this launch, first, start bits, step bits, output offset]

@group(0) @binding(0) var<storage, read> info: array<i32>;
@group(0) @binding(1) var<storage, read_write> out: array<{{out_type}}>;

@compute @workgroup_size({{workgroup}})
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
    let i = pb_group(wid, nwg) * {{workgroup}} + i32(lid);
    if (i >= info[0]) {
        return;
    }
    let start = bitcast<{{T}}>(info[2]);
    let step = bitcast<{{T}}>(info[3]);
    let value = start + {{T}}(info[1] + i) * step;
    out[info[4] + i] = {{store}};
}
