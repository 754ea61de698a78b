// y = W · x for one token, with W dequantized in registers as it is read: the weight bytes cross
// the memory bus exactly once. Layouts: see repack.rs (rows interleaved in groups of R, so the
// invocation owning a group reads one sequential stream; `tile0`).
//
// Each workgroup first stages its input: the optional RMSNorm (the norm fused into its consumer:
// every workgroup recomputes the d-wide sum of squares, which costs far less than a dispatch), then
// for quantized weights the input is rounded to 8-bit blocks of 32 in workgroup memory, exactly as
// ggml's CPU backend and our CPU engine do, so quantized dots are integer dot products
// (dot4I8Packed) and read four activations per 32-bit load.
//
// Columns: one call multiplies W by up to `step.n` input vectors (the tokens of a prefill chunk,
// or one token of each sequence in a batched decode), NC of them per workgroup (wid.z picks the
// column tile): each weight word, once loaded and unpacked, serves NC columns from registers, so
// the weights cross the bus once per NC tokens instead of once per token (a register-tiled
// matrix-matrix product; NC = 1 is the one-token decode). Column j's inputs and outputs lie at
// j × their width; its cache row, position and rotation come from `step.cols[j]` and `rope`.
//
// Shape (overrides, chosen per adapter in matvec.rs): each invocation computes R consecutive rows
// (R = 2, 4 or 8), so every activation word loaded from workgroup memory serves R rows and the two
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
    // 1: the output head, which computes only the columns from step.head_from (column j's logits
    // at (j - head_from) × rows).
    head: u32,
    // COMBINE: attention's shares per head in x, and the first vec4 of their (max, sum) records.
    max_splits: u32,
    ml_at: u32,
    // Column oc's row r is stored at oc · y_rows + y_at + r (modes 0 and 1): a matrix that is
    // a row slice of a larger output (an output head split across bindings) writes its part.
    y_rows: u32,
    y_at: u32,
    // Q5_0/Q5_1: the first of their fifth-bit words, one per block in tile order (repack.rs).
    qh_at: u32,
    _pad0: u32,
    _pad1: u32,
    _pad2: u32,
}

// Columns one pass computes at most (engine.rs's MAX_COLUMNS).
const MAX_N: u32 = 32u;

struct Step {
    k: u32,          // candidates top_k returns per column
    n: u32,          // columns in this pass
    head_from: u32,  // the first column the output head computes
    splits: u32,     // attention's shares per (column, head)
    // Per column: (cache row = sequence × capacity + position, position, the sequence's first
    // cache row, 0).
    cols: array<vec4<u32>, MAX_N>,
}

@group(0) @binding(0) var<storage, read> w: array<u32>;
@group(0) @binding(1) var<storage, read> x: array<vec4<f32>>;
@group(0) @binding(2) var<storage, read_write> y: array<f32>;
@group(0) @binding(3) var<uniform> p: Params;
@group(0) @binding(4) var<storage, read> g: array<vec4<f32>>;
// The K and V caches: f16 pairs (half.wgsl's `kv_pack`), indexed by value / 2.
@group(0) @binding(5) var<storage, read_write> kc: array<u32>;
@group(0) @binding(6) var<storage, read_write> vc: array<u32>;
@group(0) @binding(7) var<storage, read> rope: array<f32>;
@group(0) @binding(8) var<uniform> step: Step;
// The same buffer as `w`, 16 bytes at a time.
@group(0) @binding(9) var<storage, read> w4: array<vec4<u32>>;

override LANES: u32 = 1u;
override R: u32 = 8u;
override WG: u32 = 16u;
// Columns per workgroup: 1 for one token; more for prefill chunks and batches (matvec.rs picks
// it per matrix so that NC staged inputs fit MAX_COLS, and WG × R × NC fits `red`).
override NC: u32 = 1u;
// true: x holds attention's partial shares (ops.wgsl's `attention`), head_dim wide, max_splits
// per head: the input is their combination (`combined4`). An override, so the other pipelines
// carry no trace of it (a uniform branch in every input load cost lavapipe's JIT).
override COMBINE: bool = false;
// R, WG and NC's largest values (matvec.rs checks them).
const MAX_R: u32 = 8u;
const MAX_WG: u32 = 64u;
const MAX_NC: u32 = 8u;
const MAX_RC: u32 = 64u;  // MAX_R × MAX_NC
// The most input values a column tile stages, all its columns together (12 KB of the 16 KB
// WebGPU guarantees); one column may stage more where the device's workgroup memory allows
// (matvec.rs's `widest_row`), its arrays sized by the overrides below.
const MAX_COLS: u32 = 8192u;
// The workgroup arrays' lengths, set per pipeline (matvec.rs) to what its matrix stages: a
// browser zeroes every workgroup variable at the start of every workgroup (WebGPU requires it),
// and arrays sized for the widest case made that zeroing cost more than a small matvec's work on
// SwiftShader. The defaults are the largest sizes.
override XQ_LEN: u32 = 512u;   // NC · cols / 16: int8 × 16 per vec4, 2 per block
override XB_LEN: u32 = 256u;   // NC · cols / 32: one per block
override RED_LEN: u32 = 512u;  // WG, or WG · R · NC when LANES > 1

var<workgroup> xq: array<vec4<u32>, XQ_LEN>;
var<workgroup> xd: array<f32, XB_LEN>;   // per block: scale d
var<workgroup> xs: array<f32, XB_LEN>;   // per block: d · Σ q
var<workgroup> red: array<f32, RED_LEN>;

// Rust's f32::round: half away from zero (WGSL's round() is half to even).
fn round_away4(v: vec4<f32>) -> vec4<f32> {
    return sign(v) * floor(abs(v) + 0.5);
}

// The call's first input column: the head computes only the columns from step.head_from.
fn first_col() -> u32 {
    return select(0u, step.head_from, p.head == 1u);
}

