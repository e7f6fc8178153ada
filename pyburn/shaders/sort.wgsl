// Stable sort along one dim: a bitonic sorting network over each row, padded to a power of
// two P. The network sorts (key, index) pairs under a total order, which makes it stable:
// equal keys keep their original order because the index breaks the tie. NaN sorts as the
// largest key; padding (index >= length) goes after everything, in either direction.
//
// Entry points: `start` copies a row's keys and indices into the work buffers; `step` is
// one compare-exchange stage (k, j) of the network; `finish` writes the sorted values (read
// back from x by index, so they are bit-exact) and the indices.
//
// Placeholders: workgroup; element (stored type of x); key (compute type of the keys); load
// (element `v` as a key); nan (WGSL bool: whether key `k` is NaN).
// info: [rows, length, P, k, j, descending, row rank R, row shape[R], then per operand
//        (keys, indices, x, values, out indices): offset, strides[R], step along the row]

@group(0) @binding(0) var<storage, read> info: array<i32>;
@group(0) @binding(1) var<storage, read_write> keys: array<{{key}}>;
@group(0) @binding(2) var<storage, read_write> order: array<i32>;
@group(0) @binding(3) var<storage, read> x: array<{{element}}>;
@group(0) @binding(4) var<storage, read_write> values: array<{{element}}>;
@group(0) @binding(5) var<storage, read_write> indices: array<i32>;

// Where row `row` of operand k starts, and operand k's step along the row.
fn row_start(row: i32, k: i32) -> i32 {
    let rank = info[6];
    let base = 7 + rank + k * (rank + 2);
    return info[base] + pb_strided(row, rank, 7, base + 1);
}

fn row_step(k: i32) -> i32 {
    let rank = info[6];
    return info[7 + rank + k * (rank + 2) + 1 + rank];
}

fn is_nan(k: {{key}}) -> bool {
    return {{nan}};
}

// Whether (ka, ia) goes strictly before (kb, ib) in the sorted row.
fn before(ka: {{key}}, ia: i32, kb: {{key}}, ib: i32) -> bool {
    let length = info[1];
    if (ia >= length || ib >= length) {
        return ib >= length && (ia < length || ia < ib);
    }
    let descending = info[5] != 0;
    let na = is_nan(ka);
    let nb = is_nan(kb);
    if (na || nb) {
        if (na == nb) {
            return ia < ib;
        }
        return na == descending;
    }
    if (ka == kb) {
        return ia < ib;
    }
    return select((ka < kb), (ka > kb), descending);
}

fn invocation(wid: vec3<u32>, nwg: vec3<u32>, lid: u32) -> i32 {
    return pb_group(wid, nwg) * {{workgroup}} + i32(lid);
}

@compute @workgroup_size({{workgroup}})
fn start(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
         @builtin(local_invocation_index) lid: u32) {
    let t = invocation(wid, nwg, lid);
    let p = info[2];
    if (t >= info[0] * p) {
        return;
    }
    let row = t / p;
    let j = t % p;
    let slot = row_start(row, 0) + j;
    order[row_start(row, 1) + j] = j;
    if (j < info[1]) {
        let v = x[row_start(row, 2) + j * row_step(2)];
        keys[slot] = {{load}};
    }
}

@compute @workgroup_size({{workgroup}})
fn step(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
    let t = invocation(wid, nwg, lid);
    let p = info[2];
    let half = p / 2;
    if (t >= info[0] * half) {
        return;
    }
    let k = info[3];
    let j = info[4];
    let row = t / half;
    let pair = t % half;
    let i = (pair / j) * 2 * j + pair % j;  // the lower element of the pair; i + j the upper
    let kb = row_start(row, 0);
    let ib = row_start(row, 1);
    let a = keys[kb + i];
    let b = keys[kb + i + j];
    let ia = order[ib + i];
    let ic = order[ib + i + j];
    // ascending blocks put the earlier pair first, descending blocks the later one
    let swap = select(before(b, ic, a, ia), before(a, ia, b, ic), (i & k) != 0);
    if (swap) {
        keys[kb + i] = b;
        keys[kb + i + j] = a;
        order[ib + i] = ic;
        order[ib + i + j] = ia;
    }
}

@compute @workgroup_size({{workgroup}})
fn finish(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
          @builtin(local_invocation_index) lid: u32) {
    let t = invocation(wid, nwg, lid);
    let length = info[1];
    if (t >= info[0] * length) {
        return;
    }
    let row = t / length;
    let j = t % length;
    let source = order[row_start(row, 1) + j];
    values[row_start(row, 3) + j * row_step(3)] = x[row_start(row, 2) + source * row_step(2)];
    indices[row_start(row, 4) + j * row_step(4)] = source;
}
