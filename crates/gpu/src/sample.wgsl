// Sampling on the GPU: temperature, nucleus (top-p) and one uniform draw over the top-k
// candidates the top-k kernel left (highest first, ties by lower token), as tokscope-core's
// `Sampler::pick` does on the host; the draw is the host's, from the same seeded generator in
// the same order, so a seed means the same draws on both engines. The choice replaces
// candidate 0, which the read-back and a chained step's next lookup take.

struct Sampling {
    temperature: f32,
    top_p: f32,
    k: u32,
    _pad: u32,
}

@group(0) @binding(0) var<storage, read_write> cand: array<u32>;
@group(0) @binding(1) var<storage, read> draw: array<f32>;
@group(0) @binding(2) var<uniform> s: Sampling;

// Candidate i's weight: exp((logit − top) / temperature).
fn weight(i: u32, top: f32) -> f32 {
    return exp((bitcast<f32>(cand[2u * i]) - top) / s.temperature);
}

@compute @workgroup_size(1)
fn sample() {
    let top = bitcast<f32>(cand[0]);
    var total = 0.0;
    for (var i = 0u; i < s.k; i++) {
        total += weight(i, top);
    }
    // The shortest prefix whose mass reaches top_p (at least one).
    var keep = s.k;
    if s.top_p < 1.0 {
        var cum = 0.0;
        for (var i = 0u; i < s.k; i++) {
            cum += weight(i, top) / total;
            if cum >= s.top_p {
                keep = i + 1u;
                break;
            }
        }
    }
    var kept = 0.0;
    for (var i = 0u; i < keep; i++) {
        kept += weight(i, top);
    }
    let u = draw[0] * kept;
    var acc = 0.0;
    var pick = keep - 1u;
    for (var i = 0u; i < keep; i++) {
        acc += weight(i, top);
        if u < acc {
            pick = i;
            break;
        }
    }
    let chosen = vec2<u32>(cand[2u * pick], cand[2u * pick + 1u]);
    cand[0] = chosen.x;
    cand[1] = chosen.y;
}
