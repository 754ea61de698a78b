// y = W · x for one token, with W dequantized in registers as it is read: the weight bytes cross
// the memory bus exactly once. Layouts: see repack.rs.
//
// Each workgroup first stages its input: the optional RMSNorm (the norm fused into its consumer:
// every workgroup recomputes the d-wide sum of squares, which costs far less than a dispatch), then
// for quantized weights the input is rounded to 8-bit blocks of 32 in workgroup memory, exactly as
// ggml's CPU backend and our CPU engine do, so quantized dots are integer dot products
// (dot4I8Packed) and read four activations per 32-bit load.
//
// LANES invocations share a row (an override: 1 on CPU-backed adapters, where an invocation is a
// SIMD lane and reductions cost barriers; more on real GPUs, where lanes of a row read adjacent
// blocks). The epilogue then stores, adds (the residual add fused into the projection), rotates
// Q and K and writes K and V into the cache (RoPE fused with the KV write), or applies SwiGLU to
// interleaved gate/up rows.

struct Params {
    rows: u32,
    cols: u32,
    scales_at: u32,
    // 0: y = W·x; 1: y += W·x; 2: RoPE + KV-cache write; 3: SwiGLU of row pairs.
    mode: u32,
    // 1: x is RMSNorm(x) · g before the product.
    norm: u32,
    eps: f32,
    // mode 2: rows [0, q_rows) are Q, then kv_rows of K, then kv_rows of V.
    q_rows: u32,
    kv_rows: u32,
    head_dim: u32,
    // mode 2: this layer's first float in the caches.
    cache_at: u32,
    // 1: the weights are quantized and the input is staged as 8-bit blocks.
    quantized: u32,
    _pad: u32,
}

struct Step {
    pos: u32,
    len: u32,
    k: u32,
    _pad: u32,
}

@group(0) @binding(0) var<storage, read> w: array<u32>;
@group(0) @binding(1) var<storage, read> x: array<f32>;
@group(0) @binding(2) var<storage, read_write> y: array<f32>;
@group(0) @binding(3) var<uniform> p: Params;
@group(0) @binding(4) var<storage, read> g: array<f32>;
@group(0) @binding(5) var<storage, read_write> kc: array<f32>;
@group(0) @binding(6) var<storage, read_write> vc: array<f32>;
@group(0) @binding(7) var<storage, read> rope: array<f32>;
@group(0) @binding(8) var<uniform> step: Step;

override LANES: u32 = 1u;
const WG: u32 = 64u;
// The widest input staged in workgroup memory (checked at load: 10 KB of the 16 KB WebGPU
// guarantees).
const MAX_COLS: u32 = 8192u;

var<workgroup> xq: array<u32, 2048>;   // MAX_COLS / 4 packed int8
var<workgroup> xd: array<f32, 256>;    // per block: scale d
var<workgroup> xs: array<f32, 256>;    // per block: d · Σ q
var<workgroup> red: array<f32, 64>;

// Rust's f32::round: half away from zero (WGSL's round() is half to even).
fn round_away(v: f32) -> f32 {
    return sign(v) * floor(abs(v) + 0.5);
}

// The input element the product sees.
fn xin(j: u32, scale: f32) -> f32 {
    if (p.norm == 1u) {
        return x[j] * scale * g[j];
    }
    return x[j];
}

fn reduce(lid: u32, v: f32) -> f32 {
    red[lid] = v;
    workgroupBarrier();
    for (var s = WG / 2u; s > 0u; s = s >> 1u) {
        if (lid < s) {
            red[lid] += red[lid + s];
        }
        workgroupBarrier();
    }
    let r = red[0];
    workgroupBarrier();
    return r;
}

