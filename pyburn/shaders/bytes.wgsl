// Packs one-byte elements (uint8 and bool, stored one per u32 word) into bytes for a
// transfer: word w of the output holds elements 4w .. 4w+3 of a contiguous input, the first
// in the lowest byte (little-endian, as pyburn's byte format is).
//
// info: [words in this launch, first word, element count n, input offset, output offset]

@group(0) @binding(0) var<storage, read> info: array<i32>;
@group(0) @binding(1) var<storage, read_write> out: array<u32>;
@group(0) @binding(2) var<storage, read> elements: array<u32>;

@compute @workgroup_size({{workgroup}})
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
    let w = pb_group(wid, nwg) * {{workgroup}} + i32(lid);
    if (w >= info[0]) {
        return;
    }
    let first = 4 * (info[1] + w);  // the word's first element, counted over the whole input
    let count = min(4, info[2] - first);
    var word = 0u;
    for (var j = 0; j < count; j++) {
        word |= (elements[info[3] + 4 * w + j] & 0xffu) << (8u * u32(j));
    }
    out[info[4] + w] = word;
}
