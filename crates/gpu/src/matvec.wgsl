// y = W · x for one token, with W dequantized in registers as it is read: the weight bytes cross
// the memory bus exactly once. Layouts: see repack.rs.
//
// Each workgroup first stages its input: the optional RMSNorm (the norm fused into its consumer:
// every workgroup recomputes the d-wide sum of squares, which costs far less than a dispatch), then
// for quantized weights the input is rounded to 8-bit blocks of 32 in workgroup memory, exactly as
// ggml's CPU backend and our CPU engine do, so quantized dots are integer dot products
// (dot4I8Packed) and read four activations per 32-bit load.
//
// Shape (overrides, chosen per adapter in matvec.rs): each invocation computes R consecutive rows
// (R even, ≤ 8), so every activation word loaded from workgroup memory serves R rows and the two
// rows of a RoPE or SwiGLU pair are in one invocation; LANES invocations share those rows, each
// taking every LANES-th block, then sum through workgroup memory. On CPU-backed adapters
// (lavapipe, SwiftShader: an invocation is a SIMD lane) LANES = 1, R = 8, WG = 16 reaches the
// probe's bandwidth, where one row per invocation reached a third of it; quantized weights are
// read 16 bytes per load (`w4`). The epilogue then stores, adds (the residual add fused into the projection), rotates
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
// The same buffer as `w`, 16 bytes at a time (quantized kernels' quant region).
@group(0) @binding(9) var<storage, read> w4: array<vec4<u32>>;

override LANES: u32 = 1u;
override R: u32 = 8u;
override WG: u32 = 16u;
// R and WG's largest values (matvec.rs checks them).
const MAX_R: u32 = 8u;
const MAX_WG: u32 = 64u;
// The widest input staged in workgroup memory (checked at load: 10 KB of the 16 KB WebGPU
// guarantees).
const MAX_COLS: u32 = 8192u;

var<workgroup> xq: array<vec4<u32>, 512>;  // MAX_COLS / 16: int8 × 16 per vec4, 2 per block
var<workgroup> xd: array<f32, 256>;        // per block: scale d
var<workgroup> xs: array<f32, 256>;        // per block: d · Σ q
var<workgroup> red: array<f32, 512>;       // MAX_WG · MAX_R

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

// Four int8 of the staged input, packed, and their sum.
fn pack4(at: u32, scale: f32, id: f32, sum: ptr<function, i32>) -> u32 {
    var word = 0u;
    for (var e = 0u; e < 4u; e++) {
        let q = i32(round_away(xin(at + e, scale) * id));
        *sum += q;
        word |= (bitcast<u32>(q) & 0xFFu) << (8u * e);
    }
    return word;
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
            for (var h = 0u; h < 2u; h++) {
                let at = b * 32u + h * 16u;
                let v0 = pack4(at, scale, id, &sum);
                let v1 = pack4(at + 4u, scale, id, &sum);
                let v2 = pack4(at + 8u, scale, id, &sum);
                let v3 = pack4(at + 12u, scale, id, &sum);
                xq[b * 2u + h] = vec4<u32>(v0, v1, v2, v3);
            }
            xd[b] = d;
            xs[b] = d * f32(sum);
        }
    }
    workgroupBarrier();
    return scale;
}

// This invocation's first row.
fn first_row(wid: vec3<u32>, nwg: vec3<u32>, lid: u32) -> u32 {
    return ((wid.x + wid.y * nwg.x) * (WG / LANES) + lid / LANES) * R;
}

// Rows past the end read the last row (in bounds); their results are never stored.
fn row_at(r: u32) -> u32 {
    return min(r, p.rows - 1u);
}

// One output: the epilogue of modes that treat rows alone.
fn put(row: u32, v: f32) {
    if (row >= p.rows) {
        return;
    }
    if (p.mode == 1u) {
        y[row] += v;
    } else {
        y[row] = v;
    }
}

