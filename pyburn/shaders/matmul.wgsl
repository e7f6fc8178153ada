// Batched matrix product out = a @ b, register-blocked: each invocation computes a 4x4 block
// of out in registers, so every element it loads from a and b is used four times; a
// workgroup of 8x8 invocations covers a 32x32 tile. No workgroup memory: on CPU drivers
// (llvmpipe) barriers cost more than the reloads they save, and on GPUs the caches catch
// the reuse between neighbouring invocations. Operands are read through their strides, so
// a transposed weight (x @ w.T) is read in place.
//
// Each product goes through an epilogue before it is stored: elementwise code over the
// product (`anchor`) and other inputs at the same point (a bias, an activation: consumers the
// fusion backend fused into the matmul); a plain matmul's only stores it.
//
// Placeholders: workgroup (64: 8x8); element, out_type (stored types); T (compute type);
// bindings (declarations of the epilogue's operands, from binding 4 on); bases (where each
// starts, and its strides along M and N); epilogue (statements computing `result`, the value
// stored to out, from `anchor`, the product, at row `r` and column `c`).
// info: [M, N, K, batches, batch rank B, batch shape[B], then per operand (out, a, b, then
//        the epilogue's): offset, batch strides[B], strides along M, N and K]

@group(0) @binding(0) var<storage, read> info: array<i32>;
@group(0) @binding(1) var<storage, read_write> out: array<{{out_type}}>;
@group(0) @binding(2) var<storage, read> a: array<{{element}}>;
@group(0) @binding(3) var<storage, read> b: array<{{element}}>;
{{bindings}}

@compute @workgroup_size({{workgroup}})
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
    let m = info[0];
    let n = info[1];
    let tiles_m = (m + 31) / 32;
    let tiles_n = (n + 31) / 32;
    let g = pb_group(wid, nwg);
    let batch = g / (tiles_m * tiles_n);
    if (batch >= info[3]) {
        return;
    }
    let tile = g % (tiles_m * tiles_n);
    let row = (tile / tiles_n) * 32 + (i32(lid) / 8) * 4;
    let col = (tile % tiles_n) * 32 + (i32(lid) % 8) * 4;
    // rows and columns past the edge are clamped for loading; their results are not stored
    let rows = min(vec4<i32>(row) + vec4<i32>(0, 1, 2, 3), vec4<i32>(m - 1));
    let cols = min(vec4<i32>(col) + vec4<i32>(0, 1, 2, 3), vec4<i32>(n - 1));
    // element offsets of the four rows of a and the four columns of b, stepped along K
    var ak = vec4<i32>(pb_matmul_base(batch, 1)) + rows * pb_matmul_stride(1, 0);
    var bk = vec4<i32>(pb_matmul_base(batch, 2)) + cols * pb_matmul_stride(2, 1);
    let a_step = vec4<i32>(pb_matmul_stride(1, 2));
    let b_step = vec4<i32>(pb_matmul_stride(2, 2));
    let depth = info[2];
    var acc: array<vec4<{{T}}>, 4>;
    for (var k = 0; k < depth; k++) {
        let av = vec4<{{T}}>(pb_load_a(ak.x), pb_load_a(ak.y), pb_load_a(ak.z), pb_load_a(ak.w));
        let bv = vec4<{{T}}>(pb_load_b(bk.x), pb_load_b(bk.y), pb_load_b(bk.z), pb_load_b(bk.w));
        acc[0] += av.x * bv;
        acc[1] += av.y * bv;
        acc[2] += av.z * bv;
        acc[3] += av.w * bv;
        ak += a_step;
        bk += b_step;
    }
    // what the stores need from info, loaded before any store (a store to out could, for
    // all the compiler knows, change info)
    let base0 = pb_matmul_base(batch, 0);
    let rows0 = pb_matmul_stride(0, 0);
    let cols0 = pb_matmul_stride(0, 1);
{{bases}}
    for (var i = 0; i < 4; i++) {
        for (var j = 0; j < 4; j++) {
            let r = row + i;
            let c = col + j;
            if (r < m && c < n) {
{{epilogue}}
                out[base0 + r * rows0 + c * cols0] = result;
            }
        }
    }
}
