@group(0) @binding(0) var<storage, read> w: array<u32>;
@group(0) @binding(1) var<storage, read> xq: array<u32>;
@group(0) @binding(2) var<storage, read> xf: array<vec4<f32>>;
@group(0) @binding(3) var<storage, read> xd: array<f32>;
@group(0) @binding(4) var<storage, read_write> y: array<f32>;

const ROWS: u32 = 49152u;
const NB: u32 = 18u;
const SCALES_AT: u32 = 49152u * 18u * 8u;

fn hs(blk: u32) -> f32 {
    let pair = unpack2x16float(w[SCALES_AT + blk / 2u]);
    return select(pair.x, pair.y, (blk & 1u) == 1u);
}

@compute @workgroup_size(64)
fn int_dot(@builtin(global_invocation_id) gid: vec3<u32>) {
    let row = gid.x;
    if (row >= ROWS) { return; }
    var acc = 0.0;
    for (var b = 0u; b < NB; b++) {
        let blk = row * NB + b;
        var s = 0i;
        for (var k = 0u; k < 8u; k++) {
            s += dot4I8Packed(w[blk * 8u + k], xq[b * 8u + k]);
        }
        acc += hs(blk) * xd[b] * f32(s);
    }
    y[row] = acc;
}

@compute @workgroup_size(64)
fn f32_dot(@builtin(global_invocation_id) gid: vec3<u32>) {
    let row = gid.x;
    if (row >= ROWS) { return; }
    var acc = 0.0;
    for (var b = 0u; b < NB; b++) {
        let blk = row * NB + b;
        var s = vec4<f32>(0.0);
        for (var k = 0u; k < 8u; k++) {
            s += vec4<f32>(unpack4xI8(w[blk * 8u + k])) * xf[b * 8u + k];
        }
        acc += hs(blk) * (s.x + s.y + s.z + s.w);
    }
    y[row] = acc;
}

@compute @workgroup_size(64)
fn f32_dot4(@builtin(global_invocation_id) gid: vec3<u32>) {
    let r0 = gid.x * 4u;
    if (r0 >= ROWS) { return; }
    var acc = vec4<f32>(0.0);
    for (var b = 0u; b < NB; b++) {
        var s0 = vec4<f32>(0.0);
        var s1 = vec4<f32>(0.0);
        var s2 = vec4<f32>(0.0);
        var s3 = vec4<f32>(0.0);
        for (var k = 0u; k < 8u; k++) {
            let xv = xf[b * 8u + k];
            s0 += vec4<f32>(unpack4xI8(w[(r0 * NB + b) * 8u + k])) * xv;
            s1 += vec4<f32>(unpack4xI8(w[((r0 + 1u) * NB + b) * 8u + k])) * xv;
            s2 += vec4<f32>(unpack4xI8(w[((r0 + 2u) * NB + b) * 8u + k])) * xv;
            s3 += vec4<f32>(unpack4xI8(w[((r0 + 3u) * NB + b) * 8u + k])) * xv;
        }
        acc += vec4<f32>(hs(r0 * NB + b) * dot(s0, vec4(1.0)), hs((r0 + 1u) * NB + b) * dot(s1, vec4(1.0)), hs((r0 + 2u) * NB + b) * dot(s2, vec4(1.0)), hs((r0 + 3u) * NB + b) * dot(s3, vec4(1.0)));
    }
    y[r0] = acc.x; y[r0 + 1u] = acc.y; y[r0 + 2u] = acc.z; y[r0 + 3u] = acc.w;
}

// Interleaved: word k of block b of row r at ((b * 8 + k) * ROWS + r): lanes read adjacent words.
@compute @workgroup_size(64)
fn int_dot_il(@builtin(global_invocation_id) gid: vec3<u32>) {
    let row = gid.x;
    if (row >= ROWS) { return; }
    var acc = 0.0;
    for (var b = 0u; b < NB; b++) {
        var s = 0i;
        for (var k = 0u; k < 8u; k++) {
            s += dot4I8Packed(w[(b * 8u + k) * ROWS + row], xq[b * 8u + k]);
        }
        acc += hs(row * NB + b) * xd[b] * f32(s);
    }
    y[row] = acc;
}

@compute @workgroup_size(64)
fn f32_dot_il(@builtin(global_invocation_id) gid: vec3<u32>) {
    let row = gid.x;
    if (row >= ROWS) { return; }
    var acc = 0.0;
    for (var b = 0u; b < NB; b++) {
        var s = vec4<f32>(0.0);
        for (var k = 0u; k < 8u; k++) {
            s += vec4<f32>(unpack4xI8(w[(b * 8u + k) * ROWS + row])) * xf[b * 8u + k];
        }
        acc += hs(row * NB + b) * (s.x + s.y + s.z + s.w);
    }
    y[row] = acc;
}

@group(0) @binding(5) var<storage, read> w4: array<vec4<u32>>;
@group(0) @binding(6) var<storage, read> xq4: array<vec4<u32>>;

@compute @workgroup_size(64)
fn int_dot_v(@builtin(global_invocation_id) gid: vec3<u32>) {
    let row = gid.x;
    if (row >= ROWS) { return; }
    var acc = 0.0;
    for (var b = 0u; b < NB; b++) {
        let blk = row * NB + b;
        let a0 = w4[blk * 2u];
        let a1 = w4[blk * 2u + 1u];
        let x0 = xq4[b * 2u];
        let x1 = xq4[b * 2u + 1u];
        let s = dot4I8Packed(a0.x, x0.x) + dot4I8Packed(a0.y, x0.y) + dot4I8Packed(a0.z, x0.z) + dot4I8Packed(a0.w, x0.w)
              + dot4I8Packed(a1.x, x1.x) + dot4I8Packed(a1.y, x1.y) + dot4I8Packed(a1.z, x1.z) + dot4I8Packed(a1.w, x1.w);
        acc += hs(blk) * xd[b] * f32(s);
    }
    y[row] = acc;
}

