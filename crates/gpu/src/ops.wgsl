// The small per-token kernels of a llama layer. Each entry point uses a subset of the bindings
// below (pipelines use layout: auto, so a bind group names just those).

struct Shape {
    d: u32,          // model width (RMSNorm length)
    eps: f32,
    n_heads: u32,
    n_kv_heads: u32,
    head_dim: u32,
    ffn: u32,
    cache_at: u32,   // this layer's first float in the K and V caches
    capacity: u32,   // positions the cache holds
}

struct Step {
    pos: u32,        // position of the token being decoded
    len: u32,        // pos + 1: positions attended to
    _p0: u32,
    _p1: u32,
}

@group(0) @binding(0) var<storage, read_write> a: array<f32>;
@group(0) @binding(1) var<storage, read_write> b: array<f32>;
@group(0) @binding(2) var<storage, read_write> c: array<f32>;
@group(0) @binding(3) var<storage, read_write> kc: array<f32>;
@group(0) @binding(4) var<storage, read_write> vc: array<f32>;
@group(0) @binding(5) var<uniform> shape: Shape;
@group(0) @binding(6) var<uniform> step: Step;
@group(0) @binding(7) var<storage, read> table: array<f32>;
@group(0) @binding(8) var<storage, read_write> scratch: array<f32>;

const WG: u32 = 256u;
var<workgroup> part: array<f32, 256>;

fn reduce_sum(i: u32, v: f32) -> f32 {
    part[i] = v;
    workgroupBarrier();
    for (var k = WG / 2u; k > 0u; k = k >> 1u) {
        if (i < k) {
            part[i] += part[i + k];
        }
        workgroupBarrier();
    }
    let r = part[0];
    workgroupBarrier();
    return r;
}

fn reduce_max(i: u32, v: f32) -> f32 {
    part[i] = v;
    workgroupBarrier();
    for (var k = WG / 2u; k > 0u; k = k >> 1u) {
        if (i < k) {
            part[i] = max(part[i], part[i + k]);
        }
        workgroupBarrier();
    }
    let r = part[0];
    workgroupBarrier();
    return r;
}

// c = rmsnorm(a) · table (a: the residual stream, table: the norm's weight).
@compute @workgroup_size(256)
fn rms_norm(@builtin(local_invocation_index) i: u32) {
    var s = 0.0;
    for (var j = i; j < shape.d; j += WG) {
        s += a[j] * a[j];
    }
    let scale = inverseSqrt(reduce_sum(i, s) / f32(shape.d) + shape.eps);
    for (var j = i; j < shape.d; j += WG) {
        c[j] = a[j] * scale * table[j];
    }
}

// RoPE on q (a, in place) and k (b) with this position's cos/sin (table: cos[half], sin[half]),
// writing the rotated k and the value v (c) into this layer's caches: RoPE fused with the
// KV-cache write.
@compute @workgroup_size(64)
fn rope_kv(@builtin(global_invocation_id) gid: vec3<u32>) {
    let i = gid.x;
    let half = shape.head_dim / 2u;
    let nq = shape.n_heads * half;
    let nk = shape.n_kv_heads * half;
    let kv_dim = shape.n_kv_heads * shape.head_dim;
    let row = shape.cache_at + step.pos * kv_dim;
    if (i < nq + nk) {
        let is_q = i < nq;
        let pair = select(i - nq, i, is_q);
        let at = (pair / half) * shape.head_dim + 2u * (pair % half);
        let co = table[pair % half];
        let si = table[half + pair % half];
        if (is_q) {
            let x0 = a[at];
            let x1 = a[at + 1u];
            a[at] = x0 * co - x1 * si;
            a[at + 1u] = x0 * si + x1 * co;
        } else {
            let x0 = b[at];
            let x1 = b[at + 1u];
            kc[row + at] = x0 * co - x1 * si;
            kc[row + at + 1u] = x0 * si + x1 * co;
        }
    }
    if (i < kv_dim) {
        vc[row + i] = c[i];
    }
}

// Single-query grouped-query attention, one workgroup per head: scores into scratch, softmax,
// then the weighted sum of the cached values into c.
@compute @workgroup_size(256)
fn attention(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) i: u32) {
    let h = wid.x;
    let hd = shape.head_dim;
    let kvh = h / (shape.n_heads / shape.n_kv_heads);
    let kv_dim = shape.n_kv_heads * hd;
    let base = h * shape.capacity;
    let scale = inverseSqrt(f32(hd));
    var m = -3.0e38;
    for (var j = i; j < step.len; j += WG) {
        let k_at = shape.cache_at + j * kv_dim + kvh * hd;
        var s = 0.0;
        for (var d = 0u; d < hd; d++) {
            s += a[h * hd + d] * kc[k_at + d];
        }
        s *= scale;
        scratch[base + j] = s;
        m = max(m, s);
    }
    let mx = reduce_max(i, m);
    var l = 0.0;
    for (var j = i; j < step.len; j += WG) {
        let p = exp(scratch[base + j] - mx);
        scratch[base + j] = p;
        l += p;
    }
    let total = reduce_sum(i, l);
    storageBarrier();
    for (var d = i; d < hd; d += WG) {
        var o = 0.0;
        for (var j = 0u; j < step.len; j++) {
            o += scratch[base + j] * vc[shape.cache_at + j * kv_dim + kvh * hd + d];
        }
        c[h * hd + d] = o / total;
    }
}

// SwiGLU: a = silu(a) · b.
@compute @workgroup_size(64)
fn silu_mul(@builtin(global_invocation_id) gid: vec3<u32>) {
    let i = gid.x;
    if (i < shape.ffn) {
        let g = a[i];
        a[i] = g / (1.0 + exp(-g)) * b[i];
    }
}
