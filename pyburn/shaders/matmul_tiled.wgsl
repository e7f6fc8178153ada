// Batched matrix product out = a @ b for GPUs, tiled through workgroup memory: a workgroup of
// 16x16 invocations computes a 128x128 tile of out. Each step along K, the workgroup stages an
// 8-deep slab of a (128x8) and of b (8x128) in workgroup memory, every invocation loading four
// elements of each with neighbouring invocations on neighbouring addresses; then each
// invocation accumulates its 8x8 block (rows ty*8.., columns tx*8..) from the slabs, reading
// them as vec4s: 64 multiply-adds per 4 vec4 loads. Picked on hardware adapters for products
// of at least a tile (`matmul.pick_variant`); on CPU drivers the barriers cost more than the
// reloads they save, and `matmul.wgsl` is used.
//
// Each product goes through the same epilogue as `matmul.wgsl` (see there).
//
// Placeholders: workgroup (256: 16x16); element, out_type (stored types); T (compute type);
// bindings, bases, epilogue (as in matmul.wgsl; the product at row `r`, column `c` is
// `acc[2 * i + j / 4][j % 4]`).
// info: as in matmul.wgsl.

@group(0) @binding(0) var<storage, read> info: array<i32>;
@group(0) @binding(1) var<storage, read_write> out: array<{{out_type}}>;
@group(0) @binding(2) var<storage, read> a: array<{{element}}>;
@group(0) @binding(3) var<storage, read> b: array<{{element}}>;
{{bindings}}

// the slabs, K-major: slab_a[kk * 32 + r / 4][r % 4] is a's row r at depth kk of the step
var<workgroup> slab_a: array<vec4<{{T}}>, 256>;
var<workgroup> slab_b: array<vec4<{{T}}>, 256>;

@compute @workgroup_size({{workgroup}})
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
    let m = info[0];
    let n = info[1];
    let depth = info[2];
    let tiles_m = (m + 127) / 128;
    let tiles_n = (n + 127) / 128;
    let g = pb_group(wid, nwg);
    let batch = g / (tiles_m * tiles_n);
    if (batch >= info[3]) {
        return;
    }
    let tile = g % (tiles_m * tiles_n);
    let row0 = (tile / tiles_n) * 128;
    let col0 = (tile % tiles_n) * 128;
    let t = i32(lid);
    let a_base = pb_matmul_base(batch, 1);
    let a_rows = pb_matmul_stride(1, 0);
    let a_depth = pb_matmul_stride(1, 2);
    let b_base = pb_matmul_base(batch, 2);
    let b_cols = pb_matmul_stride(2, 1);
    let b_depth = pb_matmul_stride(2, 2);
    // which index of a loaded element runs fastest across invocations: the one along which
    // the operand is contiguous (a transposed weight, x @ w.T, has a_rows == 1)
    let a_along_k = a_depth == 1;
    let b_along_n = b_cols == 1 || b_depth != 1;
    var acc: array<vec4<{{T}}>, 16>;
    for (var k0 = 0; k0 < depth; k0 += 8) {
        for (var s = 0; s < 4; s++) {
            let e = t + 256 * s;
            // a's element (row r, depth kk); rows past the edge are clamped (never stored),
            // depths past it are zero (they would add to every product)
            var r = e % 128;
            var kk = e / 128;
            if (a_along_k) {
                r = e / 8;
                kk = e % 8;
            }
            let ka = k0 + kk;
            var va = {{T}}(0);
            if (ka < depth) {
                va = pb_load_a(a_base + min(row0 + r, m - 1) * a_rows + ka * a_depth);
            }
            slab_a[kk * 32 + r / 4][r % 4] = va;
            // b's element (depth kb, column c)
            var c = e % 128;
            var kb = e / 128;
            if (!b_along_n) {
                c = e / 8;
                kb = e % 8;
            }
            let kd = k0 + kb;
            var vb = {{T}}(0);
            if (kd < depth) {
                vb = pb_load_b(b_base + kd * b_depth + min(col0 + c, n - 1) * b_cols);
            }
            slab_b[kb * 32 + c / 4][c % 4] = vb;
        }
        workgroupBarrier();
        let ty = t / 16;
        let tx = t % 16;
        for (var kk = 0; kk < 8; kk++) {
            let a0 = slab_a[kk * 32 + ty * 2];
            let a1 = slab_a[kk * 32 + ty * 2 + 1];
            let b0 = slab_b[kk * 32 + tx * 2];
            let b1 = slab_b[kk * 32 + tx * 2 + 1];
            // the outer product of the rows' 8 values and the columns' 8: acc[2 * i + h] is
            // row i, columns 4h..4h+3
            for (var i = 0; i < 4; i++) {
                acc[2 * i] += a0[i] * b0;
                acc[2 * i + 1] += a0[i] * b1;
                acc[2 * i + 8] += a1[i] * b0;
                acc[2 * i + 9] += a1[i] * b1;
            }
        }
        workgroupBarrier();
    }
    // what the stores need from info, loaded before any store (see matmul.wgsl)
    let base0 = pb_matmul_base(batch, 0);
    let rows0 = pb_matmul_stride(0, 0);
    let cols0 = pb_matmul_stride(0, 1);
{{bases}}
    let row = row0 + (t / 16) * 8;
    let col = col0 + (t % 16) * 8;
    for (var i = 0; i < 8; i++) {
        for (var j = 0; j < 8; j++) {
            let r = row + i;
            let c = col + j;
            if (r < m && c < n) {
{{epilogue}}
                out[base0 + r * rows0 + c * cols0] = result;
            }
        }
    }
}
