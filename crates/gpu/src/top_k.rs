//! The top-k kernel's sizes (ops.wgsl's `top_k`), which the graph's pipelines and the
//! sequences' candidate buffers both follow.

/// The most candidates the top-k kernel returns; samplers wanting more read every logit.
pub const MAX_TOP_K: usize = 64;

/// Logits per top-k workgroup in its first stage (ops.wgsl's `TOP_K_CHUNK`): a vocabulary of
/// more than one chunk takes a workgroup per chunk, then one to merge their candidates, so no
/// workgroup scans a large vocabulary alone (Gemma 3's 262,144 logits: 64 workgroups). On
/// lavapipe the two stages decode as fast as the one workgroup did (Gemma with top-k 40 at
/// chunks of 4,096, 32,768 or the whole vocabulary: 7.0–8.5 tok/s each, within its noise).
pub const TOP_K_CHUNK: usize = 4096;
