// The per-token kernels that are not matrix products: attention over the KV cache, the top-k of
// the logits, and for the non-llama families the Q/K/V step (bias, per-head RMSNorm, RoPE,
// KV write) and the post-norm residual add, each for every column (token) of the pass
// (matvec.wgsl's columns). Each
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
    window: u32,     // attention: positions a query sees back (itself included), 0: all
    scale: f32,      // attention: what Q·K is multiplied by
    flags: u32,      // qkv_post: 1 bias, 2 per-head Q/K norm, 4 RoPE on halves
    rope_at: u32,    // qkv_post: this layer's RoPE table (per column cos then sin) in `rope`
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
// The K and V caches: f16 pairs (half.wgsl's `kv_pack`), indexed by value / 2.
@group(0) @binding(3) var<storage, read_write> kc: array<u32>;
@group(0) @binding(4) var<storage, read_write> vc: array<u32>;
@group(0) @binding(5) var<uniform> shape: Shape;
@group(0) @binding(6) var<uniform> step: Step;
@group(0) @binding(8) var<storage, read_write> scratch: array<f32>;
@group(0) @binding(9) var<storage, read_write> out: array<u32>;
@group(0) @binding(10) var<storage, read> gains: array<f32>;
@group(0) @binding(11) var<storage, read> bias: array<f32>;
@group(0) @binding(12) var<storage, read> rope: array<f32>;

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
    // A sliding-window layer attends to the last `window` positions only.
    let first = select(0u, len - min(len, shape.window), shape.window > 0u);
    let per = (len - first + step.splits - 1u) / step.splits;
    let lo = min(first + split * per, len);
    let hi = min(lo + per, len);
    let hd = shape.head_dim;
    let kvh = h / (shape.n_heads / shape.n_kv_heads);
    let kv_dim = shape.n_kv_heads * hd;
    let q_at = (jc * shape.n_heads + h) * hd;
    let base = (jc * shape.n_heads + h) * shape.capacity;
    let cache_at = shape.cache_at + col.z * kv_dim + kvh * hd;
    let scale = shape.scale;
    var m_own = LOWEST;
    for (var j = lo + i; j < hi; j += WG) {
        let k_at = cache_at + j * kv_dim;
        var s = 0.0;
        for (var d = 0u; d < hd; d += 2u) {
            let k2 = unpack2x16float(kc[(k_at + d) / 2u]);
            s += a[q_at + d] * k2.x + a[q_at + d + 1u] * k2.y;
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
            // cache_at and kv_dim are even (head_dim is): every position's value d is the same
            // half of its word.
            let odd = (d & 1u) == 1u;
            for (var j = lo + g; j < hi; j += groups) {
                let v2 = unpack2x16float(vc[(cache_at + j * kv_dim + d) / 2u]);
                o += scratch[base + j] * select(v2.x, v2.y, odd);
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

// The `step.k` largest of the `shape.d` values of column wid.z in a, highest first, ties to the
// lower index (the CPU sampler's order), as (f32 bits, index) pairs in out (column j's k pairs
// after column j - 1's): a token reads back 8·k bytes, not the whole vocabulary. Each
// invocation keeps the best of its strided slice, and each of k rounds is a max-reduction over
// those; only the winner's invocation removes it (overwritten with LOWEST, which is never
// picked) and rescans its slice, so k rounds read the values once plus k slices, not k times.
// A large vocabulary is not left to one workgroup (Gemma's 262,144 logits would be one
// workgroup's serial scan): TOP_K_STAGE 1 runs a workgroup per chunk of TOP_K_CHUNK values
// (wid.x), each writing its own k best to `parts`; stage 2 then picks the k best of those
// chunks × k candidates. Stage 0 is the one-workgroup pass, for vocabularies of one chunk.
override TOP_K_STAGE: u32 = 0u;
override TOP_K_CHUNK: u32 = 4096u;
// Candidate slots per chunk in `parts` (engine.rs's MAX_TOP_K).
override TOP_K_MAX: u32 = 64u;
@group(0) @binding(7) var<storage, read_write> parts: array<u32>;
var<workgroup> best_v: array<f32, WG>;
var<workgroup> best_i: array<u32, WG>;
var<workgroup> best_q: array<u32, WG>;

fn top_k_chunks() -> u32 {
    return (shape.d + TOP_K_CHUNK - 1u) / TOP_K_CHUNK;
}

// Where item q of column `col`'s candidates is: an index into `parts` (stage 2: chunk q / k,
// its slot q % k) or into `a` (the values from `lo`).
fn top_k_at(col: u32, lo: u32, q: u32) -> u32 {
    if (TOP_K_STAGE == 2u) {
        return ((col * top_k_chunks() + q / step.k) * TOP_K_MAX + q % step.k) * 2u;
    }
    return col * shape.d + lo + q;
}

// Item q as (f32 bits, token index).
fn top_k_item(col: u32, lo: u32, q: u32) -> vec2<u32> {
    let at = top_k_at(col, lo, q);
    if (TOP_K_STAGE == 2u) {
        return vec2<u32>(parts[at], parts[at + 1u]);
    }
    return vec2<u32>(bitcast<u32>(a[at]), lo + q);
}

fn top_k_remove(col: u32, lo: u32, q: u32) {
    let at = top_k_at(col, lo, q);
    if (TOP_K_STAGE == 2u) {
        parts[at] = bitcast<u32>(LOWEST);
    } else {
        a[at] = LOWEST;
    }
}

// The best of invocation i's slice of the n items: (f32 bits, token; 0xFFFFFFFF when none,
// item). Higher value, then lower token: stage 2's items are not in token order.
fn slice_best(col: u32, lo: u32, n: u32, i: u32) -> vec3<u32> {
    var bv = LOWEST;
    var bt = 0xFFFFFFFFu;
    var bq = 0u;
    for (var q = i; q < n; q += WG) {
        let it = top_k_item(col, lo, q);
        let v = bitcast<f32>(it.x);
        if (v > bv || (v == bv && v > LOWEST && it.y < bt)) {
            bv = v;
            bt = it.y;
            bq = q;
        }
    }
    return vec3<u32>(bitcast<u32>(bv), bt, bq);
}

@compute @workgroup_size(WG)
fn top_k(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) i: u32) {
    let col = wid.z;
    var lo = 0u;
    var n = shape.d;
    var out_at = col * 2u * step.k;
    if (TOP_K_STAGE == 1u) {
        lo = wid.x * TOP_K_CHUNK;
        n = min(TOP_K_CHUNK, shape.d - lo);
        out_at = (col * top_k_chunks() + wid.x) * TOP_K_MAX * 2u;
    } else if (TOP_K_STAGE == 2u) {
        n = top_k_chunks() * step.k;
    }
    var own = slice_best(col, lo, n, i);
    for (var r = 0u; r < step.k; r++) {
        best_v[i] = bitcast<f32>(own.x);
        best_i[i] = own.y;
        best_q[i] = own.z;
        workgroupBarrier();
        for (var s = WG / 2u; s > 0u; s = s >> 1u) {
            if (i < s) {
                let ov = best_v[i + s];
                let oi = best_i[i + s];
                if (ov > best_v[i] || (ov == best_v[i] && oi < best_i[i])) {
                    best_v[i] = ov;
                    best_i[i] = oi;
                    best_q[i] = best_q[i + s];
                }
            }
            workgroupBarrier();
        }
        let win = best_i[0];
        let win_q = best_q[0];
        if (i == 0u) {
            let pair = vec2<u32>(bitcast<u32>(best_v[0]), win);
            if (TOP_K_STAGE == 1u) {
                parts[out_at + 2u * r] = pair.x;
                parts[out_at + 2u * r + 1u] = pair.y;
            } else {
                out[out_at + 2u * r] = pair.x;
                out[out_at + 2u * r + 1u] = pair.y;
            }
        }
        // Everyone has read the winner before the next round writes best_v and best_i.
        workgroupBarrier();
        if (win != 0xFFFFFFFFu && win_q % WG == i) {
            top_k_remove(col, lo, win_q);
            own = slice_best(col, lo, n, i);
        }
    }
}

// The largest head the Q/K/V step holds in workgroup memory (the CPU engine's MAX_HEAD_DIM).
const MAX_HD: u32 = 256u;
var<workgroup> head_v: array<f32, MAX_HD>;

// The Q/K/V step of the families whose projections cannot end in matvec's fused RoPE epilogue
// (gemma3 and qwen3 normalise each head first; their RoPE pairs i with i + hd/2): workgroup
// (head slot x, column z) over `a`, the pass's stacked Q, K, V rows per column (matvec's
// Store). Slots 0..n_heads are Q heads (into `c`, attention's input), then K heads and V heads
// (into this position's cache rows). Adds the bias, RMS-normalises Q and K heads with their
// gains (`gains`: Q's then K's, head_dim each), rotates them by this layer's RoPE table.
@compute @workgroup_size(WG)
fn qkv_post(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) i: u32) {
    let slot = wid.x;
    let jc = wid.z;
    let hd = shape.head_dim;
    let qd = shape.n_heads * hd;
    let kvd = shape.n_kv_heads * hd;
    let row0 = slot * hd;  // first row of this head among the stacked Q, K, V rows
    let at = jc * (qd + 2u * kvd) + row0;
    let is_q = slot < shape.n_heads;
    let is_v = row0 >= qd + kvd;
    var ss = 0.0;
    for (var e = i; e < hd; e += WG) {
        var v = a[at + e];
        if ((shape.flags & 1u) != 0u) {
            v += bias[row0 + e];
        }
        head_v[e] = v;
        ss += v * v;
    }
    let cache_row = shape.cache_at + step.cols[jc].x * kvd;
    // The cache takes pairs of values (2e, 2e + 1), which other invocations staged.
    workgroupBarrier();
    if (is_v) {
        for (var e = 2u * i; e < hd; e += 2u * WG) {
            vc[(cache_row + row0 - qd - kvd + e) / 2u] = kv_pack(head_v[e], head_v[e + 1u]);
        }
        return;
    }
    let sum = reduce_sum(i, ss);
    let inv = inverseSqrt(sum / f32(hd) + shape.eps);
    let g_at = select(hd, 0u, is_q);
    if ((shape.flags & 2u) != 0u) {
        for (var e = i; e < hd; e += WG) {
            head_v[e] = head_v[e] * inv * gains[g_at + e];
        }
    }
    workgroupBarrier();
    let r_at = shape.rope_at + jc * hd;
    if (is_q) {
        for (var e = i; e < hd; e += WG) {
            c[jc * qd + row0 + e] = rotated(e, hd, r_at);
        }
    } else {
        for (var e = 2u * i; e < hd; e += 2u * WG) {
            kc[(cache_row + row0 - qd + e) / 2u] = kv_pack(rotated(e, hd, r_at), rotated(e + 1u, hd, r_at));
        }
    }
}

// Element e of the staged head (`head_v`) rotated by RoPE with the angles at `r_at`: its pair is
// (e, e ± hd/2) on halves (flag 4), (2k, 2k+1) otherwise.
fn rotated(e: u32, hd: u32, r_at: u32) -> f32 {
    let half = hd / 2u;
    var k: u32;
    var mate: u32;
    var first: bool;
    if ((shape.flags & 4u) != 0u) {
        first = e < half;
        k = select(e - half, e, first);
        mate = select(e - half, e + half, first);
    } else {
        first = (e & 1u) == 0u;
        k = e / 2u;
        mate = select(e - 1u, e + 1u, first);
    }
    let co = rope[r_at + k];
    let si = rope[r_at + half + k];
    let x = head_v[e];
    let y = head_v[mate];
    return select(y * si + x * co, x * co - y * si, first);
}

// x += RMSNorm(c) · gains, per column (workgroup z): the post-attention and post-FFN norms of
// gemma3, applied to a projection's output before the residual add.
@compute @workgroup_size(WG)
fn norm_add(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) i: u32) {
    let at = wid.z * shape.d;
    var ss = 0.0;
    for (var e = i; e < shape.d; e += WG) {
        ss += c[at + e] * c[at + e];
    }
    let inv = inverseSqrt(reduce_sum(i, ss) / f32(shape.d) + shape.eps);
    for (var e = i; e < shape.d; e += WG) {
        a[at + e] += c[at + e] * inv * gains[e];
    }
}
