//! The roofline of one decode step: every generated token reads every active weight (and each
//! sequence's KV cache so far) once, and does about two FLOPs per active weight per sequence, so
//! a step takes at least `max(bytes ÷ bandwidth, FLOPs ÷ peak)`.
//!
//! Units: GB = 10^9 bytes and TFLOP/s = 10^12 FLOP/s, as vendors quote them. Sources: Williams,
//! Waterman & Patterson, "Roofline: An Insightful Visual Performance Model" (CACM 2009) for the
//! model; Databricks, "LLM Inference Performance Engineering: Best Practices" (2023) for bytes per
//! token = weight bytes + KV bytes, and MBU.

use std::fmt;

pub mod chain;
pub mod completion;
pub mod floor;
pub mod probe;

/// Bytes in a GB, as memory vendors count them.
pub const GB: f64 = 1e9;
/// FLOP/s in a TFLOP/s.
pub const TFLOPS: f64 = 1e12;

/// The KV cache that each sequence reads at every step.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct KvCache {
    pub layers: u32,
    pub kv_heads: u32,
    pub head_dim: u32,
    /// Tokens already in the cache (the context length at this step).
    pub context: u64,
    /// Bits per cached element (16 for f16/bf16, 8 for an 8-bit cache).
    pub bits: f64,
}

impl KvCache {
    /// Bytes one sequence reads: K and V, for every layer, KV head, head dimension and cached
    /// token (Databricks' "KV bytes"; a grouped-query model caches `kv_heads`, not query heads).
    pub fn bytes_per_sequence(&self) -> f64 {
        2.0 * self.layers as f64 * self.kv_heads as f64 * self.head_dim as f64 * self.context as f64 * self.bits / 8.0
    }
}

/// What one decode step costs and the machine it runs on.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Inputs {
    /// Parameters each token touches: all of a dense model's, a mixture-of-experts' active share.
    pub active_params: f64,
    /// Average bits per weight, scales included (Q4_0 = 4.5, Q4_1 = 5, Q8_0 = 8.5, F16 = 16).
    pub bits_per_weight: f64,
    /// Memory bandwidth, GB/s.
    pub bandwidth_gb_s: f64,
    /// Peak compute, TFLOP/s; `None` draws no compute roof (every step is memory-bound).
    pub peak_tflops: Option<f64>,
    /// Sequences decoded together; they share one read of the weights.
    pub batch: u32,
    pub kv: Option<KvCache>,
    /// Fixed cost per step (dispatches, synchronisation), seconds. Small models on small GPUs
    /// miss the roofline by about this much per token.
    pub overhead_s: f64,
}

impl Default for Inputs {
    fn default() -> Self {
        Self {
            active_params: 8.03e9,
            bits_per_weight: 16.0,
            bandwidth_gb_s: 1000.0,
            peak_tflops: None,
            batch: 1,
            kv: None,
            overhead_s: 0.0,
        }
    }
}

/// Which roof sets the step time.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Bound {
    Memory,
    Compute,
}

impl Bound {
    pub fn as_str(self) -> &'static str {
        match self {
            Bound::Memory => "memory",
            Bound::Compute => "compute",
        }
    }
}

/// An input the calculator refuses, with the reason in the reader's words.
#[derive(Debug, Clone, PartialEq)]
pub struct InputError {
    pub field: &'static str,
    pub message: String,
}

impl fmt::Display for InputError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.field, self.message)
    }
}

impl std::error::Error for InputError {}

/// A number in `(0, max]` (or `[0, max]` when `zero_ok`), else an error naming the field.
pub fn check(field: &'static str, value: f64, zero_ok: bool, max: f64, unit: &str) -> Result<f64, InputError> {
    let err = |m: String| Err(InputError { field, message: m });
    if !value.is_finite() {
        return err(format!("must be a number, got {value}"));
    }
    if value < 0.0 || (value == 0.0 && !zero_ok) {
        let lower = if zero_ok { "zero or more" } else { "more than zero" };
        return err(format!("must be {lower}, got {value}"));
    }
    if value > max {
        return err(format!(
            "{value} is beyond any real device or model (at most {max} {unit})"
        ));
    }
    Ok(value)
}

