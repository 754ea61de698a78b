// The per-token kernels that are not matrix products: attention over the KV cache, and the
// top-k of the logits. Each entry point uses a subset of the bindings below (pipelines use
// layout: auto, so a bind group names just those).

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
    k: u32,          // candidates top_k returns
    _pad: u32,
}

@group(0) @binding(0) var<storage, read_write> a: array<f32>;
@group(0) @binding(2) var<storage, read_write> c: array<f32>;
@group(0) @binding(3) var<storage, read_write> kc: array<f32>;
@group(0) @binding(4) var<storage, read_write> vc: array<f32>;
@group(0) @binding(5) var<uniform> shape: Shape;
@group(0) @binding(6) var<uniform> step: Step;
@group(0) @binding(8) var<storage, read_write> scratch: array<f32>;
@group(0) @binding(9) var<storage, read_write> out: array<u32>;

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

// The `step.k` largest of the `shape.d` values in a, highest first, ties to the lower index
// (the CPU sampler's order), as (f32 bits, index) pairs in out: a token reads back 8·k bytes,
// not the whole vocabulary. One workgroup; k rounds of a max-reduction, each round removing its
// winner (overwritten with LOWEST, which never compares greater: the search starts there).
// WGSL constants cannot be NaN or infinite (Tint rejects them), hence a finite floor.
const LOWEST: f32 = -3.4028234e38;
var<workgroup> best_v: array<f32, 256>;
var<workgroup> best_i: array<u32, 256>;

@compute @workgroup_size(256)
fn top_k(@builtin(local_invocation_index) i: u32) {
    for (var r = 0u; r < step.k; r++) {
        var bv = LOWEST;
        var bi = 0xFFFFFFFFu;
        for (var j = i; j < shape.d; j += WG) {
            let v = a[j];
            if (v > bv) {
                bv = v;
                bi = j;
            }
        }
        best_v[i] = bv;
        best_i[i] = bi;
        workgroupBarrier();
        for (var s = WG / 2u; s > 0u; s = s >> 1u) {
            if (i < s) {
                let ov = best_v[i + s];
                let oi = best_i[i + s];
                if (ov > best_v[i] || (ov == best_v[i] && oi < best_i[i])) {
                    best_v[i] = ov;
                    best_i[i] = oi;
                }
            }
            workgroupBarrier();
        }
        if (i == 0u) {
            out[2u * r] = bitcast<u32>(best_v[0]);
            out[2u * r + 1u] = best_i[0];
            a[best_i[0]] = LOWEST;
        }
        storageBarrier();
        workgroupBarrier();
    }
}
