// The embedding lookup on the GPU: row `tokens[col]` of the token embedding, read from its packed
// layout (repack.rs: rows in tile groups, quants then scales) and dequantized as the CPU engine's
// `Model::embed` does, times the family's embedding scale, into x's column `col`. The host writes
// four bytes a token instead of a row, and a chained step (chain.rs) reads the token the step
// before it chose, so no host round trip sits between two steps.
//
// An embedding larger than one binding is in row slices (weights.rs): one dispatch per slice,
// each writing only the tokens it holds.

struct Embed {
    rows_from: u32,
    rows: u32,
    cols: u32,
    group: u32,
    scales_at: u32,
    qh_at: u32,
    scale: f32,
    _pad: u32,
}

@group(0) @binding(0) var<storage, read> w: array<u32>;
@group(0) @binding(1) var<storage, read> tokens: array<u32>;
@group(0) @binding(2) var<storage, read_write> x: array<f32>;
@group(0) @binding(3) var<uniform> e: Embed;

// embed.rs's `kernel_type`: 0 F32, 1 F16, 2 BF16, 3 Q8_0, 4 Q4_0, 5 Q4_1, 6 Q5_0, 7 Q5_1,
// 8 Q4_K, 9 Q5_K, 10 Q6_K.
override TY: u32 = 0u;
override WG: u32 = 64u;

// repack.rs's `tile`.
fn tile(r: u32, u: u32, units: u32) -> u32 {
    return ((r / e.group) * units + u) * e.group + r % e.group;
}

// Half `k` (0 or 1) of `word` as f32 (exact).
fn half(word: u32, k: u32) -> f32 {
    return unpack2x16float(word >> (16u * k)).x;
}

// Byte b of the bytes from word `at` on.
fn byte_at(at: u32, b: u32) -> u32 {
    return (w[at + b / 4u] >> (8u * (b % 4u))) & 0xffu;
}

// Value j of a K-quant super-block at tile t (kquants.rs's dequantize_k4 and dequantize_q6_k).
fn k_value(t: u32, j: u32) -> f32 {
    if TY == 10u {
        // Q6_K: ql, qh, the 16 int8 scales (52 words a tile), then d, two halves a word.
        let h = j / 128u;
        let k = (j % 128u) / 32u;
        let l = j % 32u;
        let base = 52u * t;
        let ql = byte_at(base, 64u * h + l + 32u * (k & 1u));
        let low = select(ql >> 4u, ql & 15u, k < 2u);
        let high = (byte_at(base, 128u + 32u * h + l) >> (2u * k)) & 3u;
        let q = i32(low | (high << 4u)) - 32;
        let sc = bitcast<i32>(byte_at(base, 192u + 8u * h + l / 16u + 2u * k) << 24u) >> 24u;
        return half(w[e.scales_at + t / 2u], t % 2u) * f32(sc) * f32(q);
    }
    // Q4_K / Q5_K: the nibbles (Q5_K: then 8 words of fifth bits), then d|dmin and the 12 scale
    // bytes, 4 words a tile.
    let k = j / 64u;
    let hi = (j % 64u) / 32u;
    let l = j % 32u;
    let sub = 2u * k + hi;
    let s_at = e.scales_at + 4u * t;
    var sc: u32;
    var m: u32;
    if sub < 4u {
        sc = byte_at(s_at + 1u, sub) & 63u;
        m = byte_at(s_at + 1u, sub + 4u) & 63u;
    } else {
        sc = (byte_at(s_at + 1u, sub + 4u) & 15u) | ((byte_at(s_at + 1u, sub - 4u) >> 6u) << 4u);
        m = (byte_at(s_at + 1u, sub + 4u) >> 4u) | ((byte_at(s_at + 1u, sub) >> 6u) << 4u);
    }
    let dm = w[s_at];
    let base = select(32u, 40u, TY == 9u) * t;
    let q = byte_at(base, 32u * k + l);
    var nib = select(q & 15u, q >> 4u, hi == 1u);
    if TY == 9u {
        nib += ((byte_at(base + 32u, l) >> sub) & 1u) << 4u;
    }
    return half(dm, 0u) * f32(sc) * f32(nib) - half(dm, 1u) * f32(m);
}

// Value c of packed row r.
fn value(r: u32, c: u32) -> f32 {
    if TY >= 8u {
        return k_value(tile(r, c / 256u, e.cols / 256u), c % 256u);
    }
    if TY <= 2u {
        let quad = tile(r, c / 4u, e.cols / 4u);
        if TY == 0u {
            return bitcast<f32>(w[quad * 4u + c % 4u]);
        }
        let word = w[quad * 2u + (c % 4u) / 2u];
        if TY == 1u {
            return half(word, c % 2u);
        }
        return bitcast<f32>(((word >> (16u * (c % 2u))) & 0xffffu) << 16u);
    }
    let blk = tile(r, c / 32u, e.cols / 32u);
    let j = c % 32u;
    if TY == 3u {
        let d = half(w[e.scales_at + blk / 2u], blk % 2u);
        let q = bitcast<i32>(w[blk * 8u + j / 4u] << (24u - 8u * (j % 4u))) >> 24u;
        return d * f32(q);
    }
    let byte = (w[blk * 4u + (j % 16u) / 4u] >> (8u * (j % 4u))) & 0xffu;
    var q = f32(select(byte >> 4u, byte & 15u, j < 16u));
    if TY >= 6u {
        q += 16.0 * f32((w[e.qh_at + blk] >> j) & 1u);
    }
    if TY == 4u {
        return half(w[e.scales_at + blk / 2u], blk % 2u) * (q - 8.0);
    }
    if TY == 6u {
        return half(w[e.scales_at + blk / 2u], blk % 2u) * (q - 16.0);
    }
    let dm = w[e.scales_at + blk];
    return half(dm, 0u) * q + half(dm, 1u);
}

@compute @workgroup_size(WG)
fn embed(@builtin(global_invocation_id) gid: vec3<u32>) {
    let c = gid.x;
    let col = gid.z;
    let t = tokens[col];
    if c >= e.cols || t < e.rows_from || t - e.rows_from >= e.rows {
        return;
    }
    x[col * e.cols + c] = value(t - e.rows_from, c) * e.scale;
}