// Columns this call computes.
fn n_cols() -> u32 {
    return step.n - first_col();
}

// The input column of this workgroup's column c (from c0): past the last column, the last one
// again, so every staged value is finite and nothing is stored for it.
fn in_col(c0: u32, c: u32) -> u32 {
    return first_col() + min(c0 + c, n_cols() - 1u);
}

// WGSL constants cannot be NaN or infinite, hence a finite floor.
const LOWEST: f32 = -3.4028234e38;

// Four outputs (vec4 index i within a column) of attention for input column `col`: its
// `step.splits` shares of the head's cache combined by their maxima and sums (the combine step
// of flash-decoding, fused into the input staging of the projection that consumes it).
fn combined4(col: u32, i: u32) -> vec4<f32> {
    let hd4 = p.head_dim / 4u;
    let base = (col * (p.cols / p.head_dim) + i / hd4) * p.max_splits;
    var mx = LOWEST;
    for (var s = 0u; s < step.splits; s++) {
        mx = max(mx, x[p.ml_at + base + s].x);
    }
    var sum = 0.0;
    var o = vec4<f32>(0.0);
    for (var s = 0u; s < step.splits; s++) {
        let ml = x[p.ml_at + base + s];
        let w = exp(ml.x - mx);
        sum += ml.y * w;
        o += x[(base + s) * hd4 + i % hd4] * w;
    }
    return o / sum;
}

