//! Presets for the roofline and agent panels: devices (peak figures from their makers, never
//! measured here: this device's own probe wins), models, and vendors' speed claims (labelled as
//! claims). Every figure names its source.

/// A device's quoted peaks.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct DevicePreset {
    /// Stable id for URLs (`device=h100-sxm`).
    pub id: &'static str,
    pub name: &'static str,
    /// Peak memory bandwidth, GB/s (10^9 bytes).
    pub bandwidth_gb_s: f64,
    /// Peak dense 16-bit compute, TFLOP/s, where the maker quotes one (FP32 for consumer GPUs
    /// without a quoted FP16 figure); `None` when we have no figure we can cite.
    pub peak_tflops: Option<f64>,
    pub source: &'static str,
}

/// Peak memory bandwidth and compute of devices readers own or read about. Bandwidths are the
/// figures DESIGN.md collects from vendors' specification pages; compute figures from the same
/// vendors' pages.
pub const DEVICES: &[DevicePreset] = &[
    DevicePreset {
        id: "m1",
        name: "Apple M1",
        bandwidth_gb_s: 68.0,
        peak_tflops: Some(2.6),
        source: "Apple M1 announcement (Nov 2020): 68.25 GB/s LPDDR4X-4266; GPU 2.6 TFLOPS FP32",
    },
    DevicePreset {
        id: "m1-pro",
        name: "Apple M1 Pro",
        bandwidth_gb_s: 200.0,
        peak_tflops: Some(5.2),
        source: "Apple M1 Pro/Max announcement (Oct 2021): 200 GB/s; GPU 5.2 TFLOPS FP32",
    },
    DevicePreset {
        id: "m1-max",
        name: "Apple M1 Max",
        bandwidth_gb_s: 400.0,
        peak_tflops: Some(10.4),
        source: "Apple M1 Pro/Max announcement (Oct 2021): 400 GB/s; GPU 10.4 TFLOPS FP32",
    },
    DevicePreset {
        id: "m2",
        name: "Apple M2",
        bandwidth_gb_s: 100.0,
        peak_tflops: Some(3.6),
        source: "Apple M2 announcement (Jun 2022): 100 GB/s; GPU 3.6 TFLOPS FP32",
    },
    DevicePreset {
        id: "m3",
        name: "Apple M3",
        bandwidth_gb_s: 100.0,
        peak_tflops: None,
        source: "Apple MacBook Pro (M3) technical specifications: 100 GB/s",
    },
    DevicePreset {
        id: "m3-pro",
        name: "Apple M3 Pro",
        bandwidth_gb_s: 150.0,
        peak_tflops: None,
        source: "Apple MacBook Pro (M3 Pro) technical specifications: 150 GB/s",
    },
    DevicePreset {
        id: "m3-max",
        name: "Apple M3 Max",
        bandwidth_gb_s: 400.0,
        peak_tflops: None,
        source: "Apple MacBook Pro (M3 Max, 16-core CPU) technical specifications: 400 GB/s",
    },
    DevicePreset {
        id: "iris-xe",
        name: "Intel Iris Xe (LPDDR4X-4266)",
        bandwidth_gb_s: 68.0,
        peak_tflops: Some(2.1),
        source: "Intel 11th-gen Core datasheet: LPDDR4X-4266, 128-bit = 68.3 GB/s; 96 EUs × 16 FLOP × 1.35 GHz",
    },
    DevicePreset {
        id: "radeon-780m",
        name: "AMD Radeon 780M",
        bandwidth_gb_s: 120.0,
        peak_tflops: Some(8.9),
        source: "AMD Ryzen 7040 specifications: LPDDR5X-7500, 128-bit = 120 GB/s (≈90 with DDR5-5600); 8.9 TFLOPS FP32",
    },
    DevicePreset {
        id: "rtx-3060",
        name: "NVIDIA RTX 3060",
        bandwidth_gb_s: 360.0,
        peak_tflops: Some(12.7),
        source: "NVIDIA GeForce RTX 3060 specifications: 360 GB/s GDDR6; 12.7 TFLOPS FP32",
    },
    DevicePreset {
        id: "rtx-4090",
        name: "NVIDIA RTX 4090",
        bandwidth_gb_s: 1008.0,
        peak_tflops: Some(82.6),
        source: "NVIDIA Ada Lovelace architecture whitepaper: 1008 GB/s GDDR6X; 82.6 TFLOPS FP32",
    },
    DevicePreset {
        id: "h100-sxm",
        name: "NVIDIA H100 SXM",
        bandwidth_gb_s: 3350.0,
        peak_tflops: Some(989.0),
        source: "NVIDIA H100 datasheet: 3.35 TB/s HBM3; 989 TFLOPS dense BF16",
    },
    DevicePreset {
        id: "h200",
        name: "NVIDIA H200",
        bandwidth_gb_s: 4800.0,
        peak_tflops: Some(989.0),
        source: "NVIDIA H200 datasheet: 4.8 TB/s HBM3e; 989 TFLOPS dense BF16",
    },
    DevicePreset {
        id: "gb300",
        name: "NVIDIA GB300 (per GPU)",
        bandwidth_gb_s: 8000.0,
        peak_tflops: None,
        source: "NVIDIA GB300 NVL72 specifications: ≈8 TB/s HBM3e per GPU",
    },
    DevicePreset {
        id: "snapdragon-8g2",
        name: "Snapdragon 8 Gen 2",
        bandwidth_gb_s: 67.0,
        peak_tflops: None,
        source: "Qualcomm Snapdragon 8 Gen 2 product brief: LPDDR5X-4200, 64-bit = 67 GB/s",
    },
    DevicePreset {
        id: "a17-pro",
        name: "Apple A17 Pro",
        bandwidth_gb_s: 51.0,
        peak_tflops: None,
        source: "LPDDR5-6400, 64-bit = 51.2 GB/s (Apple does not publish the figure)",
    },
];