// RMSNorm's scale (1 without a norm), and the input quantized into workgroup memory.
fn stage(lid: u32) -> f32 {
    var scale = 1.0;
    if (p.norm == 1u) {
        var s = 0.0;
        for (var j = lid; j < p.cols; j += WG) {
            s += x[j] * x[j];
        }
        scale = 1.0 / sqrt(reduce(lid, s) / f32(p.cols) + p.eps);
    }
    if (p.quantized == 1u) {
        for (var b = lid; b < p.cols / 32u; b += WG) {
            var amax = 0.0;
            for (var j = 0u; j < 32u; j++) {
                amax = max(amax, abs(xin(b * 32u + j, scale)));
            }
            let d = amax / 127.0;
            let id = select(0.0, 1.0 / d, d != 0.0);
            var sum = 0i;
            for (var k = 0u; k < 8u; k++) {
                var word = 0u;
                for (var e = 0u; e < 4u; e++) {
                    let q = i32(round_away(xin(b * 32u + k * 4u + e, scale) * id));
                    sum += q;
                    word |= (bitcast<u32>(q) & 0xFFu) << (8u * e);
                }
                xq[b * 8u + k] = word;
            }
            xd[b] = d;
            xs[b] = d * f32(sum);
        }
    }
    workgroupBarrier();
    return scale;
}

fn row_of(wid: vec3<u32>, nwg: vec3<u32>, lid: u32) -> u32 {
    return (wid.x + wid.y * nwg.x) * (WG / LANES) + lid / LANES;
}

// Sums each row's lanes, then the row's leader applies the epilogue. Pairs of rows (RoPE's
// (2i, 2i+1), SwiGLU's gate/up) are always in one workgroup: WG / LANES is even.
fn finish(lid: u32, row: u32, acc: f32) {
    red[lid] = acc;
    workgroupBarrier();
    for (var s = LANES / 2u; s > 0u; s = s >> 1u) {
        if (lid % LANES < s) {
            red[lid] += red[lid + s];
        }
        workgroupBarrier();
    }
    if (lid % LANES != 0u || row >= p.rows) {
        return;
    }
    let v = red[lid];
    switch p.mode {
        case 1u: {
            y[row] += v;
        }
        case 2u: {
            let qk = p.q_rows + p.kv_rows;
            let cache_row = p.cache_at + step.pos * p.kv_rows;
            if (row >= qk) {
                vc[cache_row + row - qk] = v;
            } else if ((row & 1u) == 0u) {
                let v1 = red[lid + LANES];
                let i = (row % p.head_dim) / 2u;
                let co = rope[i];
                let si = rope[p.head_dim / 2u + i];
                let r0 = v * co - v1 * si;
                let r1 = v * si + v1 * co;
                if (row < p.q_rows) {
                    y[row] = r0;
                    y[row + 1u] = r1;
                } else {
                    kc[cache_row + row - p.q_rows] = r0;
                    kc[cache_row + row - p.q_rows + 1u] = r1;
                }
            }
        }
        case 3u: {
            if ((row & 1u) == 0u) {
                let u = red[lid + LANES];
                y[row / 2u] = v / (1.0 + exp(-v)) * u;
            }
        }
        default: {
            y[row] = v;
        }
    }
}

// The f16 scale of block `blk` when scales are packed two to a word.
fn half_scale(blk: u32) -> f32 {
    let pair = unpack2x16float(w[p.scales_at + blk / 2u]);
    return select(pair.x, pair.y, (blk & 1u) == 1u);
}

// Σ q·xq over one block of nibbles (element j: low nibble of byte j, j + 16: its high nibble).
fn q4_dot(qs_at: u32, b: u32) -> i32 {
    var s = 0i;
    for (var k = 0u; k < 4u; k++) {
        let q = w[qs_at + k];
        s += dot4I8Packed(q & 0x0F0F0F0Fu, xq[b * 8u + k]);
        s += dot4I8Packed((q >> 4u) & 0x0F0F0F0Fu, xq[b * 8u + 4u + k]);
    }
    return s;
}