// Four input elements (i: vec4 index within a column) of input column `col` as the product sees
// them (x and g are read 16 bytes at a time: on CPU adapters every load costs alike, whatever
// its width).
fn xin4(col: u32, i: u32, scale: f32) -> vec4<f32> {
    if (COMBINE) {
        return combined4(col, i);
    }
    let v = x[col * (p.cols / 4u) + i];
    if (p.norm == 1u) {
        return v * scale * g[i];
    }
    return v;
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

// Four int8, packed: element e in byte e.
fn pack4(q: vec4<i32>) -> u32 {
    let b = (bitcast<vec4<u32>>(q) & vec4<u32>(0xFFu)) << vec4<u32>(0u, 8u, 16u, 24u);
    return b.x | b.y | b.z | b.w;
}

// RMSNorm's scale of each of the workgroup's columns (1 without a norm), and for quantized
// weights their inputs rounded to 8-bit blocks in workgroup memory: column c's block b at
// xq[(c·nb + b)·2], xd[c·nb + b], xs[c·nb + b].
fn stage(lid: u32, c0: u32) -> array<f32, MAX_NC> {
    var scale: array<f32, MAX_NC>;
    let n4 = p.cols / 4u;
    for (var c = 0u; c < NC; c++) {
        scale[c] = 1.0;
        if (p.norm == 1u) {
            let at = in_col(c0, c) * n4;
            var s = 0.0;
            for (var i = lid; i < n4; i += WG) {
                let v = x[at + i];
                s += dot(v, v);
            }
            scale[c] = 1.0 / sqrt(reduce(lid, s) / f32(p.cols) + p.eps);
        }
    }
    if (p.quantized != 0u) {
        let nb = p.cols / 32u;
        for (var cb = lid; cb < NC * nb; cb += WG) {
            let c = cb / nb;
            let b = cb % nb;
            let col = in_col(c0, c);
            var v: array<vec4<f32>, 8>;
            var amax4 = vec4<f32>(0.0);
            for (var k = 0u; k < 8u; k++) {
                v[k] = xin4(col, b * 8u + k, scale[c]);
                amax4 = max(amax4, abs(v[k]));
            }
            var d = max(max(amax4.x, amax4.y), max(amax4.z, amax4.w)) / 127.0;
            var id = select(0.0, 1.0 / d, d != 0.0);
            if (p.quantized == 2u) {
                // Q8_K (K-quant weights): the super-block's value of largest magnitude, signed,
                // maps to −127; rounding half to even (WGSL's round), capped at 127.
                let sb0 = b / 8u * 8u;
                var mx = 0.0;
                for (var i = sb0 * 8u; i < sb0 * 8u + 64u; i++) {
                    let w = xin4(col, i, scale[c]);
                    for (var e = 0u; e < 4u; e++) {
                        if (abs(w[e]) > abs(mx)) {
                            mx = w[e];
                        }
                    }
                }
                id = select(0.0, -127.0 / mx, mx != 0.0);
                d = select(0.0, 1.0 / id, mx != 0.0);
            }
            var sum = vec4<i32>(0);
            var words: array<u32, 8>;
            for (var k = 0u; k < 8u; k++) {
                let r = select(round_away4(v[k] * id), min(round(v[k] * id), vec4<f32>(127.0)), p.quantized == 2u);
                let q = vec4<i32>(r);
                sum += q;
                words[k] = pack4(q);
            }
            xq[cb * 2u] = vec4<u32>(words[0], words[1], words[2], words[3]);
            xq[cb * 2u + 1u] = vec4<u32>(words[4], words[5], words[6], words[7]);
            xd[cb] = d;
            xs[cb] = d * f32(sum.x + sum.y + sum.z + sum.w);
        }
    }
    workgroupBarrier();
    return scale;
}

// Column c's staged block b (quantized weights): its int8 words, scale and d·Σq.
struct Block {
    x0: vec4<u32>,
    x1: vec4<u32>,
    d: f32,
    s: f32,
}

// Read where it is used, once per row, not gathered per block into a local array of MAX_NC
// blocks: with that array, decode on SwiftShader was 2.5× slower (0.2 against 0.5 tok/s; WGSL
// zero-initializes a local array, and SwiftShader does not unroll the column loop that fills it).
// The one-column kernels (NC = 1: decode, an override, so the branch folds) read it once per
// block instead, for all R rows: on lavapipe a 3072×576 Q4_1 dispatch took 347 µs against 622.
fn staged(c: u32, b: u32, nb: u32) -> Block {
    let i = c * nb + b;
    return Block(xq[i * 2u], xq[i * 2u + 1u], xd[i], xs[i]);
}

// This invocation's first row.
fn first_row(wid: vec3<u32>, nwg: vec3<u32>, lid: u32) -> u32 {
    return ((wid.x + wid.y * nwg.x) * (WG / LANES) + lid / LANES) * R;
}

// The first tile of rows r0 .. r0 + R (one row group, r0 a multiple of R) at unit `u` (a block,
// or four values of a float row), with `units` per row: repack.rs's `tile`. The rows of a group
// are padded to R in the buffer, so every tile read is in bounds; rows past the end are never
// stored.
fn tile0(r0: u32, u: u32, units: u32) -> u32 {
    return r0 * units + u * R;
}

// `n` (1, 2 or 4) consecutive scale words from `at` (aligned to n): one 16-byte load when n is 4,
// since on CPU adapters the number of loads, not their width, is what costs. `n` is a constant
// of the pipeline, so the branches fold away.
fn scale_words(at: u32, n: u32) -> vec4<u32> {
    if (n == 4u) {
        return w4[at / 4u];
    }
    if (n == 2u) {
        return vec4<u32>(w[at], w[at + 1u], 0u, 0u);
    }
    return vec4<u32>(w[at], 0u, 0u, 0u);
}

// Scale `k` (< 8) of the f16 scales in `s`, packed two to a word.
fn half_at(s: vec4<u32>, k: u32) -> f32 {
    let pair = unpack2x16float(s[k / 2u]);
    return select(pair.x, pair.y, (k & 1u) == 1u);
}

// One output of column oc: the epilogue of modes that treat rows alone.
fn put(oc: u32, row: u32, v: f32) {
    if (row >= p.rows) {
        return;
    }
    let at = oc * p.y_rows + p.y_at + row;
    if (p.mode == 1u) {
        y[at] += v;
    } else {
        y[at] = v;
    }
}

// GELU (tanh form) as ggml's CPU backend evaluates it (GGML_GELU_FP16: input and result at
// f16; 0 below −10, the identity above 10), so the GPU tracks the CPU engine (cpu/ops.rs).
fn gelu_f16(v: f32) -> f32 {
    if (v <= -10.0) {
        return 0.0;
    }
    if (v >= 10.0) {
        return v;
    }
    let x = f16r(v);
    return f16r(0.5 * x * (1.0 + tanh(0.7978846 * x * (1.0 + 0.044715 * x * x))));
}

// A pair of rows (2i, 2i+1) of column oc through the epilogue.
fn put_pair(oc: u32, row: u32, v0: f32, v1: f32) {
    let col = first_col() + oc;
    switch p.mode {
        case 2u: {
            let qk = p.q_rows + p.kv_rows;
            let cache_row = p.cache_at + step.cols[col].x * p.kv_rows;
            // Rows come in pairs from an even row, and cache rows start even: one word each.
            if (row >= qk) {
                vc[(cache_row + row - qk) / 2u] = kv_pack(v0, v1);
            } else {
                let i = col * p.head_dim + (row % p.head_dim) / 2u;
                let co = rope[i];
                let si = rope[i + p.head_dim / 2u];
                let r0 = v0 * co - v1 * si;
                let r1 = v0 * si + v1 * co;
                if (row < p.q_rows) {
                    y[col * p.q_rows + row] = r0;
                    y[col * p.q_rows + row + 1u] = r1;
                } else {
                    kc[(cache_row + row - p.q_rows) / 2u] = kv_pack(r0, r1);
                }
            }
        }
        case 3u: {
            y[col * (p.rows / 2u) + row / 2u] = v0 / (1.0 + exp(-v0)) * v1;
        }
        case 4u: {
            y[col * (p.rows / 2u) + row / 2u] = gelu_f16(v0) * v1;
        }
        default: {
            put(oc, row, v0);
            put(oc, row + 1u, v1);
        }
    }
}

// Sums the lanes of each row and column (LANES > 1), then the rows' leader applies the epilogue
// to each of the workgroup's columns that exists. `acc[r·NC + c]`: row r0 + r of column c0 + c.
// The pair modes (RoPE, SwiGLU) have even row counts, so a pair never runs past the end.
fn finish(lid: u32, r0: u32, c0: u32, partial: array<f32, MAX_RC>) {
    var acc = partial;
    let rc = R * NC;
    if (LANES > 1u && SUBGROUPS) {
        // The lanes of a row group are adjacent invocations of one subgroup (matvec.rs checks
        // the adapter's smallest subgroup holds LANES): a butterfly of shuffles, no barriers.
        for (var i = 0u; i < rc; i++) {
            acc[i] = lane_sum(acc[i]);
        }
    } else if (LANES > 1u) {
        for (var i = 0u; i < rc; i++) {
            red[lid * rc + i] = acc[i];
        }
        workgroupBarrier();
        for (var s = LANES / 2u; s > 0u; s = s >> 1u) {
            if (lid % LANES < s) {
                for (var i = 0u; i < rc; i++) {
                    red[lid * rc + i] += red[(lid + s) * rc + i];
                }
            }
            workgroupBarrier();
        }
        for (var i = 0u; i < rc; i++) {
            acc[i] = red[lid * rc + i];
        }
    }
    if (lid % LANES != 0u) {
        return;
    }
    for (var c = 0u; c < NC; c++) {
        if (c0 + c >= n_cols()) {
            break;
        }
        for (var r = 0u; r < R; r += 2u) {
            if (r0 + r >= p.rows) {
                break;
            }
            put_pair(c0 + c, r0 + r, acc[r * NC + c], acc[(r + 1u) * NC + c]);
        }
    }
}

// Σ q·x over one block of nibbles (element j: low nibble of byte j, j + 16: its high nibble),
// against the block's staged input (x0: elements 0..15, x1: 16..31).
// `lo`, `hi`: the block's nibbles unpacked once (nibbles(q)) for every column.
fn q4_dot(lo: vec4<u32>, hi: vec4<u32>, x0: vec4<u32>, x1: vec4<u32>) -> i32 {
    return dot4I8Packed(lo.x, x0.x) + dot4I8Packed(lo.y, x0.y) + dot4I8Packed(lo.z, x0.z) + dot4I8Packed(lo.w, x0.w)
         + dot4I8Packed(hi.x, x1.x) + dot4I8Packed(hi.y, x1.y) + dot4I8Packed(hi.z, x1.z) + dot4I8Packed(hi.w, x1.w);
}

fn nibbles(q: vec4<u32>) -> array<vec4<u32>, 2> {
    return array(q & vec4<u32>(0x0F0F0F0Fu), (q >> vec4<u32>(4u)) & vec4<u32>(0x0F0F0F0Fu));
}

fn q8_dot(a: vec4<u32>, b: vec4<u32>, x0: vec4<u32>, x1: vec4<u32>) -> i32 {
    return dot4I8Packed(a.x, x0.x) + dot4I8Packed(a.y, x0.y) + dot4I8Packed(a.z, x0.z) + dot4I8Packed(a.w, x0.w)
         + dot4I8Packed(b.x, x1.x) + dot4I8Packed(b.y, x1.y) + dot4I8Packed(b.z, x1.z) + dot4I8Packed(b.w, x1.w);
}

// One block's contribution to a row, per type (x = d·q + m for Q4_1, d·(q − 8) for Q4_0, d·q for
// Q8_0): shared by the one-column and the column-tile loops below.
fn q4_1_term(dm: vec2<f32>, q: array<vec4<u32>, 2>, xc: Block) -> f32 {
    return dm.x * xc.d * f32(q4_dot(q[0], q[1], xc.x0, xc.x1)) + dm.y * xc.s;
}

fn q4_0_term(d: f32, q: array<vec4<u32>, 2>, xc: Block) -> f32 {
    return d * (xc.d * f32(q4_dot(q[0], q[1], xc.x0, xc.x1)) - 8.0 * xc.s);
}

// Q5_0: x = d·(q − 16), q five bits: the nibble product with the fifth bits put in (q5_values).
fn q5_0_term(d: f32, q: array<vec4<u32>, 2>, xc: Block) -> f32 {
    return d * (xc.d * f32(q4_dot(q[0], q[1], xc.x0, xc.x1)) - 16.0 * xc.s);
}

// Bit 4 of each byte of a word from four consecutive bits of `h`.
fn fifth_bits(h: u32) -> u32 {
    return ((h & 1u) << 4u) | ((h & 2u) << 11u) | ((h & 4u) << 18u) | ((h & 8u) << 25u);
}

// A Q5 block's 32 values as bytes (elements 0..15, then 16..31): its nibbles with bit j of qh
// above element j.
fn q5_values(q: vec4<u32>, qh: u32) -> array<vec4<u32>, 2> {
    let n = nibbles(q);
    let lo = vec4<u32>(fifth_bits(qh), fifth_bits(qh >> 4u), fifth_bits(qh >> 8u), fifth_bits(qh >> 12u));
    let hi = vec4<u32>(fifth_bits(qh >> 16u), fifth_bits(qh >> 20u), fifth_bits(qh >> 24u), fifth_bits(qh >> 28u));
    return array(n[0] | lo, n[1] | hi);
}

fn q8_0_term(d: f32, a: vec4<u32>, b: vec4<u32>, xc: Block) -> f32 {
    return d * xc.d * f32(q8_dot(a, b, xc.x0, xc.x1));
}

@compute @workgroup_size(WG)
fn matvec_q4_1(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
    let c0 = wid.z * NC;
    stage(lid, c0);
    let r0 = first_row(wid, nwg, lid);
    let nb = p.cols / 32u;
    var acc: array<f32, MAX_RC>;
    if (NC == 1u) {
        for (var b = lid % LANES; b < nb; b += LANES) {
            let t0 = tile0(r0, b, nb);
            let xc = staged(0u, b, nb);
            for (var r4 = 0u; r4 < R; r4 += 4u) {
                let dm4 = scale_words(p.scales_at + t0 + r4, min(R, 4u));
                for (var k = 0u; k < min(R, 4u); k++) {
                    let r = r4 + k;
                    let dm = unpack2x16float(dm4[k]);
                    let q = nibbles(w4[t0 + r]);
                    acc[r] += q4_1_term(dm, q, xc);
                }
            }
        }
        finish(lid, r0, c0, acc);
        return;
    }
    for (var b = lid % LANES; b < nb; b += LANES) {
        let t0 = tile0(r0, b, nb);
        for (var r4 = 0u; r4 < R; r4 += 4u) {
            let dm4 = scale_words(p.scales_at + t0 + r4, min(R, 4u));
            for (var k = 0u; k < min(R, 4u); k++) {
                let r = r4 + k;
                let dm = unpack2x16float(dm4[k]);
                let q = nibbles(w4[t0 + r]);
                for (var c = 0u; c < NC; c++) {
                    let xc = staged(c, b, nb);
                    acc[r * NC + c] += q4_1_term(dm, q, xc);
                }
            }
        }
    }
    finish(lid, r0, c0, acc);
}

@compute @workgroup_size(WG)
fn matvec_q4_0(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
    let c0 = wid.z * NC;
    stage(lid, c0);
    let r0 = first_row(wid, nwg, lid);
    let nb = p.cols / 32u;
    var acc: array<f32, MAX_RC>;
    if (NC == 1u) {
        for (var b = lid % LANES; b < nb; b += LANES) {
            let t0 = tile0(r0, b, nb);
            let xc = staged(0u, b, nb);
            for (var r8 = 0u; r8 < R; r8 += 8u) {
                let ds = scale_words(p.scales_at + (t0 + r8) / 2u, min(R, 8u) / 2u);
                for (var k = 0u; k < min(R, 8u); k++) {
                    let q = nibbles(w4[t0 + r8 + k]);
                    acc[r8 + k] += q4_0_term(half_at(ds, k), q, xc);
                }
            }
        }
        finish(lid, r0, c0, acc);
        return;
    }
    for (var b = lid % LANES; b < nb; b += LANES) {
        let t0 = tile0(r0, b, nb);
        for (var r8 = 0u; r8 < R; r8 += 8u) {
            let ds = scale_words(p.scales_at + (t0 + r8) / 2u, min(R, 8u) / 2u);
            for (var k = 0u; k < min(R, 8u); k++) {
                let r = r8 + k;
                let h = half_at(ds, k);
                let q = nibbles(w4[t0 + r]);
                for (var c = 0u; c < NC; c++) {
                    let xc = staged(c, b, nb);
                    acc[r * NC + c] += q4_0_term(h, q, xc);
                }
            }
        }
    }
    finish(lid, r0, c0, acc);
}

@compute @workgroup_size(WG)
fn matvec_q8_0(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
    let c0 = wid.z * NC;
    stage(lid, c0);
    let r0 = first_row(wid, nwg, lid);
    let nb = p.cols / 32u;
    var acc: array<f32, MAX_RC>;
    if (NC == 1u) {
        for (var b = lid % LANES; b < nb; b += LANES) {
            let t0 = tile0(r0, b, nb);
            let xc = staged(0u, b, nb);
            for (var r8 = 0u; r8 < R; r8 += 8u) {
                let ds = scale_words(p.scales_at + (t0 + r8) / 2u, min(R, 8u) / 2u);
                for (var k = 0u; k < min(R, 8u); k++) {
                    let t = t0 + r8 + k;
                    acc[r8 + k] += q8_0_term(half_at(ds, k), w4[t * 2u], w4[t * 2u + 1u], xc);
                }
            }
        }
        finish(lid, r0, c0, acc);
        return;
    }
    for (var b = lid % LANES; b < nb; b += LANES) {
        let t0 = tile0(r0, b, nb);
        for (var r8 = 0u; r8 < R; r8 += 8u) {
            let ds = scale_words(p.scales_at + (t0 + r8) / 2u, min(R, 8u) / 2u);
            for (var k = 0u; k < min(R, 8u); k++) {
                let t = t0 + r8 + k;
                let h = half_at(ds, k);
                let wa = w4[t * 2u];
                let wb = w4[t * 2u + 1u];
                for (var c = 0u; c < NC; c++) {
                    let xc = staged(c, b, nb);
                    acc[(r8 + k) * NC + c] += q8_0_term(h, wa, wb, xc);
                }
            }
        }
    }
    finish(lid, r0, c0, acc);
}


// Q5_0 and Q5_1: Q4_0's and Q4_1's loops with each block's fifth bits (one word, qh region)
// merged into its nibbles before the same integer dot.
@compute @workgroup_size(WG)
fn matvec_q5_0(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
    let c0 = wid.z * NC;
    stage(lid, c0);
    let r0 = first_row(wid, nwg, lid);
    let nb = p.cols / 32u;
    var acc: array<f32, MAX_RC>;
    if (NC == 1u) {
        for (var b = lid % LANES; b < nb; b += LANES) {
            let t0 = tile0(r0, b, nb);
            let xc = staged(0u, b, nb);
            for (var r8 = 0u; r8 < R; r8 += 8u) {
                let ds = scale_words(p.scales_at + (t0 + r8) / 2u, min(R, 8u) / 2u);
                for (var k = 0u; k < min(R, 8u); k++) {
                    let t = t0 + r8 + k;
                    let q = q5_values(w4[t], w[p.qh_at + t]);
                    acc[r8 + k] += q5_0_term(half_at(ds, k), q, xc);
                }
            }
        }
        finish(lid, r0, c0, acc);
        return;
    }
    for (var b = lid % LANES; b < nb; b += LANES) {
        let t0 = tile0(r0, b, nb);
        for (var r8 = 0u; r8 < R; r8 += 8u) {
            let ds = scale_words(p.scales_at + (t0 + r8) / 2u, min(R, 8u) / 2u);
            for (var k = 0u; k < min(R, 8u); k++) {
                let t = t0 + r8 + k;
                let h = half_at(ds, k);
                let q = q5_values(w4[t], w[p.qh_at + t]);
                for (var c = 0u; c < NC; c++) {
                    let xc = staged(c, b, nb);
                    acc[(r8 + k) * NC + c] += q5_0_term(h, q, xc);
                }
            }
        }
    }
    finish(lid, r0, c0, acc);
}

@compute @workgroup_size(WG)
fn matvec_q5_1(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
    let c0 = wid.z * NC;
    stage(lid, c0);
    let r0 = first_row(wid, nwg, lid);
    let nb = p.cols / 32u;
    var acc: array<f32, MAX_RC>;
    if (NC == 1u) {
        for (var b = lid % LANES; b < nb; b += LANES) {
            let t0 = tile0(r0, b, nb);
            let xc = staged(0u, b, nb);
            for (var r4 = 0u; r4 < R; r4 += 4u) {
                let dm4 = scale_words(p.scales_at + t0 + r4, min(R, 4u));
                for (var k = 0u; k < min(R, 4u); k++) {
                    let t = t0 + r4 + k;
                    let q = q5_values(w4[t], w[p.qh_at + t]);
                    acc[r4 + k] += q4_1_term(unpack2x16float(dm4[k]), q, xc);
                }
            }
        }
        finish(lid, r0, c0, acc);
        return;
    }
    for (var b = lid % LANES; b < nb; b += LANES) {
        let t0 = tile0(r0, b, nb);
        for (var r4 = 0u; r4 < R; r4 += 4u) {
            let dm4 = scale_words(p.scales_at + t0 + r4, min(R, 4u));
            for (var k = 0u; k < min(R, 4u); k++) {
                let t = t0 + r4 + k;
                let dm = unpack2x16float(dm4[k]);
                let q = q5_values(w4[t], w[p.qh_at + t]);
                for (var c = 0u; c < NC; c++) {
                    let xc = staged(c, b, nb);
                    acc[(r4 + k) * NC + c] += q4_1_term(dm, q, xc);
                }
            }
        }
    }
    finish(lid, r0, c0, acc);
}

// K-quants: super-blocks of 256 (repack.rs: per unit, Q4_K's 8 quant vec4 then one vec4 of
// d|dmin and its 12 scale bytes; Q6_K's 13 quant vec4 — ql, qh, scales — and its f16 d in the
// scale region), each of its 8 sub-blocks of 32 against one staged activation block.

// Byte i of w.
fn byte_of(w: u32, i: u32) -> u32 {
    return (w >> (8u * i)) & 0xFFu;
}

// Q4_K's 6-bit scale and min of sub-block j from its scale words (ggml's get_scale_min_k4).
fn k4_scale_min(s: vec4<u32>, j: u32) -> vec2<f32> {
    if (j < 4u) {
        return vec2<f32>(f32(byte_of(s.y, j) & 63u), f32(byte_of(s.z, j) & 63u));
    }
    let sc = (byte_of(s.w, j - 4u) & 0xFu) | ((byte_of(s.y, j - 4u) >> 6u) << 4u);
    let m = (byte_of(s.w, j - 4u) >> 4u) | ((byte_of(s.z, j - 4u) >> 6u) << 4u);
    return vec2<f32>(f32(sc), f32(m));
}

@compute @workgroup_size(WG)
fn matvec_q4_k(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
    let c0 = wid.z * NC;
    stage(lid, c0);
    let r0 = first_row(wid, nwg, lid);
    let nb = p.cols / 32u;
    let nsb = p.cols / 256u;
    var acc: array<f32, MAX_RC>;
    for (var sb = lid % LANES; sb < nsb; sb += LANES) {
        let t0 = tile0(r0, sb, nsb);
        for (var r = 0u; r < R; r++) {
            let t = t0 + r;
            let s = w4[p.scales_at / 4u + t];
            let dm = unpack2x16float(s.x);
            for (var k = 0u; k < 4u; k++) {
                let qa = w4[t * 8u + 2u * k];
                let qb = w4[t * 8u + 2u * k + 1u];
                for (var h = 0u; h < 2u; h++) {
                    let j = 2u * k + h;
                    let sm = k4_scale_min(s, j);
                    let shift = vec4<u32>(4u * h);
                    let na = (qa >> shift) & vec4<u32>(0x0F0F0F0Fu);
                    let nb4 = (qb >> shift) & vec4<u32>(0x0F0F0F0Fu);
                    for (var c = 0u; c < NC; c++) {
                        let xc = staged(c, sb * 8u + j, nb);
                        acc[r * NC + c] += dm.x * sm.x * xc.d * f32(q8_dot(na, nb4, xc.x0, xc.x1)) - dm.y * sm.y * xc.s;
                    }
                }
            }
        }
    }
    finish(lid, r0, c0, acc);
}

// Q5_K: Q4_K with a fifth bit per weight (repack.rs: per unit 8 vec4 of nibbles, then 2 of
// the `qh` bytes).
@compute @workgroup_size(WG)
fn matvec_q5_k(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
    let c0 = wid.z * NC;
    stage(lid, c0);
    let r0 = first_row(wid, nwg, lid);
    let nb = p.cols / 32u;
    let nsb = p.cols / 256u;
    var acc: array<f32, MAX_RC>;
    for (var sb = lid % LANES; sb < nsb; sb += LANES) {
        let t0 = tile0(r0, sb, nsb);
        for (var r = 0u; r < R; r++) {
            let t = t0 + r;
            let s = w4[p.scales_at / 4u + t];
            let dm = unpack2x16float(s.x);
            let qh0 = w4[t * 10u + 8u];
            let qh1 = w4[t * 10u + 9u];
            for (var k = 0u; k < 4u; k++) {
                let qa = w4[t * 10u + 2u * k];
                let qb = w4[t * 10u + 2u * k + 1u];
                for (var h = 0u; h < 2u; h++) {
                    let j = 2u * k + h;
                    let sm = k4_scale_min(s, j);
                    let shift = vec4<u32>(4u * h);
                    // The fifth bit of sub-block j's elements: bit j of each qh byte, to 16.
                    let hj = vec4<u32>(j);
                    let one = vec4<u32>(0x01010101u);
                    let na = ((qa >> shift) & vec4<u32>(0x0F0F0F0Fu)) | (((qh0 >> hj) & one) << vec4<u32>(4u));
                    let nb4 = ((qb >> shift) & vec4<u32>(0x0F0F0F0Fu)) | (((qh1 >> hj) & one) << vec4<u32>(4u));
                    for (var c = 0u; c < NC; c++) {
                        let xc = staged(c, sb * 8u + j, nb);
                        acc[r * NC + c] += dm.x * sm.x * xc.d * f32(q8_dot(na, nb4, xc.x0, xc.x1)) - dm.y * sm.y * xc.s;
                    }
                }
            }
        }
    }
    finish(lid, r0, c0, acc);
}

// Σ over 16 staged int8 values (one vec4) times the bytes of `q` minus `off` each.
fn offset_half(q: vec4<u32>, x: vec4<u32>, off: i32) -> i32 {
    let ones = 0x01010101u;
    let qx = dot4I8Packed(q.x, x.x) + dot4I8Packed(q.y, x.y) + dot4I8Packed(q.z, x.z) + dot4I8Packed(q.w, x.w);
    let sx = dot4I8Packed(ones, x.x) + dot4I8Packed(ones, x.y) + dot4I8Packed(ones, x.z) + dot4I8Packed(ones, x.w);
    return qx - off * sx;
}

fn q6_half(q: vec4<u32>, x: vec4<u32>) -> i32 {
    return offset_half(q, x, 32);
}

// Q2_K (repack.rs: per unit 4 vec4 of 2-bit quants, then 1 of the 16 scale|min bytes; the scale
// region holds d|dmin): each block of 32 is two halves of 16 with a 4-bit scale and min each.
@compute @workgroup_size(WG)
fn matvec_q2_k(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
    let c0 = wid.z * NC;
    stage(lid, c0);
    let r0 = first_row(wid, nwg, lid);
    let nb = p.cols / 32u;
    let nsb = p.cols / 256u;
    let ones = 0x01010101u;
    var acc: array<f32, MAX_RC>;
    for (var sb = lid % LANES; sb < nsb; sb += LANES) {
        let t0 = tile0(r0, sb, nsb);
        for (var r = 0u; r < R; r++) {
            let t = t0 + r;
            let dm = unpack2x16float(w[p.scales_at + t]);
            let sc = w4[t * 5u + 4u];
            for (var k = 0u; k < 8u; k++) {
                let n = k / 4u;
                let shift = vec4<u32>(2u * (k % 4u));
                let m3 = vec4<u32>(0x03030303u);
                let q0 = (w4[t * 5u + 2u * n] >> shift) & m3;
                let q1 = (w4[t * 5u + 2u * n + 1u] >> shift) & m3;
                let sc0 = byte_of(sc[(2u * k) / 4u], (2u * k) % 4u);
                let sc1 = byte_of(sc[(2u * k + 1u) / 4u], (2u * k + 1u) % 4u);
                for (var c = 0u; c < NC; c++) {
                    let xc = staged(c, sb * 8u + k, nb);
                    let qy = i32(sc0 & 0xFu) * offset_half(q0, xc.x0, 0) + i32(sc1 & 0xFu) * offset_half(q1, xc.x1, 0);
                    let sy0 = dot4I8Packed(ones, xc.x0.x) + dot4I8Packed(ones, xc.x0.y) + dot4I8Packed(ones, xc.x0.z) + dot4I8Packed(ones, xc.x0.w);
                    let sy1 = dot4I8Packed(ones, xc.x1.x) + dot4I8Packed(ones, xc.x1.y) + dot4I8Packed(ones, xc.x1.z) + dot4I8Packed(ones, xc.x1.w);
                    let my = i32(sc0 >> 4u) * sy0 + i32(sc1 >> 4u) * sy1;
                    acc[r * NC + c] += dm.x * xc.d * f32(qy) - dm.y * xc.d * f32(my);
                }
            }
        }
    }
    finish(lid, r0, c0, acc);
}

// Q3_K's scale j (of 16) less 32 from its 12 scale bytes in s.xyz (kquants.rs `q3_scales`).
fn q3_scale(s: vec4<u32>, j: u32) -> i32 {
    let low = select(byte_of(s[(j - 8u) / 4u], (j - 8u) % 4u) >> 4u, byte_of(s[j / 4u], j % 4u) & 0xFu, j < 8u);
    let high = (byte_of(s.z, j % 4u) >> (2u * (j / 4u))) & 3u;
    return i32(low | (high << 4u)) - 32;
}

// Q3_K (repack.rs: per unit 2 vec4 of hmask then 4 of 2-bit quants; the scale region holds
// every unit's 12 scale bytes, 3 words each, then their d two to a word): each block of 32 is
// two halves of 16 with their own scales, the value (2 bits) + 4·(high bit) − 4.
@compute @workgroup_size(WG)
fn matvec_q3_k(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
    let c0 = wid.z * NC;
    stage(lid, c0);
    let r0 = first_row(wid, nwg, lid);
    let nb = p.cols / 32u;
    let nsb = p.cols / 256u;
    var acc: array<f32, MAX_RC>;
    for (var sb = lid % LANES; sb < nsb; sb += LANES) {
        let t0 = tile0(r0, sb, nsb);
        for (var r = 0u; r < R; r++) {
            let t = t0 + r;
            let s = vec4<u32>(w[p.scales_at + 3u * t], w[p.scales_at + 3u * t + 1u], w[p.scales_at + 3u * t + 2u], 0u);
            // The d region follows the scales of every tile (rows padded to whole groups of R).
            let tiles = (p.rows + R - 1u) / R * R * nsb;
            let d = half_at(vec4<u32>(w[p.scales_at + 3u * tiles + t / 2u], 0u, 0u, 0u), t % 2u);
            let hm0 = w4[t * 6u];
            let hm1 = w4[t * 6u + 1u];
            for (var k = 0u; k < 8u; k++) {
                let n = k / 4u;
                let j = k % 4u;
                let shift = vec4<u32>(2u * j);
                let hk = vec4<u32>(k);
                let m3 = vec4<u32>(0x03030303u);
                let one = vec4<u32>(0x01010101u);
                let q0 = ((w4[t * 6u + 2u + 2u * n] >> shift) & m3) | (((hm0 >> hk) & one) << vec4<u32>(2u));
                let q1 = ((w4[t * 6u + 3u + 2u * n] >> shift) & m3) | (((hm1 >> hk) & one) << vec4<u32>(2u));
                let s0 = q3_scale(s, 2u * k);
                let s1 = q3_scale(s, 2u * k + 1u);
                for (var c = 0u; c < NC; c++) {
                    let xc = staged(c, sb * 8u + k, nb);
                    let sumi = offset_half(q0, xc.x0, 4) * s0 + offset_half(q1, xc.x1, 4) * s1;
                    acc[r * NC + c] += d * xc.d * f32(sumi);
                }
            }
        }
    }
    finish(lid, r0, c0, acc);
}

// Signed byte i of w.
fn sbyte_of(w: u32, i: u32) -> i32 {
    return bitcast<i32>(w << (24u - 8u * i)) >> 24u;
}

@compute @workgroup_size(WG)
fn matvec_q6_k(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
    let c0 = wid.z * NC;
    stage(lid, c0);
    let r0 = first_row(wid, nwg, lid);
    let nb = p.cols / 32u;
    let nsb = p.cols / 256u;
    var acc: array<f32, MAX_RC>;
    for (var sb = lid % LANES; sb < nsb; sb += LANES) {
        let t0 = tile0(r0, sb, nsb);
        for (var r = 0u; r < R; r++) {
            let t = t0 + r;
            let d = half_at(vec4<u32>(w[p.scales_at + t / 2u], 0u, 0u, 0u), t % 2u);
            let sc = w4[t * 13u + 12u];
            for (var h = 0u; h < 2u; h++) {
                let qh0 = w4[t * 13u + 8u + 2u * h];
                let qh1 = w4[t * 13u + 9u + 2u * h];
                for (var k = 0u; k < 4u; k++) {
                    let at = t * 13u + 4u * h + 2u * (k % 2u);
                    let shift = vec4<u32>(4u * (k / 2u));
                    let hs = vec4<u32>(2u * k);
                    let m4 = vec4<u32>(0x0F0F0F0Fu);
                    let m2 = vec4<u32>(0x03030303u);
                    let q0 = ((w4[at] >> shift) & m4) | (((qh0 >> hs) & m2) << vec4<u32>(4u));
                    let q1 = ((w4[at + 1u] >> shift) & m4) | (((qh1 >> hs) & m2) << vec4<u32>(4u));
                    let si = 8u * h + 2u * k;
                    let s0 = sbyte_of(sc[si / 4u], si % 4u);
                    let s1 = sbyte_of(sc[(si + 1u) / 4u], (si + 1u) % 4u);
                    for (var c = 0u; c < NC; c++) {
                        let xc = staged(c, sb * 8u + 4u * h + k, nb);
                        let sumi = q6_half(q0, xc.x0) * s0 + q6_half(q1, xc.x1) * s1;
                        acc[r * NC + c] += d * xc.d * f32(sumi);
                    }
                }
            }
        }
    }
    finish(lid, r0, c0, acc);
}

// Four weights of rows r and r + 1 (r even) of a 16-bit float tile pair: f16 or bf16.
fn f16_pair(v: vec4<u32>) -> array<vec4<f32>, 2> {
    return array(vec4<f32>(unpack2x16float(v.x), unpack2x16float(v.y)), vec4<f32>(unpack2x16float(v.z), unpack2x16float(v.w)));
}

fn bf16_pair(v: vec4<u32>) -> array<vec4<f32>, 2> {
    let lo = v << vec4<u32>(16u);
    let hi = v & vec4<u32>(0xFFFF0000u);
    return array(
        bitcast<vec4<f32>>(vec4<u32>(lo.x, hi.x, lo.y, hi.y)),
        bitcast<vec4<f32>>(vec4<u32>(lo.z, hi.z, lo.w, hi.w)),
    );
}

// Four inputs (vec4 index i) of each of the workgroup's columns, normed.
fn inputs4(c0: u32, i: u32, scale: array<f32, MAX_NC>) -> array<vec4<f32>, MAX_NC> {
    var xv: array<vec4<f32>, MAX_NC>;
    for (var c = 0u; c < NC; c++) {
        xv[c] = xin4(in_col(c0, c), i, scale[c]);
    }
    return xv;
}

@compute @workgroup_size(WG)
fn matvec_f32(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
    let c0 = wid.z * NC;
    let scale = stage(lid, c0);
    let r0 = first_row(wid, nwg, lid);
    let n4 = p.cols / 4u;
    var acc: array<f32, MAX_RC>;
    for (var i = lid % LANES; i < n4; i += LANES) {
        let xv = inputs4(c0, i, scale);
        let t0 = tile0(r0, i, n4);
        for (var r = 0u; r < R; r++) {
            let wv = bitcast<vec4<f32>>(w4[t0 + r]);
            for (var c = 0u; c < NC; c++) {
                acc[r * NC + c] += dot(wv, xv[c]);
            }
        }
    }
    finish(lid, r0, c0, acc);
}

// A 16-bit float matrix (f16, or bf16 when `bf`; a constant at each call, so it folds away).
fn matvec_16(wid: vec3<u32>, nwg: vec3<u32>, lid: u32, bf: bool) {
    let c0 = wid.z * NC;
    let scale = stage(lid, c0);
    let r0 = first_row(wid, nwg, lid);
    let n4 = p.cols / 4u;
    var acc: array<f32, MAX_RC>;
    for (var i = lid % LANES; i < n4; i += LANES) {
        let xv = inputs4(c0, i, scale);
        let t0 = tile0(r0, i, n4);
        for (var r = 0u; r < R; r += 2u) {
            let v = w4[(t0 + r) / 2u];
            var pair = f16_pair(v);
            if (bf) {
                pair = bf16_pair(v);
            }
            for (var c = 0u; c < NC; c++) {
                acc[r * NC + c] += dot(pair[0], xv[c]);
                acc[(r + 1u) * NC + c] += dot(pair[1], xv[c]);
            }
        }
    }
    finish(lid, r0, c0, acc);
}

@compute @workgroup_size(WG)
fn matvec_f16(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
    matvec_16(wid, nwg, lid, false);
}

@compute @workgroup_size(WG)
fn matvec_bf16(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
    matvec_16(wid, nwg, lid, true);
}