fn d8(a0: vec4<u32>, a1: vec4<u32>, x0: vec4<u32>, x1: vec4<u32>) -> i32 {
    return dot4I8Packed(a0.x, x0.x) + dot4I8Packed(a0.y, x0.y) + dot4I8Packed(a0.z, x0.z) + dot4I8Packed(a0.w, x0.w)
         + dot4I8Packed(a1.x, x1.x) + dot4I8Packed(a1.y, x1.y) + dot4I8Packed(a1.z, x1.z) + dot4I8Packed(a1.w, x1.w);
}

@compute @workgroup_size(64)
fn int_dot4_v(@builtin(global_invocation_id) gid: vec3<u32>) {
    let r0 = gid.x * 4u;
    if (r0 >= ROWS) { return; }
    var acc = vec4<f32>(0.0);
    for (var b = 0u; b < NB; b++) {
        let x0 = xq4[b * 2u];
        let x1 = xq4[b * 2u + 1u];
        let xs = xd[b];
        for (var r = 0u; r < 4u; r++) {
            let blk = (r0 + r) * NB + b;
            acc[r] += hs(blk) * xs * f32(d8(w4[blk * 2u], w4[blk * 2u + 1u], x0, x1));
        }
    }
    y[r0] = acc.x; y[r0 + 1u] = acc.y; y[r0 + 2u] = acc.z; y[r0 + 3u] = acc.w;
}

// f32 math with vec4 loads, 4 rows.
fn u4(a: u32) -> vec4<f32> { return vec4<f32>(unpack4xI8(a)); }

@compute @workgroup_size(64)
fn f32_dot4_v(@builtin(global_invocation_id) gid: vec3<u32>) {
    let r0 = gid.x * 4u;
    if (r0 >= ROWS) { return; }
    var acc = vec4<f32>(0.0);
    for (var b = 0u; b < NB; b++) {
        for (var r = 0u; r < 4u; r++) {
            let blk = (r0 + r) * NB + b;
            let a0 = w4[blk * 2u];
            let a1 = w4[blk * 2u + 1u];
            let s = u4(a0.x) * xf[b * 8u] + u4(a0.y) * xf[b * 8u + 1u] + u4(a0.z) * xf[b * 8u + 2u] + u4(a0.w) * xf[b * 8u + 3u]
                  + u4(a1.x) * xf[b * 8u + 4u] + u4(a1.y) * xf[b * 8u + 5u] + u4(a1.z) * xf[b * 8u + 6u] + u4(a1.w) * xf[b * 8u + 7u];
            acc[r] += hs(blk) * dot(s, vec4(1.0));
        }
    }
    y[r0] = acc.x; y[r0 + 1u] = acc.y; y[r0 + 2u] = acc.z; y[r0 + 3u] = acc.w;
}

var<workgroup> sx: array<vec4<u32>, 36>;
var<workgroup> sd: array<f32, 18>;

@compute @workgroup_size(64)
fn int_dot4_wg(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
    if (lid < 36u) { sx[lid] = xq4[lid]; }
    if (lid < 18u) { sd[lid] = xd[lid]; }
    workgroupBarrier();
    let r0 = gid.x * 4u;
    if (r0 >= ROWS) { return; }
    var acc = vec4<f32>(0.0);
    for (var b = 0u; b < NB; b++) {
        let x0 = sx[b * 2u];
        let x1 = sx[b * 2u + 1u];
        let xs = sd[b];
        for (var r = 0u; r < 4u; r++) {
            let blk = (r0 + r) * NB + b;
            acc[r] += hs(blk) * xs * f32(d8(w4[blk * 2u], w4[blk * 2u + 1u], x0, x1));
        }
    }
    y[r0] = acc.x; y[r0 + 1u] = acc.y; y[r0 + 2u] = acc.z; y[r0 + 3u] = acc.w;
}

@compute @workgroup_size(64)
fn int_dot8_v(@builtin(global_invocation_id) gid: vec3<u32>) {
    let r0 = gid.x * 8u;
    if (r0 >= ROWS) { return; }
    var acc: array<f32, 8>;
    for (var b = 0u; b < NB; b++) {
        let x0 = xq4[b * 2u];
        let x1 = xq4[b * 2u + 1u];
        let xs = xd[b];
        for (var r = 0u; r < 8u; r++) {
            let blk = (r0 + r) * NB + b;
            acc[r] += hs(blk) * xs * f32(d8(w4[blk * 2u], w4[blk * 2u + 1u], x0, x1));
        }
    }
    for (var r = 0u; r < 8u; r++) { y[r0 + r] = acc[r]; }
}

@compute @workgroup_size(64)
fn int_dot2_v(@builtin(global_invocation_id) gid: vec3<u32>) {
    let r0 = gid.x * 2u;
    if (r0 >= ROWS) { return; }
    var acc = vec2<f32>(0.0);
    for (var b = 0u; b < NB; b++) {
        let x0 = xq4[b * 2u];
        let x1 = xq4[b * 2u + 1u];
        let xs = xd[b];
        for (var r = 0u; r < 2u; r++) {
            let blk = (r0 + r) * NB + b;
            acc[r] += hs(blk) * xs * f32(d8(w4[blk * 2u], w4[blk * 2u + 1u], x0, x1));
        }
    }
    y[r0] = acc.x; y[r0 + 1u] = acc.y;
}
