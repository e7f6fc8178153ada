// Reduction over a set of dims: for every group g of the kept dims, out[g] is the
// combination of the source over the reduced dims (sum, prod, max, min, any, all, argmax,
// argmin). `threads` invocations share a group: each folds every threads-th element of it,
// then they combine their partial results as a tree in workgroup memory. The accumulator
// carries an element index beside the value, which only the arg reductions use: combining
// by explicit index makes "the first index wins" independent of the order of combination.
//
// Two layouts, one kernel. By rows (`threads` > 1): a group's invocations are neighbours,
// so neighbouring invocations read neighbouring elements when the innermost reduced dim is
// the contiguous one (`sum(1)` of a row-major matrix). By columns (`threads` = 1, no tree):
// each invocation folds a group alone, and neighbouring invocations own neighbouring groups,
// so they read neighbouring elements when the innermost kept dim is the contiguous one
// (`sum(0)`: each invocation walks down a column, the workgroup reads rows).
//
// A long group may be cut into segments, each folded by invocations of its own (so that a
// few long groups still keep every core busy, and loops stay short): each segment's result
// goes to a slot of its own, and another reduction combines the slots. Work items are
// numbered segment by segment, each segment's groups in order, so that the columns of one
// segment are neighbours.
//
// The source is elementwise code over any number of inputs (a plain reduction reads one;
// the fusion backend's producers compute theirs on the fly), and the group's result goes
// through elementwise code of its own (an epilogue: a fused consumer) before it is stored.
//
// Placeholders
//   workgroup, threads  invocations per workgroup and per group (powers of two)
//   out_type            stored element type of out
//   bindings            declarations of the other operands, from binding 2 on
//   acc                 the accumulator's value type
//   identity            the accumulator's starting value (an expression of type acc)
//   combine             the body of `combine(a: Acc, b: Acc) -> Acc`
//   bases               where each operand read in the loop starts for group g (and, with
//                       one reduced dim, its stride along it)
//   hoisted             loads of the source inputs that are the same across the group
//   loads               statements computing the source at element r (loads, then steps)
//   value               the source element as acc
//   kept_source         a statement storing the source element too, or nothing
//   finish              statements turning the group's result `best: Acc` into the
//                       value stored to out, `result` (the epilogue)
//
// info: [groups times segments, count, kept rank K, reduced rank R, groups, segment length,
//        out's stride from one segment's slot to the next, kept shape[K], reduced shape[R],
//        then per operand k (1 = out, 2.. = the others): offset, kept strides[K], reduced
//        strides[R]]

struct Acc {
    v: {{acc}},
    i: i32,
}

@group(0) @binding(0) var<storage, read> info: array<i32>;
@group(0) @binding(1) var<storage, read_write> out: array<{{out_type}}>;
{{bindings}}
// the tree's accumulators (by rows only)
var<workgroup> partial: array<Acc, {{workgroup}}>;

fn combine(a: Acc, b: Acc) -> Acc {
{{combine}}
}

// Where operand k's metadata starts.
fn block(k: i32) -> i32 {
    return 7 + info[2] + info[3] + (k - 1) * (1 + info[2] + info[3]);
}

// Offset of group g's first element in operand k.
fn group_at(g: i32, k: i32) -> i32 {
    let b = block(k);
    return info[b] + pb_strided(g, info[2], 7, b + 1);
}

// Offset of element r of a group in operand k, relative to the group's first element.
fn reduced_at(r: i32, k: i32) -> i32 {
    return pb_strided(r, info[3], 7 + info[2], block(k) + 1 + info[2]);
}

@compute @workgroup_size({{workgroup}})
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
    let lane = i32(lid) % {{threads}};
    let work = pb_group(wid, nwg) * ({{workgroup}} / {{threads}}) + i32(lid) / {{threads}};
    let g = work % info[4];
    let segment = work / info[4];
    let start = segment * info[5];
    let stop = min(info[1], start + info[5]);
    var acc = Acc({{identity}}, 0x7fffffff);
    if (work < info[0]) {
{{bases}}
{{hoisted}}
        for (var r = start + lane; r < stop; r += {{threads}}) {
{{loads}}
{{kept_source}}
            acc = combine(acc, Acc({{value}}, r));
        }
    }
    // by rows, the group's invocations combine their accumulators as a tree; by columns
    // there is nothing to combine (a constant condition: the compiler drops the barriers)
    if ({{threads}} > 1) {
        partial[lid] = acc;
        workgroupBarrier();
        for (var s = {{threads}} / 2; s > 0; s /= 2) {
            if (lane < s) {
                partial[lid] = combine(partial[lid], partial[lid + u32(s)]);
            }
            workgroupBarrier();
        }
        acc = partial[lid];
    }
    if (lane == 0 && work < info[0]) {
        let best = acc;
{{finish}}
        out[group_at(g, 1) + segment * info[6]] = result;
    }
}