/// The step estimate: what is read, what is computed, and which roof binds.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize)]
pub struct Estimate {
    pub weight_bytes: f64,
    /// KV bytes of the whole batch.
    pub kv_bytes: f64,
    pub bytes_per_step: f64,
    pub flops_per_step: f64,
    /// bytes ÷ bandwidth.
    pub memory_s: f64,
    /// FLOPs ÷ peak (0 without a peak).
    pub compute_s: f64,
    /// max(memory, compute) + overhead.
    pub step_s: f64,
    /// One sequence's rate: latency.
    pub per_user_tok_s: f64,
    /// All sequences together: throughput.
    pub aggregate_tok_s: f64,
    /// FLOPs per byte of this step.
    pub arithmetic_intensity: f64,
    /// FLOPs per byte where the two roofs meet (peak ÷ bandwidth); `None` without a peak.
    pub ridge_point: Option<f64>,
    /// Which roof binds; at the ridge exactly, memory (compute is not yet the limit).
    pub bound: Bound,
}

/// Upper bounds that catch typos (an extra three zeros) while allowing every real system.
const MAX_PARAMS: f64 = 1e14;
const MAX_BITS: f64 = 64.0;
const MAX_BANDWIDTH_GB_S: f64 = 1e6;
const MAX_TFLOPS: f64 = 1e6;
const MAX_BATCH: u32 = 1 << 20;
const MAX_CONTEXT: u64 = 1 << 27;
const MAX_OVERHEAD_S: f64 = 60.0;

impl Inputs {
    /// Checks every field; the first bad one is named.
    pub fn validate(&self) -> Result<(), InputError> {
        check("parameters", self.active_params, false, MAX_PARAMS, "parameters")?;
        check("bits per weight", self.bits_per_weight, false, MAX_BITS, "bits")?;
        check("bandwidth", self.bandwidth_gb_s, false, MAX_BANDWIDTH_GB_S, "GB/s")?;
        if let Some(t) = self.peak_tflops {
            check("peak compute", t, false, MAX_TFLOPS, "TFLOP/s")?;
        }
        if self.batch == 0 || self.batch > MAX_BATCH {
            return Err(InputError {
                field: "batch",
                message: format!("must be between 1 and {MAX_BATCH}, got {}", self.batch),
            });
        }
        if let Some(kv) = &self.kv {
            for (field, v) in [
                ("layers", kv.layers),
                ("KV heads", kv.kv_heads),
                ("head dim", kv.head_dim),
            ] {
                if v == 0 || v > 1 << 16 {
                    return Err(InputError {
                        field,
                        message: format!("must be between 1 and 65536, got {v}"),
                    });
                }
            }
            if kv.context > MAX_CONTEXT {
                return Err(InputError {
                    field: "context",
                    message: format!("must be at most {MAX_CONTEXT} tokens, got {}", kv.context),
                });
            }
            check("KV bits", kv.bits, false, 32.0, "bits")?;
        }
        check("overhead", self.overhead_s, true, MAX_OVERHEAD_S, "s")?;
        Ok(())
    }

