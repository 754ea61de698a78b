// y = W · x for one token, with W dequantized in registers as it is read: the weight bytes cross
// the memory bus exactly once. Layouts: see repack.rs. 16 lanes share a row and each workgroup
// of 64 takes 4 rows; lanes stride over blocks and meet in a workgroup-memory tree reduction.

struct Params {
    rows: u32,
    cols: u32,
    scales_at: u32,
    // 1: y += W·x (the residual add fused into the projection), 0: y = W·x.
    accumulate: u32,
}

@group(0) @binding(0) var<storage, read> w: array<u32>;
@group(0) @binding(1) var<storage, read> x: array<vec4<f32>>;
@group(0) @binding(2) var<storage, read_write> y: array<f32>;
@group(0) @binding(3) var<uniform> p: Params;

const LANES: u32 = 16u;
const ROWS_PER_GROUP: u32 = 4u;
var<workgroup> partial: array<f32, 64>;

fn row_of(wid: vec3<u32>, nwg: vec3<u32>, lid: u32) -> u32 {
    return (wid.x + wid.y * nwg.x) * ROWS_PER_GROUP + lid / LANES;
}

// Sums the 16 lanes of each row and writes the row's result.
fn finish(lid: u32, row: u32, acc: f32) {
    partial[lid] = acc;
    workgroupBarrier();
    for (var s = LANES / 2u; s > 0u; s = s >> 1u) {
        if (lid % LANES < s) {
            partial[lid] += partial[lid + s];
        }
        workgroupBarrier();
    }
    if (lid % LANES == 0u && row < p.rows) {
        y[row] = select(0.0, y[row], p.accumulate == 1u) + partial[lid];
    }
}

fn nibbles_lo(q: u32) -> vec4<f32> {
    return vec4<f32>(f32(q & 15u), f32((q >> 8u) & 15u), f32((q >> 16u) & 15u), f32((q >> 24u) & 15u));
}

fn nibbles_hi(q: u32) -> vec4<f32> {
    return nibbles_lo(q >> 4u);
}

fn bytes_signed(q: u32) -> vec4<f32> {
    let s = bitcast<i32>(q);
    return vec4<f32>(f32(extractBits(s, 0u, 8u)), f32(extractBits(s, 8u, 8u)), f32(extractBits(s, 16u, 8u)), f32(extractBits(s, 24u, 8u)));
}

// The f16 scale of block `blk` when scales are packed two to a word.
fn half_scale(blk: u32) -> f32 {
    let pair = unpack2x16float(w[p.scales_at + blk / 2u]);
    return select(pair.x, pair.y, (blk & 1u) == 1u);
}

// Σ q·x and Σ x over one 32-element block of nibbles (element j: low nibble of byte j,
// element j + 16: high nibble).
fn q4_block(qs_at: u32, xb: u32) -> vec2<f32> {
    var s = 0.0;
    var sx = 0.0;
    for (var k = 0u; k < 4u; k++) {
        let q = w[qs_at + k];
        let xl = x[xb + k];
        let xh = x[xb + 4u + k];
        s += dot(nibbles_lo(q), xl) + dot(nibbles_hi(q), xh);
        sx += dot(xl + xh, vec4<f32>(1.0));
    }
    return vec2<f32>(s, sx);
}

@compute @workgroup_size(64)
fn matvec_q4_1(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
    let row = row_of(wid, nwg, lid);
    let nb = p.cols / 32u;
    var acc = 0.0;
    if (row < p.rows) {
        for (var b = lid % LANES; b < nb; b += LANES) {
            let blk = row * nb + b;
            let dm = unpack2x16float(w[p.scales_at + blk]);
            let r = q4_block(blk * 4u, b * 8u);
            acc += dm.x * r.x + dm.y * r.y;
        }
    }
    finish(lid, row, acc);
}

@compute @workgroup_size(64)
fn matvec_q4_0(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
    let row = row_of(wid, nwg, lid);
    let nb = p.cols / 32u;
    var acc = 0.0;
    if (row < p.rows) {
        for (var b = lid % LANES; b < nb; b += LANES) {
            let blk = row * nb + b;
            let r = q4_block(blk * 4u, b * 8u);
            acc += half_scale(blk) * (r.x - 8.0 * r.y);
        }
    }
    finish(lid, row, acc);
}

@compute @workgroup_size(64)
fn matvec_q8_0(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
    let row = row_of(wid, nwg, lid);
    let nb = p.cols / 32u;
    var acc = 0.0;
    if (row < p.rows) {
        for (var b = lid % LANES; b < nb; b += LANES) {
            let blk = row * nb + b;
            var s = 0.0;
            for (var k = 0u; k < 8u; k++) {
                s += dot(bytes_signed(w[blk * 8u + k]), x[b * 8u + k]);
            }
            acc += half_scale(blk) * s;
        }
    }
    finish(lid, row, acc);
}

@compute @workgroup_size(64)
fn matvec_f32(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
    let row = row_of(wid, nwg, lid);
    let n4 = p.cols / 4u;
    var acc = 0.0;
    if (row < p.rows) {
        for (var c = lid % LANES; c < n4; c += LANES) {
            let at = (row * n4 + c) * 4u;
            let v = vec4<f32>(bitcast<f32>(w[at]), bitcast<f32>(w[at + 1u]), bitcast<f32>(w[at + 2u]), bitcast<f32>(w[at + 3u]));
            acc += dot(v, x[c]);
        }
    }
    finish(lid, row, acc);
}

@compute @workgroup_size(64)
fn matvec_f16(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
    let row = row_of(wid, nwg, lid);
    let n4 = p.cols / 4u;
    var acc = 0.0;
    if (row < p.rows) {
        for (var c = lid % LANES; c < n4; c += LANES) {
            let at = (row * n4 + c) * 2u;
            let v = vec4<f32>(unpack2x16float(w[at]), unpack2x16float(w[at + 1u]));
            acc += dot(v, x[c]);
        }
    }
    finish(lid, row, acc);
}

@compute @workgroup_size(64)
fn matvec_bf16(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
    let row = row_of(wid, nwg, lid);
    let n4 = p.cols / 4u;
    var acc = 0.0;
    if (row < p.rows) {
        for (var c = lid % LANES; c < n4; c += LANES) {
            let at = (row * n4 + c) * 2u;
            let a = w[at];
            let b = w[at + 1u];
            let v = vec4<f32>(bitcast<f32>(a << 16u), bitcast<f32>(a & 0xFFFF0000u), bitcast<f32>(b << 16u), bitcast<f32>(b & 0xFFFF0000u));
            acc += dot(v, x[c]);
        }
    }
    finish(lid, row, acc);
}
