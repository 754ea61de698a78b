// The per-token kernels that are not matrix products: attention over the KV cache, and the
// top-k of the logits, each for every column (token) of the pass (matvec.wgsl's columns). Each
// entry point uses a subset of the bindings below (pipelines use layout: auto, so a bind group
// names just those).

struct Shape {
    d: u32,          // top_k: values per column
    eps: f32,
    n_heads: u32,
    n_kv_heads: u32,
    head_dim: u32,
    max_splits: u32, // attention: partial records per (column, head)
    cache_at: u32,   // this layer's first float in the K and V caches
    capacity: u32,   // positions one sequence's cache holds
    ml_at: u32,      // attention: the first vec4 of the (max, sum) records in `c`
    _p0: u32,
    _p1: u32,
    _p2: u32,
}

// Columns one pass computes at most (engine.rs's MAX_COLUMNS).
const MAX_N: u32 = 32u;

struct Step {
    k: u32,          // candidates top_k returns per column
    n: u32,          // columns in this pass
    head_from: u32,  // the first column the output head computes
    splits: u32,     // attention: workgroups per (column, head), each over a share of the cache
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
// WGSL constants cannot be NaN or infinite (Tint rejects them), hence a finite floor.
const LOWEST: f32 = -3.4028234e38;

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

// Single-query grouped-query attention split across workgroups (flash-decoding, Dao et al.
// 2023): workgroup (head x, split y, column z) takes one of `step.splits` equal shares of the
// column's cache up to its own position (so a prefill chunk is causal): its scores into
// scratch, their max and sum by reduction, then the weighted sum of the share's values, with
// WG ÷ head_dim positions side by side where the head is narrower than the workgroup. It writes
// the share's unnormalised output and its (max, sum); the output projection's input staging
// combines the shares (matvec.wgsl's `combined4`), so no dispatch is added and no head's cache
// is serialised in one workgroup. The barriers are the unsplit kernel's: two reductions (CPU
// adapters pay for every barrier; an online-softmax loop over tiles measured slower there).
@compute @workgroup_size(WG)
fn attention(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) i: u32) {
    let h = wid.x;
    let split = wid.y;
    let jc = wid.z;
    let col = step.cols[jc];
    let len = col.y + 1u;
    let per = (len + step.splits - 1u) / step.splits;
    let lo = min(split * per, len);
    let hi = min(lo + per, len);
    let hd = shape.head_dim;
    let kvh = h / (shape.n_heads / shape.n_kv_heads);
    let kv_dim = shape.n_kv_heads * hd;
    let q_at = (jc * shape.n_heads + h) * hd;
    let base = (jc * shape.n_heads + h) * shape.capacity;
    let cache_at = shape.cache_at + col.z * kv_dim + kvh * hd;
    let scale = inverseSqrt(f32(hd));
    var m_own = LOWEST;
    for (var j = lo + i; j < hi; j += WG) {
        let k_at = cache_at + j * kv_dim;
        var s = 0.0;
        for (var d = 0u; d < hd; d++) {
            s += a[q_at + d] * kc[k_at + d];
        }
        s *= scale;
        scratch[base + j] = s;
        m_own = max(m_own, s);
    }
    let m = reduce_max(i, m_own);
    var l_own = 0.0;
    for (var j = lo + i; j < hi; j += WG) {
        let p = exp(scratch[base + j] - m);
        scratch[base + j] = p;
        l_own += p;
    }
    let l = reduce_sum(i, l_own);
    storageBarrier();
    // Positions side by side in the weighted sum, and the dimensions one pass of them covers.
    let groups = max(1u, WG / hd);
    let span = select(WG, hd, groups > 1u);
    let g = i / span;
    let rec = (jc * shape.n_heads + h) * shape.max_splits + split;
    for (var d0 = 0u; d0 < hd; d0 += span) {
        let d = d0 + i % span;
        var o = 0.0;
        if (g < groups && d < hd) {
            for (var j = lo + g; j < hi; j += groups) {
                o += scratch[base + j] * vc[cache_at + j * kv_dim + d];
            }
        }
        if (groups == 1u) {
            if (d < hd) {
                c[rec * hd + d] = o;
            }
        } else {
            part[i] = o;
            workgroupBarrier();
            if (i < span && d < hd) {
                var t = 0.0;
                for (var q = 0u; q < groups; q++) {
                    t += part[q * span + i];
                }
                c[rec * hd + d] = t;
            }
            workgroupBarrier();
        }
    }
    if (i == 0u) {
        c[(shape.ml_at + rec) * 4u] = m;
        c[(shape.ml_at + rec) * 4u + 1u] = l;
    }
}

// The `step.k` largest of the `shape.d` values of column wid.x in a, highest first, ties to the
// lower index (the CPU sampler's order), as (f32 bits, index) pairs in out (column j's k pairs
// after column j - 1's): a token reads back 8·k bytes, not the whole vocabulary. One workgroup
// per column: each invocation keeps the best of its strided slice, and each of k rounds is a
// max-reduction over those; only the winner's invocation removes it (overwritten with LOWEST,
// which never compares greater: the search starts there) and rescans its slice, so k rounds
// read the vocabulary once plus k slices, not k times (top-k 40 sampling read it 40 times).
var<workgroup> best_v: array<f32, WG>;
var<workgroup> best_i: array<u32, WG>;

// The best of invocation i's slice of column `at`: (value, index; 0xFFFFFFFF when none).
fn slice_best(at: u32, i: u32) -> vec2<u32> {
    var bv = LOWEST;
    var bi = 0xFFFFFFFFu;
    for (var j = i; j < shape.d; j += WG) {
        let v = a[at + j];
        if (v > bv) {
            bv = v;
            bi = j;
        }
    }
    return vec2<u32>(bitcast<u32>(bv), bi);
}

@compute @workgroup_size(WG)
fn top_k(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) i: u32) {
    let at = wid.x * shape.d;
    let out_at = wid.x * 2u * step.k;
    var own = slice_best(at, i);
    for (var r = 0u; r < step.k; r++) {
        best_v[i] = bitcast<f32>(own.x);
        best_i[i] = own.y;
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
        let win = best_i[0];
        if (i == 0u) {
            out[out_at + 2u * r] = bitcast<u32>(best_v[0]);
            out[out_at + 2u * r + 1u] = win;
        }
        // Everyone has read the winner before the next round writes best_v and best_i.
        workgroupBarrier();
        if (win != 0xFFFFFFFFu && win % WG == i) {
            a[at + win] = LOWEST;
            own = slice_best(at, i);
        }
    }
}
