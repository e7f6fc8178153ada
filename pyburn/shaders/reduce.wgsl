// Reduction over a set of dims: for every group g of the kept dims, out[g] is the
// combination of x over the reduced dims (sum, prod, max, min, any, all, argmax, argmin).
// `threads` invocations share a group: each folds every threads-th element of it, then they
// combine their partial results as a tree in workgroup memory. The accumulator carries an
// element index beside the value, which only the arg reductions use: combining by explicit
// index makes "the first index wins" independent of the order of combination.
//
// Placeholders
//   workgroup, threads  invocations per workgroup and per group (powers of two)
//   in_type, out_type   stored element types of x and out
//   acc                 the accumulator's value type
//   identity            the accumulator's starting value (an expression of type acc)
//   load                the value of element `v` (read raw from x) as acc
//   combine             the body of `combine(a: Acc, b: Acc) -> Acc`
//   result              what to store to out, from the group's result `best: Acc`
//
// info: [groups, count, kept rank K, reduced rank R, kept shape[K], reduced shape[R],
//        x: offset, kept strides[K], reduced strides[R], out: offset, kept strides[K]]

struct Acc {
    v: {{acc}},
    i: i32,
}

@group(0) @binding(0) var<storage, read> info: array<i32>;
@group(0) @binding(1) var<storage, read_write> out: array<{{out_type}}>;
@group(0) @binding(2) var<storage, read> x: array<{{in_type}}>;
var<workgroup> partial: array<Acc, {{workgroup}}>;

fn combine(a: Acc, b: Acc) -> Acc {
{{combine}}
}

@compute @workgroup_size({{workgroup}})
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
    let lane = i32(lid) % {{threads}};
    let g = pb_group(wid, nwg) * ({{workgroup}} / {{threads}}) + i32(lid) / {{threads}};
    let kept = info[2];
    let reduced = info[3];
    let at_x = 4 + kept + reduced;
    let at_out = at_x + 1 + kept + reduced;
    var acc = Acc({{identity}}, 0x7fffffff);
    if (g < info[0]) {
        let base = info[at_x] + pb_strided(g, kept, 4, at_x + 1);
        for (var r = lane; r < info[1]; r += {{threads}}) {
            let v = x[base + pb_strided(r, reduced, 4 + kept, at_x + 1 + kept)];
            acc = combine(acc, Acc({{load}}, r));
        }
    }
    partial[lid] = acc;
    workgroupBarrier();
    for (var s = {{threads}} / 2; s > 0; s /= 2) {
        if (lane < s) {
            partial[lid] = combine(partial[lid], partial[lid + u32(s)]);
        }
        workgroupBarrier();
    }
    if (lane == 0 && g < info[0]) {
        let best = partial[lid];
        out[info[at_out] + pb_strided(g, kept, 4, at_out + 1)] = {{result}};
    }
}