    /// The step estimate, after [`validate`](Self::validate).
    pub fn estimate(&self) -> Result<Estimate, InputError> {
        self.validate()?;
        let batch = self.batch as f64;
        let weight_bytes = self.active_params * self.bits_per_weight / 8.0;
        let kv_bytes = batch * self.kv.map_or(0.0, |kv| kv.bytes_per_sequence());
        let bytes_per_step = weight_bytes + kv_bytes;
        // Two FLOPs (multiply, add) per active weight per sequence; attention's own FLOPs are
        // small beside them at decode and left out, as in the sources.
        let flops_per_step = 2.0 * self.active_params * batch;
        let bandwidth = self.bandwidth_gb_s * GB;
        let memory_s = bytes_per_step / bandwidth;
        let compute_s = self.peak_tflops.map_or(0.0, |t| flops_per_step / (t * TFLOPS));
        let bound = if compute_s > memory_s {
            Bound::Compute
        } else {
            Bound::Memory
        };
        let step_s = memory_s.max(compute_s) + self.overhead_s;
        Ok(Estimate {
            weight_bytes,
            kv_bytes,
            bytes_per_step,
            flops_per_step,
            memory_s,
            compute_s,
            step_s,
            per_user_tok_s: 1.0 / step_s,
            aggregate_tok_s: batch / step_s,
            arithmetic_intensity: flops_per_step / bytes_per_step,
            ridge_point: self.peak_tflops.map(|t| t * TFLOPS / bandwidth),
            bound,
        })
    }
}

impl Estimate {
    /// MBU of a measured per-user rate on this step: achieved bandwidth ÷ the bandwidth given.
    pub fn mbu(&self, measured_tok_s: f64, bandwidth_gb_s: f64) -> Option<f64> {
        mbu(measured_tok_s, self.bytes_per_step, bandwidth_gb_s * GB)
    }
}

/// Where a measured decode rate sits on the roofline chart: (intensity FLOP/byte, achieved
/// FLOP/s). One token costs 2 FLOPs per parameter and reads `bytes_per_token`.
pub fn decode_point(params: f64, bytes_per_token: f64, tok_s: f64) -> (f64, f64) {
    (2.0 * params / bytes_per_token, 2.0 * params * tok_s)
}

/// Where a measured prefill sits: the prompt's `tokens` share one read of the weights, so its
/// intensity is `tokens` times decode's (KV reads left out; small beside the weights here).
pub fn prefill_point(params: f64, weight_bytes: f64, tokens: u64, tok_s: f64) -> (f64, f64) {
    (2.0 * params * tokens as f64 / weight_bytes, 2.0 * params * tok_s)
}

/// Achieved bandwidth, bytes/s: the bytes one step reads ÷ the time it took (Databricks: "14 GB
/// in 14 ms = 1 TB/s").
pub fn achieved_bandwidth(bytes_per_token: f64, seconds_per_token: f64) -> f64 {
    bytes_per_token / seconds_per_token
}

