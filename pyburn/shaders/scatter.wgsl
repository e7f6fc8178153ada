// scatter: out[t(p)] = src[p] ("assign") or out[t(p)] += src[p] ("add"), where t(p) is point
// p of index's shape with its `axis` coordinate replaced by index[p], and out starts as a
// copy of x.
//
// "The last write wins" is made deterministic in two passes: `claim` keeps, per target, the
// largest position p + 1 that writes it (an atomic max), and `assign` lets only that
// position write. `add` accumulates with atomics: an atomic add on integer words, a
// compare-and-swap loop on the bits of f32 words.
//
// Placeholders: workgroup; element (stored type of out and src); atomic (i32 or u32: the
// integer type `add` works on); add (the statements of `add` for target word `t` and the
// source value `v`).
// info: [n, rank, shape[rank], then per operand (out, index, src, winners, position):
//        offset, strides[rank], step along the axis (out's and winners' axis stride, else 0)]

@group(0) @binding(0) var<storage, read> info: array<i32>;
@group(0) @binding(1) var<storage, read_write> out: array<{{element}}>;
@group(0) @binding(2) var<storage, read> index: array<i32>;
@group(0) @binding(3) var<storage, read> src: array<{{element}}>;
@group(0) @binding(4) var<storage, read_write> winners: array<atomic<u32>>;
@group(0) @binding(5) var<storage, read_write> out_words: array<atomic<{{atomic}}>>;

fn at(i: i32, rank: i32, k: i32) -> i32 {
    let base = 2 + rank + k * (rank + 2);
    return info[base] + pb_strided(i, rank, 2, base + 1);
}

// Offset of point i's destination in operand k (out or winners).
fn destination(i: i32, rank: i32, k: i32) -> i32 {
    let step = info[2 + rank + k * (rank + 2) + 1 + rank];
    return at(i, rank, k) + index[at(i, rank, 1)] * step;
}

fn invocation(wid: vec3<u32>, nwg: vec3<u32>, lid: u32) -> i32 {
    return pb_group(wid, nwg) * {{workgroup}} + i32(lid);
}

@compute @workgroup_size({{workgroup}})
fn claim(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
         @builtin(local_invocation_index) lid: u32) {
    let i = invocation(wid, nwg, lid);
    if (i >= info[0]) {
        return;
    }
    let rank = info[1];
    atomicMax(&winners[destination(i, rank, 3)], u32(at(i, rank, 4) + 1));
}

@compute @workgroup_size({{workgroup}})
fn assign(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
          @builtin(local_invocation_index) lid: u32) {
    let i = invocation(wid, nwg, lid);
    if (i >= info[0]) {
        return;
    }
    let rank = info[1];
    if (atomicLoad(&winners[destination(i, rank, 3)]) == u32(at(i, rank, 4) + 1)) {
        out[destination(i, rank, 0)] = src[at(i, rank, 2)];
    }
}

@compute @workgroup_size({{workgroup}})
fn add(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
       @builtin(local_invocation_index) lid: u32) {
    let i = invocation(wid, nwg, lid);
    if (i >= info[0]) {
        return;
    }
    let rank = info[1];
    let t = destination(i, rank, 0);
    let v = src[at(i, rank, 2)];
{{add}}
}
