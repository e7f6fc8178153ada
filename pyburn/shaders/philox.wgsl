// Random bits: words of the Philox-4x32-10 stream (pyburn/random.py is the specification).
// Word g of the stream is word g % 4 of the block for counter g / 4 (a 64-bit counter, the
// upper two counter words zero) and the 64-bit key `seed`. Each invocation computes one
// block and stores the words of it that fall in this launch's range.
//
// info: [n words wanted, first block (low, high), index of the first wanted word within
//        the first block, key (low, high), output offset]

@group(0) @binding(0) var<storage, read> info: array<i32>;
@group(0) @binding(1) var<storage, read_write> out: array<i32>;

// High and low words of the 64-bit product of two u32 (WGSL has no widening multiply).
fn mul_wide(a: u32, b: u32) -> vec2<u32> {
    let a_lo = a & 0xffffu;
    let a_hi = a >> 16u;
    let b_lo = b & 0xffffu;
    let b_hi = b >> 16u;
    let lo_lo = a_lo * b_lo;
    let hi_lo = a_hi * b_lo;
    let lo_hi = a_lo * b_hi;
    let cross = (lo_lo >> 16u) + (hi_lo & 0xffffu) + lo_hi;  // < 2**32: cannot overflow
    return vec2<u32>(a_hi * b_hi + (hi_lo >> 16u) + (cross >> 16u),
                     (cross << 16u) | (lo_lo & 0xffffu));
}

@compute @workgroup_size({{workgroup}})
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
    let t = pb_group(wid, nwg) * {{workgroup}} + i32(lid);
    let skip = info[3];
    let n = info[0];
    if (4 * t - skip >= n) {
        return;
    }
    // counter = first block + t, with the carry into the high word
    let low = u32(info[1]) + u32(t);
    var c = vec4<u32>(low, u32(info[2]) + select(0u, 1u, low < u32(info[1])), 0u, 0u);
    var k = vec2<u32>(u32(info[4]), u32(info[5]));
    for (var r = 0; r < 10; r++) {
        let p0 = mul_wide(0xD2511F53u, c.x);
        let p1 = mul_wide(0xCD9E8D57u, c.z);
        c = vec4<u32>(p1.x ^ c.y ^ k.x, p1.y, p0.x ^ c.w ^ k.y, p0.y);
        k = k + vec2<u32>(0x9E3779B9u, 0xBB67AE85u);
    }
    var words = array<u32, 4>(c.x, c.y, c.z, c.w);
    for (var j = 0; j < 4; j++) {
        let g = 4 * t + j - skip;  // index of this word among the wanted ones
        if (g >= 0 && g < n) {
            out[info[6] + g] = bitcast<i32>(words[j]);
        }
    }
}
