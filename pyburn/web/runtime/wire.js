// Tensors between Python and the page. Python's `pyburn.interop.for_page` encodes a tensor
// as {__pyburn_tensor__: dtype, shape, data: bytes}; `fromPython` makes it a typed array of
// that dtype (Float32Array for float32, BigInt64Array for int64, ...) with a `shape` property.
// A worker's messages lose such properties (structured clone copies the elements only), so
// `pack` wraps each shaped array for the trip, transferring its buffer instead of copying it,
// and `unpack` restores it on the page's side.

const TENSOR_KEY = "__pyburn_tensor__";
const SHAPED_KEY = "__pyburn_shaped__";

/** The typed array class of each pyburn dtype (float16 where the engine has Float16Array). */
const ARRAYS = {
  bool: Uint8Array,
  uint8: Uint8Array,
  int32: Int32Array,
  int64: BigInt64Array,
  float16: globalThis.Float16Array ?? Uint16Array,
  float32: Float32Array,
  float64: Float64Array,
};

/** A value `toJs` made of what `for_page` returned, its encoded tensors as typed arrays. */
export function fromPython(value) {
  if (Array.isArray(value)) return value.map(fromPython);
  if (value && typeof value === "object" && !ArrayBuffer.isView(value)) {
    if (TENSOR_KEY in value) {
      const { data, shape } = value;
      const Kind = ARRAYS[value[TENSOR_KEY]];
      // toJs gives the bytes a buffer of their own, so a view of it is aligned
      const array = new Kind(data.buffer, data.byteOffset, data.byteLength / Kind.BYTES_PER_ELEMENT);
      array.shape = shape;
      return array;
    }
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, fromPython(v)]));
  }
  return value;
}

/** `value` ready for postMessage: shaped arrays wrapped; returns [message, transferables]. */
export function pack(value) {
  const transfer = new Set();
  const walk = (v) => {
    if (ArrayBuffer.isView(v) && v.shape !== undefined) {
      transfer.add(v.buffer);
      return { [SHAPED_KEY]: v, shape: v.shape };
    }
    if (Array.isArray(v)) return v.map(walk);
    if (v && typeof v === "object" && !ArrayBuffer.isView(v) && !(v instanceof ArrayBuffer)) {
      return Object.fromEntries(Object.entries(v).map(([k, item]) => [k, walk(item)]));
    }
    return v;
  };
  return [walk(value), [...transfer]];
}

/** What `pack` wrapped, as it was. */
export function unpack(value) {
  if (Array.isArray(value)) return value.map(unpack);
  if (value && typeof value === "object" && !ArrayBuffer.isView(value)) {
    if (SHAPED_KEY in value) {
      const array = value[SHAPED_KEY];
      array.shape = value.shape;
      return array;
    }
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, unpack(v)]));
  }
  return value;
}
