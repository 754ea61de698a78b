// The device's measured roofline: stream a large buffer with the matvec's access pattern and fold
// it so nothing is optimized away. GPUs (`stream_read`): consecutive lanes read consecutive 16-byte
// words, as the lanes sharing a row group do, four independent loads in flight per lane (a
// datacenter GPU needs tens of kilobytes in flight per multiprocessor to reach its bandwidth).

@group(0) @binding(0) var<storage, read> src: array<vec4<u32>>;
@group(0) @binding(1) var<storage, read_write> sink: array<u32>;

@compute @workgroup_size(256)
fn stream_read(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let threads = nwg.x * 256u;
    let n = arrayLength(&src);
    var a = vec4<u32>(0u);
    var b = vec4<u32>(0u);
    var c = vec4<u32>(0u);
    var d = vec4<u32>(0u);
    var i = gid.x;
    for (; i + 3u * threads < n; i += 4u * threads) {
        a ^= src[i];
        b ^= src[i + threads];
        c ^= src[i + 2u * threads];
        d ^= src[i + 3u * threads];
    }
    for (; i < n; i += threads) {
        a ^= src[i];
    }
    let acc = a ^ b ^ c ^ d;
    let folded = acc.x ^ acc.y ^ acc.z ^ acc.w;
    // A value the data never produces, so the write is conditional on every read.
    if (folded == 0x9E3779B9u) {
        sink[gid.x % arrayLength(&sink)] = folded;
    }
}

// CPU adapters' matvec pattern (repack.rs's row groups): every invocation reads its own
// contiguous run of 16-byte words, the last one any remainder.
@compute @workgroup_size(16)
fn stream_runs(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let threads = nwg.x * 16u;
    let n = arrayLength(&src);
    let per = n / threads;
    let start = gid.x * per;
    let end = select(start + per, n, gid.x == threads - 1u);
    var acc = vec4<u32>(0u);
    for (var i = start; i < end; i++) {
        acc ^= src[i];
    }
    let folded = acc.x ^ acc.y ^ acc.z ^ acc.w;
    if (folded == 0x9E3779B9u) {
        sink[gid.x % arrayLength(&sink)] = folded;
    }
}

// The smallest useful dispatch: what a kernel launch costs beyond its work. Each reads what the
// one before wrote, as the engine's dispatches do.
@compute @workgroup_size(1)
fn tiny(@builtin(global_invocation_id) gid: vec3<u32>) {
    sink[0] = sink[0] + 1u;
}
