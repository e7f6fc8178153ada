// Products with packed quantized weights, out = x @ W.T, the weights read as packed words:
// W (N, K) is `data` (N, ceil(K / per_word)) of int32 words holding `per_word` fields of
// `bits` bits each, little-endian, two's complement where signed (pyburn.quant's format).
// Each invocation computes a 4x4 block of out (four rows of x, four rows of W): per word of
// each of its four weight rows, it takes the fields four at a time with two shifts (left to
// put a field's top bit at bit 31, right, arithmetic or logical, to bring it down
// sign-extended or not) and multiplies them with four values of each of its four rows of x:
// 16 dot products per four fields, the fields never stored unpacked.
// - weight-only (T = f32): each field is dequantized as it is read, (q - zero) * scale, with
//   the scale and zero point of its block (a block is a whole number of words, so a word
//   never straddles two); the product accumulates in f32, the bias is added at the store.
// - integer (T = i32): x holds integers, minus a zero point per row (x_zero), the fields
//   minus their zero point; the product accumulates exactly in i32.
// Words past K's last one hold zeros, and the x values past K are read as 0 (x is never
// read past its row). The words [W0, W1) are Python's piece of the row, within the loop
// budget: the first piece stores, later ones (ADD) add to what is stored.
//
// Placeholders: workgroup; T (f32 or i32); field ("i32": signed fields, "u32": unsigned);
// bits; bindings (scale, zero, bias / x_zero, as the call has them, from binding 4 on);
// block (statements that set `s` and `z`, the four columns' scale and zero point of block
// `b`, vec4<T> each); row_zero (the statement that sets `xz`, the four rows' zero point);
// parts (one call of `part` per four fields of a word); bias (a statement adding column
// `c`'s bias to `v`, or nothing).
// info: see the constants; each operand's map is its offset, then its strides along the
// rows and along the columns (x: along M and K; data, scale and zero: along N and the row;
// bias: along N; x_zero: along M).

const M = 0;      // rows of out in this box
const N = 1;      // columns of out in this box
const K = 2;      // the row length
const PER = 3;    // fields per word
const W0 = 4;     // the piece's first word
const W1 = 5;     // the word after its last
const BW = 6;     // words per block
const ADD = 7;    // 1: add to out (a piece after the first)
const OUT = 8;    // offset, strides along M and N
const X = 11;     // offset, strides along M and K
const DATA = 14;  // offset, strides along N and the words
const SCALE = 17; // offset, strides along N and the blocks
const ZERO = 20;  // offset, strides along N and the blocks
const EXTRA = 23; // bias: offset, stride along N; x_zero: offset, stride along M

@group(0) @binding(0) var<storage, read> info: array<i32>;
@group(0) @binding(1) var<storage, read_write> out: array<{{T}}>;
@group(0) @binding(2) var<storage, read> x: array<{{T}}>;
@group(0) @binding(3) var<storage, read> data: array<i32>;
{{bindings}}

// The four fields of `word` whose top bits the left shifts `lefts` move to bit 31, as i32.
fn fields(word: i32, lefts: vec4<u32>) -> vec4<i32> {
    let w = vec4<{{field}}>(bitcast<{{field}}>(word));
    return vec4<i32>((w << lefts) >> vec4<u32>(32u - {{bits}}u));
}

// Four values at k..k+3 of row `at` (an offset of x), 0 past K, minus the row's zero point.
fn x_values(at: i32, k: i32, step: i32, zero: {{T}}) -> vec4<{{T}}> {
    let ks = vec4<i32>(k) + vec4<i32>(0, 1, 2, 3);
    let inside = ks < vec4<i32>(info[K]);
    let kept = min(ks, vec4<i32>(info[K] - 1)) * step + vec4<i32>(at);
    let v = vec4<{{T}}>(x[kept.x], x[kept.y], x[kept.z], x[kept.w]) - vec4<{{T}}>(zero);
    return select(vec4<{{T}}>(0), v, inside);
}

// The weights of four columns, from their fields: dequantized (f32) or centered (i32).
fn weights(q: vec4<i32>, s: {{T}}, z: {{T}}) -> vec4<{{T}}> {
    return {{dequantize}};
}

// Four fields (starting at k, the `lefts` of one quarter of each word) of the four weight
// rows `words`, times four values of each of the four rows of x, added to `acc`.
fn part(acc: ptr<function, array<vec4<{{T}}>, 4>>, words: vec4<i32>, lefts: vec4<u32>, k: i32,
        x_rows: vec4<i32>, step: i32, xz: vec4<{{T}}>, s: vec4<{{T}}>, z: vec4<{{T}}>) {
    let w0 = weights(fields(words.x, lefts), s.x, z.x);
    let w1 = weights(fields(words.y, lefts), s.y, z.y);
    let w2 = weights(fields(words.z, lefts), s.z, z.z);
    let w3 = weights(fields(words.w, lefts), s.w, z.w);
    let r0 = x_values(x_rows.x, k, step, xz.x);
    let r1 = x_values(x_rows.y, k, step, xz.y);
    let r2 = x_values(x_rows.z, k, step, xz.z);
    let r3 = x_values(x_rows.w, k, step, xz.w);
    (*acc)[0] += vec4<{{T}}>(dot(r0, w0), dot(r0, w1), dot(r0, w2), dot(r0, w3));
    (*acc)[1] += vec4<{{T}}>(dot(r1, w0), dot(r1, w1), dot(r1, w2), dot(r1, w3));
    (*acc)[2] += vec4<{{T}}>(dot(r2, w0), dot(r2, w1), dot(r2, w2), dot(r2, w3));
    (*acc)[3] += vec4<{{T}}>(dot(r3, w0), dot(r3, w1), dot(r3, w2), dot(r3, w3));
}

@compute @workgroup_size({{workgroup}})
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
    let t = pb_group(wid, nwg) * {{workgroup}} + i32(lid);
    let m = info[M];
    let n = info[N];
    let tiles_n = (n + 3) / 4;
    let row = (t / tiles_n) * 4;
    if (row >= m) {
        return;
    }
    let col = (t % tiles_n) * 4;
    // rows and columns past the edge are clamped for loading; their results are not stored
    let rows = min(vec4<i32>(row) + vec4<i32>(0, 1, 2, 3), vec4<i32>(m - 1));
    let cols = min(vec4<i32>(col) + vec4<i32>(0, 1, 2, 3), vec4<i32>(n - 1));
    let x_rows = vec4<i32>(info[X]) + rows * info[X + 1];
    let w_rows = vec4<i32>(info[DATA]) + cols * info[DATA + 1];
    let word_step = info[DATA + 2];
    let x_step = info[X + 2];
{{row_zero}}
    var acc: array<vec4<{{T}}>, 4>;
    var w = info[W0];
    let end = info[W1];
    while (w < end) {  // block by block
        let b = w / info[BW];
        let stop = min((b + 1) * info[BW], end);
{{block}}
        for (; w < stop; w++) {
            let at = w_rows + vec4<i32>(w * word_step);
            let words = vec4<i32>(data[at.x], data[at.y], data[at.z], data[at.w]);
            let k = w * info[PER];
{{parts}}
        }
    }
    for (var i = 0; i < 4; i++) {
        let r = row + i;
        for (var j = 0; j < 4; j++) {
            let c = col + j;
            if (r < m && c < n) {
                let at = info[OUT] + r * info[OUT + 1] + c * info[OUT + 2];
                var v = acc[i][j];
                if (info[ADD] != 0) {
                    v += out[at];
                }
{{bias}}
                out[at] = v;
            }
        }
    }
}