// A pair of rows (2i, 2i+1) through the epilogue.
fn put_pair(row: u32, v0: f32, v1: f32) {
    switch p.mode {
        case 2u: {
            let qk = p.q_rows + p.kv_rows;
            let cache_row = p.cache_at + step.pos * p.kv_rows;
            if (row >= qk) {
                vc[cache_row + row - qk] = v0;
                vc[cache_row + row - qk + 1u] = v1;
            } else {
                let i = (row % p.head_dim) / 2u;
                let co = rope[i];
                let si = rope[p.head_dim / 2u + i];
                let r0 = v0 * co - v1 * si;
                let r1 = v0 * si + v1 * co;
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
            y[row / 2u] = v0 / (1.0 + exp(-v0)) * v1;
        }
        default: {
            put(row, v0);
            put(row + 1u, v1);
        }
    }
}

// Sums the lanes of each row (LANES > 1), then the rows' leader applies the epilogue. The pair
// modes (RoPE, SwiGLU) have even row counts, so a pair never runs past the end.
fn finish(lid: u32, r0: u32, partial: array<f32, MAX_R>) {
    var acc = partial;
    if (LANES > 1u) {
        for (var r = 0u; r < R; r++) {
            red[lid * R + r] = acc[r];
        }
        workgroupBarrier();
        for (var s = LANES / 2u; s > 0u; s = s >> 1u) {
            if (lid % LANES < s) {
                for (var r = 0u; r < R; r++) {
                    red[lid * R + r] += red[(lid + s) * R + r];
                }
            }
            workgroupBarrier();
        }
        for (var r = 0u; r < R; r++) {
            acc[r] = red[lid * R + r];
        }
    }
    if (lid % LANES != 0u) {
        return;
    }
    for (var r = 0u; r < R; r += 2u) {
        if (r0 + r >= p.rows) {
            break;
        }
        put_pair(r0 + r, acc[r], acc[r + 1u]);
    }
}

// The f16 scale of block `blk` when scales are packed two to a word.
fn half_scale(blk: u32) -> f32 {
    let pair = unpack2x16float(w[p.scales_at + blk / 2u]);
    return select(pair.x, pair.y, (blk & 1u) == 1u);
}

// Σ q·x over one block of nibbles (element j: low nibble of byte j, j + 16: its high nibble),
// against the block's staged input (x0: elements 0..15, x1: 16..31).
fn q4_dot(q: vec4<u32>, x0: vec4<u32>, x1: vec4<u32>) -> i32 {
    let lo = q & vec4<u32>(0x0F0F0F0Fu);
    let hi = (q >> vec4<u32>(4u)) & vec4<u32>(0x0F0F0F0Fu);
    return dot4I8Packed(lo.x, x0.x) + dot4I8Packed(lo.y, x0.y) + dot4I8Packed(lo.z, x0.z) + dot4I8Packed(lo.w, x0.w)
         + dot4I8Packed(hi.x, x1.x) + dot4I8Packed(hi.y, x1.y) + dot4I8Packed(hi.z, x1.z) + dot4I8Packed(hi.w, x1.w);
}

fn q8_dot(a: vec4<u32>, b: vec4<u32>, x0: vec4<u32>, x1: vec4<u32>) -> i32 {
    return dot4I8Packed(a.x, x0.x) + dot4I8Packed(a.y, x0.y) + dot4I8Packed(a.z, x0.z) + dot4I8Packed(a.w, x0.w)
         + dot4I8Packed(b.x, x1.x) + dot4I8Packed(b.y, x1.y) + dot4I8Packed(b.z, x1.z) + dot4I8Packed(b.w, x1.w);
}

@compute @workgroup_size(WG)
fn matvec_q4_1(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
    stage(lid);
    let r0 = first_row(wid, nwg, lid);
    let nb = p.cols / 32u;
    var acc: array<f32, MAX_R>;
    for (var b = lid % LANES; b < nb; b += LANES) {
        let x0 = xq[b * 2u];
        let x1 = xq[b * 2u + 1u];
        let d = xd[b];
        let s = xs[b];
        for (var r = 0u; r < R; r++) {
            let blk = row_at(r0 + r) * nb + b;
            let dm = unpack2x16float(w[p.scales_at + blk]);
            acc[r] += dm.x * d * f32(q4_dot(w4[blk], x0, x1)) + dm.y * s;
        }
    }
    finish(lid, r0, acc);
}

@compute @workgroup_size(WG)
fn matvec_q4_0(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
    stage(lid);
    let r0 = first_row(wid, nwg, lid);
    let nb = p.cols / 32u;
    var acc: array<f32, MAX_R>;
    for (var b = lid % LANES; b < nb; b += LANES) {
        let x0 = xq[b * 2u];
        let x1 = xq[b * 2u + 1u];
        let d = xd[b];
        let s = xs[b];
        for (var r = 0u; r < R; r++) {
            let blk = row_at(r0 + r) * nb + b;
            acc[r] += half_scale(blk) * (d * f32(q4_dot(w4[blk], x0, x1)) - 8.0 * s);
        }
    }
    finish(lid, r0, acc);
}

@compute @workgroup_size(WG)
fn matvec_q8_0(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
    stage(lid);
    let r0 = first_row(wid, nwg, lid);
    let nb = p.cols / 32u;
    var acc: array<f32, MAX_R>;
    for (var b = lid % LANES; b < nb; b += LANES) {
        let x0 = xq[b * 2u];
        let x1 = xq[b * 2u + 1u];
        let d = xd[b];
        for (var r = 0u; r < R; r++) {
            let blk = row_at(r0 + r) * nb + b;
            acc[r] += half_scale(blk) * d * f32(q8_dot(w4[blk * 2u], w4[blk * 2u + 1u], x0, x1));
        }
    }
    finish(lid, r0, acc);
}

fn x4(c: u32, scale: f32) -> vec4<f32> {
    return vec4<f32>(xin(c * 4u, scale), xin(c * 4u + 1u, scale), xin(c * 4u + 2u, scale), xin(c * 4u + 3u, scale));
}

// Four weights of a float row: f32 (4 words), f16 or bf16 (2 words).
fn f32_at(at: u32) -> vec4<f32> {
    return bitcast<vec4<f32>>(vec4<u32>(w[at], w[at + 1u], w[at + 2u], w[at + 3u]));
}

fn f16_at(at: u32) -> vec4<f32> {
    return vec4<f32>(unpack2x16float(w[at]), unpack2x16float(w[at + 1u]));
}

fn bf16_at(at: u32) -> vec4<f32> {
    let a = w[at];
    let b = w[at + 1u];
    return bitcast<vec4<f32>>(vec4<u32>(a << 16u, a & 0xFFFF0000u, b << 16u, b & 0xFFFF0000u));
}

@compute @workgroup_size(WG)
fn matvec_f32(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
    let scale = stage(lid);
    let r0 = first_row(wid, nwg, lid);
    let n4 = p.cols / 4u;
    var acc: array<f32, MAX_R>;
    for (var c = lid % LANES; c < n4; c += LANES) {
        let xv = x4(c, scale);
        for (var r = 0u; r < R; r++) {
            acc[r] += dot(f32_at((row_at(r0 + r) * n4 + c) * 4u), xv);
        }
    }
    finish(lid, r0, acc);
}

@compute @workgroup_size(WG)
fn matvec_f16(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
    let scale = stage(lid);
    let r0 = first_row(wid, nwg, lid);
    let n4 = p.cols / 4u;
    var acc: array<f32, MAX_R>;
    for (var c = lid % LANES; c < n4; c += LANES) {
        let xv = x4(c, scale);
        for (var r = 0u; r < R; r++) {
            acc[r] += dot(f16_at((row_at(r0 + r) * n4 + c) * 2u), xv);
        }
    }
    finish(lid, r0, acc);
}

@compute @workgroup_size(WG)
fn matvec_bf16(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
    let scale = stage(lid);
    let r0 = first_row(wid, nwg, lid);
    let n4 = p.cols / 4u;
    var acc: array<f32, MAX_R>;
    for (var c = lid % LANES; c < n4; c += LANES) {
        let xv = x4(c, scale);
        for (var r = 0u; r < R; r++) {
            acc[r] += dot(bf16_at((row_at(r0 + r) * n4 + c) * 2u), xv);
        }
    }
    finish(lid, r0, acc);
}
