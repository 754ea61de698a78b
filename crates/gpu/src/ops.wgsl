// The per-token kernels that are not matrix products: attention over the KV cache, and the
// top-k of the logits, each for every column (token) of the pass (matvec.wgsl's columns). Each entry point uses a subset of the bindings below (pipelines use
// layout: auto, so a bind group names just those).

struct Shape {
    d: u32,          // model width (RMSNorm length)
    eps: f32,
    n_heads: u32,
    n_kv_heads: u32,
    head_dim: u32,
    ffn: u32,
    cache_at: u32,   // this layer's first float in the K and V caches
    capacity: u32,   // positions one sequence's cache holds
}

// Columns one pass computes at most (engine.rs's MAX_COLUMNS).
const MAX_N: u32 = 32u;

struct Step {
    k: u32,          // candidates top_k returns per column
    n: u32,          // columns in this pass
    head_from: u32,  // the first column the output head computes
    _pad: u32,
    // Per column: (cache row = sequence × capacity + position, position, the sequence's first
    // cache row, 0).
    cols: array<vec4<u32>, MAX_N>,
}

@group(0) @binding(0) var<storage, read_write> a: array<f32>;
@group(0) @binding(2) var<storage, read_write> c: array<f32>;
@group(0) @binding(3) var<storage, read_write> kc: array<f32>;
@group(0) @binding(4) var<storage, read_write> vc: array<f32>;
@group(0) @binding(5) var<uniform> shape: Shape;
@group(0) @binding(6) var<uniform> step: Step;
@group(0) @binding(8) var<storage, read_write> scratch: array<f32>;
@group(0) @binding(9) var<storage, read_write> out: array<u32>;

// Invocations per workgroup, a power of two (engine.rs sets it per adapter): 256 on GPUs; 64 on
// CPU adapters, where an invocation is a SIMD lane and each barrier of a reduction switches
// between all of a workgroup's lane batches (SwiftShader spent 88 ms of a 400 ms token in
// attention with 256).
override WG: u32 = 256u;
var<workgroup> part: array<f32, WG>;

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

// Single-query grouped-query attention, one workgroup per head (x) and column (y): the column's
// query against its sequence's cache up to its own position (so a prefill chunk is causal),
// scores into scratch, softmax, then the weighted sum of the cached values into c.
@compute @workgroup_size(WG)
fn attention(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) i: u32) {
    let h = wid.x;
    let col = step.cols[wid.y];
    let len = col.y + 1u;
    let hd = shape.head_dim;
    let kvh = h / (shape.n_heads / shape.n_kv_heads);
    let kv_dim = shape.n_kv_heads * hd;
    let q_at = (wid.y * shape.n_heads + h) * hd;
    let base = (wid.y * shape.n_heads + h) * shape.capacity;
    let cache_at = shape.cache_at + col.z * kv_dim;
    let scale = inverseSqrt(f32(hd));
    var m = -3.0e38;
    for (var j = i; j < len; j += WG) {
        let k_at = cache_at + j * kv_dim + kvh * hd;
        var s = 0.0;
        for (var d = 0u; d < hd; d++) {
            s += a[q_at + d] * kc[k_at + d];
        }
        s *= scale;
        scratch[base + j] = s;
        m = max(m, s);
    }
    let mx = reduce_max(i, m);
    var l = 0.0;
    for (var j = i; j < len; j += WG) {
        let p = exp(scratch[base + j] - mx);
        scratch[base + j] = p;
        l += p;
    }
    let total = reduce_sum(i, l);
    storageBarrier();
    for (var d = i; d < hd; d += WG) {
        var o = 0.0;
        for (var j = 0u; j < len; j++) {
            o += scratch[base + j] * vc[cache_at + j * kv_dim + kvh * hd + d];
        }
        c[q_at + d] = o / total;
    }
}

// The `step.k` largest of the `shape.d` values of column wid.x in a, highest first, ties to the
// lower index (the CPU sampler's order), as (f32 bits, index) pairs in out (column j's k pairs
// after column j - 1's): a token reads back 8·k bytes, not the whole vocabulary. One workgroup
// per column; k rounds of a max-reduction, each round removing its
// winner (overwritten with LOWEST, which never compares greater: the search starts there).
// WGSL constants cannot be NaN or infinite (Tint rejects them), hence a finite floor.
const LOWEST: f32 = -3.4028234e38;
var<workgroup> best_v: array<f32, WG>;
var<workgroup> best_i: array<u32, WG>;

@compute @workgroup_size(WG)
fn top_k(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) i: u32) {
    let at = wid.x * shape.d;
    let out_at = wid.x * 2u * step.k;
    for (var r = 0u; r < step.k; r++) {
        var bv = LOWEST;
        var bi = 0xFFFFFFFFu;
        for (var j = i; j < shape.d; j += WG) {
            let v = a[at + j];
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
            out[out_at + 2u * r] = bitcast<u32>(best_v[0]);
            out[out_at + 2u * r + 1u] = best_i[0];
            a[at + best_i[0]] = LOWEST;
        }
        storageBarrier();
        workgroupBarrier();
    }
}