pub fn device(id: &str) -> Option<&'static DevicePreset> {
    DEVICES.iter().find(|d| d.id == id)
}

/// The device presets just below and just above a measured bandwidth: where this device sits
/// (a measured figure beside quoted peaks, which real code reaches 60–90 % of).
pub fn neighbours(gb_s: f64) -> (Option<&'static DevicePreset>, Option<&'static DevicePreset>) {
    let below = DEVICES
        .iter()
        .filter(|d| d.bandwidth_gb_s <= gb_s)
        .max_by(|a, b| a.bandwidth_gb_s.total_cmp(&b.bandwidth_gb_s));
    let above = DEVICES
        .iter()
        .filter(|d| d.bandwidth_gb_s > gb_s)
        .min_by(|a, b| a.bandwidth_gb_s.total_cmp(&b.bandwidth_gb_s));
    (below, above)
}

/// A model's shape, enough for the roofline: active parameters, precision and KV cache.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ModelPreset {
    pub id: &'static str,
    pub name: &'static str,
    /// Parameters read per token (a mixture-of-experts' active share).
    pub active_params: f64,
    /// All parameters (differs from `active_params` only for a mixture of experts).
    pub total_params: f64,
    pub bits_per_weight: f64,
    /// Layers, KV heads, head dim; `None` when the source does not give them.
    pub kv_shape: Option<(u32, u32, u32)>,
    pub source: &'static str,
}

pub const MODELS: &[ModelPreset] = &[
    ModelPreset {
        id: "smollm2-135m",
        name: "SmolLM2-135M (Q4_1)",
        active_params: 134.5e6,
        total_params: 134.5e6,
        bits_per_weight: 5.0,
        kv_shape: Some((30, 3, 64)),
        source: "HuggingFaceTB/SmolLM2-135M-Instruct config.json: 30 layers, 3 KV heads × 64; Q4_1 = 20 bytes per 32 weights",
    },
    ModelPreset {
        id: "llama-3.1-8b-16",
        name: "Llama 3.1 8B, 16-bit",
        active_params: 8.03e9,
        total_params: 8.03e9,
        bits_per_weight: 16.0,
        kv_shape: Some((32, 8, 128)),
        source: "Meta Llama 3.1 model card and config.json: 8.03B parameters, 32 layers, 8 KV heads × 128",
    },
    ModelPreset {
        id: "llama-3.1-8b-8",
        name: "Llama 3.1 8B, 8-bit",
        active_params: 8.03e9,
        total_params: 8.03e9,
        bits_per_weight: 8.0,
        kv_shape: Some((32, 8, 128)),
        source: "As 16-bit, weights at 8 bits",
    },
    ModelPreset {
        id: "llama-3.1-8b-4",
        name: "Llama 3.1 8B, 4-bit",
        active_params: 8.03e9,
        total_params: 8.03e9,
        bits_per_weight: 4.0,
        kv_shape: Some((32, 8, 128)),
        source: "As 16-bit, weights at 4 bits",
    },
    ModelPreset {
        id: "dense-35b-bf16",
        name: "35B dense, BF16",
        active_params: 35e9,
        total_params: 35e9,
        bits_per_weight: 16.0,
        kv_shape: None,
        source: "The size of the 35B model in the vendor claims below (BF16, batch 1); KV shape not published",
    },
    ModelPreset {
        id: "mixtral-8x7b-4",
        name: "Mixtral 8x7B (MoE), 4-bit",
        active_params: 12.9e9,
        total_params: 46.7e9,
        bits_per_weight: 4.0,
        kv_shape: Some((32, 8, 128)),
        source: "Mistral AI, \"Mixtral of experts\" (Dec 2023): 46.7B total, 12.9B used per token; 32 layers, 8 KV heads × 128",
    },
];

