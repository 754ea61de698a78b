// f16 in f32 kernels, prepended to matvec.wgsl and ops.wgsl. The KV cache holds K and V as f16,
// two to a u32 (element 2i in the low half): half the bytes attention reads per cached token, as
// llama.cpp's default cache (the CPU engine keeps f32: cpu/kv_cache.rs says why).

// Rounded to f16 (nearest, ties to even) and back, in bits: WGSL leaves pack2x16float's
// rounding to the implementation. |x| < 2^-14 rounds to f16's subnormal step 2^-24; callers keep
// |x| within f16's range.
fn f16r(x: f32) -> f32 {
    if (abs(x) < 6.1035156e-5) {
        return round(x * 16777216.0) / 16777216.0;
    }
    let b = bitcast<u32>(x);
    let r = (b + 0xFFFu + ((b >> 13u) & 1u)) & 0xFFFFE000u;
    return bitcast<f32>(r);
}

// f16's largest finite value: a cache entry beyond it is held there, where pack2x16float's result
// would be indeterminate (and infinity would make attention NaN).
const F16_MAX: f32 = 65504.0;

// Two cache values as one word: each rounded by f16r first, so the packing itself is exact.
fn kv_pack(a: f32, b: f32) -> u32 {
    return pack2x16float(vec2<f32>(f16r(clamp(a, -F16_MAX, F16_MAX)), f16r(clamp(b, -F16_MAX, F16_MAX))));
}
