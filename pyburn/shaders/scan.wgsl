// Inclusive scan (cumsum, cumprod) along one dim. `threads` invocations share a row: each
// folds a contiguous segment of it, a Hillis-Steele scan in workgroup memory turns the
// segment totals into prefixes, and each invocation then rescans its segment from its
// prefix, storing as it goes.
//
// Placeholders
//   workgroup, threads  invocations per workgroup and per row (powers of two)
//   in_type, out_type   stored element types of x and out
//   acc                 the type the scan is computed in
//   identity            the scan's starting value
//   load                element `v` (read raw from x) as acc
//   combine             `a` combined with `b` (sum or product), as an expression
//   store               what to store to out, from the running value `running`
//
// info: [rows, length, outer rank K, outer shape[K], x: offset, outer strides[K], step,
//        out: offset, outer strides[K], step]

@group(0) @binding(0) var<storage, read> info: array<i32>;
@group(0) @binding(1) var<storage, read_write> out: array<{{out_type}}>;
@group(0) @binding(2) var<storage, read> x: array<{{in_type}}>;
var<workgroup> totals: array<{{acc}}, {{workgroup}}>;

fn combine(a: {{acc}}, b: {{acc}}) -> {{acc}} {
    return {{combine}};
}

@compute @workgroup_size({{workgroup}})
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
    let lane = i32(lid) % {{threads}};
    let row = pb_group(wid, nwg) * ({{workgroup}} / {{threads}}) + i32(lid) / {{threads}};
    let length = info[1];
    let outer = info[2];
    let at_x = 3 + outer;
    let at_out = at_x + 2 + outer;
    let live = row < info[0];
    let segment = (length + {{threads}} - 1) / {{threads}};
    let start = min(lane * segment, length);
    let end = min(start + segment, length);
    var x_base = 0;
    var out_base = 0;
    var total = {{identity}};
    if (live) {
        x_base = info[at_x] + pb_strided(row, outer, 3, at_x + 1);
        out_base = info[at_out] + pb_strided(row, outer, 3, at_out + 1);
        for (var j = start; j < end; j++) {
            let v = x[x_base + j * info[at_x + 1 + outer]];
            total = combine(total, {{load}});
        }
    }
    totals[lid] = total;
    workgroupBarrier();
    for (var s = 1; s < {{threads}}; s *= 2) {
        var before = {{identity}};
        if (lane >= s) {
            before = totals[lid - u32(s)];
        }
        workgroupBarrier();
        totals[lid] = combine(before, totals[lid]);
        workgroupBarrier();
    }
    var running = {{identity}};
    if (lane > 0) {
        running = totals[lid - 1u];
    }
    if (live) {
        for (var j = start; j < end; j++) {
            let v = x[x_base + j * info[at_x + 1 + outer]];
            running = combine(running, {{load}});
            out[out_base + j * info[at_out + 1 + outer]] = {{store}};
        }
    }
}