/// Model Bandwidth Utilization: achieved bandwidth ÷ peak bandwidth, where achieved =
/// bytes read per token × tokens per second. Source: Databricks, "LLM Inference Performance
/// Engineering: Best Practices" (2023): MBU = (weight bytes + KV bytes) ÷ time per output token
/// ÷ peak bandwidth; their worked example is 14 GB in 14 ms on 2 TB/s = 50 %.
///
/// `None` when the peak is not a positive finite number (no measurement to compare with).
pub fn mbu(tok_s: f64, bytes_per_token: f64, peak_bytes_s: f64) -> Option<f64> {
    (peak_bytes_s.is_finite() && peak_bytes_s > 0.0).then(|| tok_s * bytes_per_token / peak_bytes_s)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn llama8b(bits: f64) -> Inputs {
        Inputs {
            active_params: 8.03e9,
            bits_per_weight: bits,
            bandwidth_gb_s: 1000.0,
            ..Default::default()
        }
    }

    fn close(a: f64, b: f64) -> bool {
        (a - b).abs() <= 1e-9 * b.abs().max(1e-30)
    }

    #[test]
    fn databricks_worked_example_is_half() {
        // 7B at 16 bits = 14 GB per token, 14 ms per token, 2 TB/s peak.
        assert!(close(achieved_bandwidth(14e9, 0.014), 1e12));
        let m = mbu(1.0 / 0.014, 14e9, 2e12).unwrap();
        assert!((m - 0.5).abs() < 1e-12, "{m}");
    }

    #[test]
    fn measured_points() {
        // 135M params, 85 MB per token, 100 tok/s: intensity 3.18, 27 GFLOP/s.
        let (i, f) = decode_point(135e6, 85e6, 100.0);
        assert!(close(i, 270e6 / 85e6) && close(f, 27e9));
        // A 64-token prompt at 1000 tok/s: 64× the intensity.
        let (pi, pf) = prefill_point(135e6, 85e6, 64, 1000.0);
        assert!(close(pi, 64.0 * i) && close(pf, 270e9));
    }

    #[test]
    fn no_peak_no_mbu() {
        assert_eq!(mbu(10.0, 1e8, 0.0), None);
        assert_eq!(mbu(10.0, 1e8, f64::NAN), None);
    }

    #[test]
    fn llama_8b_at_16_bit_on_1_tb_s_is_about_62_tok_s_and_8_bit_doubles_it() {
        let e16 = llama8b(16.0).estimate().unwrap();
        // 8.03e9 × 2 bytes = 16.06 GB; 1e12 / 16.06e9 = 62.27 tok/s.
        assert!(close(e16.bytes_per_step, 16.06e9));
        assert!(close(e16.per_user_tok_s, 1e12 / 16.06e9));
        assert_eq!(e16.per_user_tok_s.round(), 62.0);
        let e8 = llama8b(8.0).estimate().unwrap();
        assert!(close(e8.per_user_tok_s, 2.0 * e16.per_user_tok_s));
        let e4 = llama8b(4.0).estimate().unwrap();
        assert!(close(e4.per_user_tok_s, 4.0 * e16.per_user_tok_s));
        assert_eq!(e16.bound, Bound::Memory);
        assert_eq!(e16.ridge_point, None);
    }

    #[test]
    fn moe_reads_only_its_active_share() {
        // Mixtral 8x7B: 12.9e9 active of 46.7e9; 4 bits on 400 GB/s.
        let e = Inputs {
            active_params: 12.9e9,
            bits_per_weight: 4.0,
            bandwidth_gb_s: 400.0,
            ..Default::default()
        }
        .estimate()
        .unwrap();
        assert!(close(e.weight_bytes, 6.45e9));
        assert!(close(e.per_user_tok_s, 400e9 / 6.45e9)); // 62.0 tok/s
    }

    #[test]
    fn long_context_kv_cache_can_outweigh_the_weights() {
        // Llama 3.1 8B at 4 bits, 128k tokens of f16 cache: 2 × 32 × 8 × 128 × 131072 × 2 bytes
        // = 17.18 GB per sequence, beside 4.015 GB of weights.
        let kv = KvCache {
            layers: 32,
            kv_heads: 8,
            head_dim: 128,
            context: 131_072,
            bits: 16.0,
        };
        assert!(close(kv.bytes_per_sequence(), 17_179_869_184.0));
        let e = Inputs {
            kv: Some(kv),
            ..llama8b(4.0)
        }
        .estimate()
        .unwrap();
        assert!(e.kv_bytes > 4.0 * e.weight_bytes);
        assert!(close(e.bytes_per_step, 4.015e9 + 17_179_869_184.0));
        // Batch 4 reads four caches but the weights once.
        let e4 = Inputs {
            kv: Some(kv),
            batch: 4,
            ..llama8b(4.0)
        }
        .estimate()
        .unwrap();
        assert!(close(e4.bytes_per_step, 4.015e9 + 4.0 * 17_179_869_184.0));
    }

    #[test]
    fn a_large_batch_becomes_compute_bound() {
        // 8.03e9 params at 16 bits on 3350 GB/s and 989 TFLOP/s (H100 SXM): ridge = 295 FLOP/B.
        let base = Inputs {
            bandwidth_gb_s: 3350.0,
            peak_tflops: Some(989.0),
            ..llama8b(16.0)
        };
        let one = base.estimate().unwrap();
        assert!(close(one.ridge_point.unwrap(), 989e12 / 3350e9));
        assert!(close(one.arithmetic_intensity, 1.0)); // 2 FLOPs per 2-byte weight
        assert_eq!(one.bound, Bound::Memory);
        let big = Inputs { batch: 512, ..base }.estimate().unwrap();
        assert_eq!(big.bound, Bound::Compute);
        assert!(close(big.step_s, 2.0 * 8.03e9 * 512.0 / 989e12));
        assert!(close(big.aggregate_tok_s, 512.0 * big.per_user_tok_s));
        // Throughput grows with batch while one user's rate falls once compute binds.
        assert!(big.aggregate_tok_s > 100.0 * one.aggregate_tok_s);
        assert!(big.per_user_tok_s < one.per_user_tok_s);
    }

    #[test]
    fn exactly_at_the_ridge_both_roofs_meet_and_memory_is_named() {
        // 1e9 params at 16 bits: 2e9 bytes and 2e9 × B FLOPs; bandwidth 1000 GB/s, 100 TFLOP/s:
        // ridge 100 FLOP/B, reached at B = 100.
        let at = Inputs {
            active_params: 1e9,
            bits_per_weight: 16.0,
            bandwidth_gb_s: 1000.0,
            peak_tflops: Some(100.0),
            batch: 100,
            ..Default::default()
        };
        let e = at.estimate().unwrap();
        assert!(close(e.arithmetic_intensity, 100.0));
        assert!(close(e.ridge_point.unwrap(), 100.0));
        assert!(close(e.memory_s, e.compute_s));
        assert_eq!(e.bound, Bound::Memory);
        assert_eq!(Inputs { batch: 101, ..at }.estimate().unwrap().bound, Bound::Compute);
        assert_eq!(Inputs { batch: 99, ..at }.estimate().unwrap().bound, Bound::Memory);
    }

    #[test]
    fn overhead_is_added_per_step() {
        // SmolLM2-135M at Q4_1 (5 bits): 84.4 MB; at 100 GB/s 0.844 ms, plus 2 ms overhead.
        let e = Inputs {
            active_params: 135e6,
            bits_per_weight: 5.0,
            bandwidth_gb_s: 100.0,
            overhead_s: 0.002,
            ..Default::default()
        }
        .estimate()
        .unwrap();
        assert!(close(e.step_s, 84.375e6 / 100e9 + 0.002));
        assert!(close(e.mbu(e.per_user_tok_s, 100.0).unwrap(), 0.84375 / 2.84375));
    }

    #[test]
    fn bad_inputs_are_named() {
        let bad = |i: Inputs| i.estimate().unwrap_err().field;
        assert_eq!(
            bad(Inputs {
                active_params: 0.0,
                ..Default::default()
            }),
            "parameters"
        );
        assert_eq!(
            bad(Inputs {
                active_params: -1.0,
                ..Default::default()
            }),
            "parameters"
        );
        assert_eq!(
            bad(Inputs {
                bits_per_weight: f64::NAN,
                ..Default::default()
            }),
            "bits per weight"
        );
        assert_eq!(
            bad(Inputs {
                bandwidth_gb_s: f64::INFINITY,
                ..Default::default()
            }),
            "bandwidth"
        );
        assert_eq!(
            bad(Inputs {
                bandwidth_gb_s: 5e9,
                ..Default::default()
            }),
            "bandwidth"
        );
        assert_eq!(
            bad(Inputs {
                peak_tflops: Some(0.0),
                ..Default::default()
            }),
            "peak compute"
        );
        assert_eq!(
            bad(Inputs {
                batch: 0,
                ..Default::default()
            }),
            "batch"
        );
        assert_eq!(
            bad(Inputs {
                overhead_s: -0.1,
                ..Default::default()
            }),
            "overhead"
        );
        let kv = KvCache {
            layers: 0,
            kv_heads: 8,
            head_dim: 128,
            context: 10,
            bits: 16.0,
        };
        assert_eq!(
            bad(Inputs {
                kv: Some(kv),
                ..Default::default()
            }),
            "layers"
        );
        let msg = Inputs {
            bandwidth_gb_s: -3.0,
            ..Default::default()
        }
        .estimate()
        .unwrap_err()
        .to_string();
        assert_eq!(msg, "bandwidth: must be more than zero, got -3");
    }
}