pub fn model(id: &str) -> Option<&'static ModelPreset> {
    MODELS.iter().find(|m| m.id == id)
}

/// A vendor's published decode rate: shown as a claim, never as a measurement.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Claim {
    pub id: &'static str,
    pub label: &'static str,
    pub tok_s: f64,
    pub source: &'static str,
}

/// The claims quoted in the project's seeds (DESIGN.md).
pub const CLAIMS: &[Claim] = &[
    Claim {
        id: "clover-gb300",
        label: "Clover 35B on GB300 (claim)",
        tok_s: 680.0,
        source: "vendor claim: BF16, batch 1, GB300",
    },
    Claim {
        id: "clover-h200",
        label: "Clover 35B on H200 (claim)",
        tok_s: 515.0,
        source: "vendor claim: BF16, batch 1, H200",
    },
    Claim {
        id: "mercury-3",
        label: "Mercury 3 (claim)",
        tok_s: 1068.0,
        source: "vendor claim",
    },
];

pub fn claim(id: &str) -> Option<&'static Claim> {
    CLAIMS.iter().find(|c| c.id == id)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_are_unique_and_figures_positive() {
        let mut ids: Vec<&str> = DEVICES
            .iter()
            .map(|d| d.id)
            .chain(MODELS.iter().map(|m| m.id))
            .collect();
        ids.extend(CLAIMS.iter().map(|c| c.id));
        let n = ids.len();
        ids.sort();
        ids.dedup();
        assert_eq!(ids.len(), n);
        assert!(DEVICES.iter().all(|d| d.bandwidth_gb_s > 0.0 && !d.source.is_empty()));
        assert!(
            MODELS
                .iter()
                .all(|m| m.active_params <= m.total_params && !m.source.is_empty())
        );
    }

    #[test]
    fn neighbours_bracket_a_measurement() {
        let (below, above) = neighbours(75.0);
        assert_eq!(below.unwrap().bandwidth_gb_s, 68.0);
        assert_eq!(above.unwrap().id, "m2");
        let (below, above) = neighbours(7.0);
        assert!(below.is_none());
        assert_eq!(above.unwrap().id, "a17-pro");
        assert!(neighbours(9000.0).1.is_none());
    }

    #[test]
    fn the_claims_sceptical_reading() {
        // GB300 has ≈1.67× H200's bandwidth, Clover's claim is only ≈1.32× faster on it.
        let bw = device("gb300").unwrap().bandwidth_gb_s / device("h200").unwrap().bandwidth_gb_s;
        let claimed = claim("clover-gb300").unwrap().tok_s / claim("clover-h200").unwrap().tok_s;
        assert!((bw - 1.667).abs() < 0.01, "{bw}");
        assert!((claimed - 1.32).abs() < 0.01, "{claimed}");
        // And a bandwidth-bound 35B at BF16 could not reach it: 4.8 TB/s ÷ 70 GB = 68.6 tok/s.
        let m = model("dense-35b-bf16").unwrap();
        let ceiling = device("h200").unwrap().bandwidth_gb_s * 1e9 / (m.active_params * 2.0);
        assert!(ceiling < claim("clover-h200").unwrap().tok_s / 7.0);
    }
}
