struct Pair { a: vec4<u32>, b: vec4<u32> }
@group(0) @binding(0) var<storage, read> w4: array<vec4<u32>>;
@group(0) @binding(1) var<storage, read> w: array<u32>;
@group(0) @binding(2) var<storage, read> w8: array<Pair>;
@group(0) @binding(3) var<storage, read_write> y: array<f32>;

@compute @workgroup_size(256)
fn s4(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let threads = nwg.x * 256u;
    var acc = vec4<u32>(0u);
    for (var i = gid.x; i < arrayLength(&w4); i += threads) { acc ^= w4[i]; }
    let f = acc.x ^ acc.y ^ acc.z ^ acc.w;
    if (f == 0x9E3779B9u) { y[gid.x] = 1.0; }
}
@compute @workgroup_size(256)
fn s1(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let threads = nwg.x * 256u;
    var acc = 0u;
    for (var i = gid.x; i < arrayLength(&w); i += threads) { acc ^= w[i]; }
    if (acc == 0x9E3779B9u) { y[gid.x] = 1.0; }
}
@compute @workgroup_size(256)
fn s8(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let threads = nwg.x * 256u;
    var acc = vec4<u32>(0u);
    for (var i = gid.x; i < arrayLength(&w8); i += threads) { let p = w8[i]; acc ^= p.a ^ p.b; }
    let f = acc.x ^ acc.y ^ acc.z ^ acc.w;
    if (f == 0x9E3779B9u) { y[gid.x] = 1.0; }
}
// Per lane contiguous runs (like a lane owning rows): lane reads 4 consecutive vec4 per step.
@compute @workgroup_size(16)
fn srow(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let threads = nwg.x * 16u;
    let n = arrayLength(&w4);
    let per = n / threads;
    var acc = vec4<u32>(0u);
    for (var i = 0u; i < per; i++) { acc ^= w4[gid.x * per + i]; }
    let f = acc.x ^ acc.y ^ acc.z ^ acc.w;
    if (f == 0x9E3779B9u) { y[gid.x] = 1.0; }
}
