// Batched matrix product out = a @ b, one invocation per output element: the baseline the
// register-blocked kernel (matmul.wgsl) is measured against in `pyburn bench`.
//
// Placeholders: workgroup, element, out_type, T (as matmul.wgsl); store (T `s` as out_type).
// info: as matmul.wgsl.

@group(0) @binding(0) var<storage, read> info: array<i32>;
@group(0) @binding(1) var<storage, read_write> out: array<{{out_type}}>;
@group(0) @binding(2) var<storage, read> a: array<{{element}}>;
@group(0) @binding(3) var<storage, read> b: array<{{element}}>;

@compute @workgroup_size({{workgroup}})
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
    let m = info[0];
    let n = info[1];
    let t = pb_group(wid, nwg) * {{workgroup}} + i32(lid);
    let batch = t / (m * n);
    if (batch >= info[3]) {
        return;
    }
    let row = (t / n) % m;
    let col = t % n;
    var a_at = pb_matmul_base(batch, 1) + row * pb_matmul_stride(1, 0);
    var b_at = pb_matmul_base(batch, 2) + col * pb_matmul_stride(2, 1);
    let depth = info[2];
    let a_step = pb_matmul_stride(1, 2);
    let b_step = pb_matmul_stride(2, 2);
    var s = {{T}}(0);
    for (var k = 0; k < depth; k++) {
        s += pb_load_a(a_at) * pb_load_b(b_at);
        a_at += a_step;
        b_at += b_step;
    }
    let at = pb_matmul_base(batch, 0) + row * pb_matmul_stride(0, 0);
    out[at + col * pb_matmul_stride(0, 1)] = {{store}};
}
