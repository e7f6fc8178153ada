// Row-wise normalisations (softmax, log_softmax, layer_norm): for every group g of the kept
// dims, the row of x over the row dims is read once to gather a statistic, then again to
// write out[g, r] = finish(x[g, r], r, statistic). `threads` invocations share a row: each
// folds every threads-th element into its own statistic, then they combine theirs (`pool`),
// so the whole row is one kernel. layer_norm's finish also applies its
// weight and bias (contiguous, of the row's shape: element r of the row is weight[r]).
//
// Placeholders
//   workgroup, threads  invocations per workgroup and per row (powers of two)
//   element             the stored type of x, out, weight and bias
//   store               f32 `s` as element
//   identity            the empty statistic (a Stat)
//   fold                the body of `fold(s: Stat, v: f32) -> Stat` (one more element)
//   combine             the body of `combine(a: Stat, b: Stat) -> Stat`
//   finish              the body of `finish(v: f32, r: i32, s: Stat) -> f32` (element r of
//                       the row, whose statistic is s)
//   functions           helper functions the three bodies call (may be empty)
//   shared, pool        the workgroup memory the invocations of a row pool their statistics
//                       in, and the statements that pool them into `total` (rows.py)
//
// info: [rows, row length, kept rank K, row rank R, parameter (f32 bits), weight offset,
//        bias offset, kept shape[K], row shape[R], x: offset, kept strides[K],
//        row strides[R], out: the same]

const ROWS = 0;
const LENGTH = 1;
const KEPT = 2;
const REDUCED = 3;
const PARAMETER = 4;
const WEIGHT = 5;
const BIAS = 6;
const SHAPE = 7;

struct Stat {
    a: f32,
    b: f32,
    c: f32,
    d: f32,
}

@group(0) @binding(0) var<storage, read> info: array<i32>;
@group(0) @binding(1) var<storage, read_write> out: array<{{element}}>;
@group(0) @binding(2) var<storage, read> x: array<{{element}}>;
@group(0) @binding(3) var<storage, read> weight: array<{{element}}>;
@group(0) @binding(4) var<storage, read> bias: array<{{element}}>;
{{shared}}

{{functions}}

fn fold(s: Stat, v: f32) -> Stat {
{{fold}}
}

fn combine(a: Stat, b: Stat) -> Stat {
{{combine}}
}

fn finish(v: f32, r: i32, s: Stat) -> f32 {
{{finish}}
}

// Offset of element r of a row, relative to the row's start, in the operand whose strides
// start at info[strides].
fn along(r: i32, strides: i32) -> i32 {
    let reduced = info[REDUCED];
    if (reduced == 1) {
        return r * info[strides];
    }
    return pb_strided(r, reduced, SHAPE + info[KEPT], strides);
}

@compute @workgroup_size({{workgroup}})
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
    let lane = i32(lid) % {{threads}};
    let g = pb_group(wid, nwg) * ({{workgroup}} / {{threads}}) + i32(lid) / {{threads}};
    let kept = info[KEPT];
    let reduced = info[REDUCED];
    let length = info[LENGTH];
    let at_x = SHAPE + kept + reduced;
    let at_out = at_x + 1 + kept + reduced;
    var x_base = 0;
    var stat = {{identity}};
    if (g < info[ROWS]) {
        x_base = info[at_x] + pb_strided(g, kept, SHAPE, at_x + 1);
        for (var r = lane; r < length; r += {{threads}}) {
            stat = fold(stat, pb_load_x(x_base + along(r, at_x + 1 + kept)));
        }
    }
{{pool}}
    if (g < info[ROWS]) {
        let out_base = info[at_out] + pb_strided(g, kept, SHAPE, at_out + 1);
        for (var r = lane; r < length; r += {{threads}}) {
            let s = finish(pb_load_x(x_base + along(r, at_x + 1 + kept)), r, total);
            out[out_base + along(r, at_out + 1 + kept)] = {{store}};
        }
    }
}