@compute @workgroup_size(64)
fn matvec_q4_1(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
    stage(lid);
    let row = row_of(wid, nwg, lid);
    let nb = p.cols / 32u;
    var acc = 0.0;
    if (row < p.rows) {
        for (var b = lid % LANES; b < nb; b += LANES) {
            let blk = row * nb + b;
            let dm = unpack2x16float(w[p.scales_at + blk]);
            acc += dm.x * xd[b] * f32(q4_dot(blk * 4u, b)) + dm.y * xs[b];
        }
    }
    finish(lid, row, acc);
}

@compute @workgroup_size(64)
fn matvec_q4_0(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
    stage(lid);
    let row = row_of(wid, nwg, lid);
    let nb = p.cols / 32u;
    var acc = 0.0;
    if (row < p.rows) {
        for (var b = lid % LANES; b < nb; b += LANES) {
            let blk = row * nb + b;
            acc += half_scale(blk) * (xd[b] * f32(q4_dot(blk * 4u, b)) - 8.0 * xs[b]);
        }
    }
    finish(lid, row, acc);
}

@compute @workgroup_size(64)
fn matvec_q8_0(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
    stage(lid);
    let row = row_of(wid, nwg, lid);
    let nb = p.cols / 32u;
    var acc = 0.0;
    if (row < p.rows) {
        for (var b = lid % LANES; b < nb; b += LANES) {
            let blk = row * nb + b;
            var s = 0i;
            for (var k = 0u; k < 8u; k++) {
                s += dot4I8Packed(w[blk * 8u + k], xq[b * 8u + k]);
            }
            acc += half_scale(blk) * xd[b] * f32(s);
        }
    }
    finish(lid, row, acc);
}

fn x4(c: u32, scale: f32) -> vec4<f32> {
    return vec4<f32>(xin(c * 4u, scale), xin(c * 4u + 1u, scale), xin(c * 4u + 2u, scale), xin(c * 4u + 3u, scale));
}

@compute @workgroup_size(64)
fn matvec_f32(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
    let scale = stage(lid);
    let row = row_of(wid, nwg, lid);
    let n4 = p.cols / 4u;
    var acc = 0.0;
    if (row < p.rows) {
        for (var c = lid % LANES; c < n4; c += LANES) {
            let at = (row * n4 + c) * 4u;
            let v = vec4<f32>(bitcast<f32>(w[at]), bitcast<f32>(w[at + 1u]), bitcast<f32>(w[at + 2u]), bitcast<f32>(w[at + 3u]));
            acc += dot(v, x4(c, scale));
        }
    }
    finish(lid, row, acc);
}

@compute @workgroup_size(64)
fn matvec_f16(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
    let scale = stage(lid);
    let row = row_of(wid, nwg, lid);
    let n4 = p.cols / 4u;
    var acc = 0.0;
    if (row < p.rows) {
        for (var c = lid % LANES; c < n4; c += LANES) {
            let at = (row * n4 + c) * 2u;
            let v = vec4<f32>(unpack2x16float(w[at]), unpack2x16float(w[at + 1u]));
            acc += dot(v, x4(c, scale));
        }
    }
    finish(lid, row, acc);
}

@compute @workgroup_size(64)
fn matvec_bf16(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
    let scale = stage(lid);
    let row = row_of(wid, nwg, lid);
    let n4 = p.cols / 4u;
    var acc = 0.0;
    if (row < p.rows) {
        for (var c = lid % LANES; c < n4; c += LANES) {
            let at = (row * n4 + c) * 2u;
            let a = w[at];
            let b = w[at + 1u];
            let v = vec4<f32>(bitcast<f32>(a << 16u), bitcast<f32>(a & 0xFFFF0000u), bitcast<f32>(b << 16u), bitcast<f32>(b & 0xFFFF0000u));
            acc += dot(v, x4(c, scale));
        }
    }
    finish(lid, row, acc);
}
