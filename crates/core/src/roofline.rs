//! The memory roofline of decoding: every generated token reads every weight (and the KV cache
//! so far) once, so tok/s is bounded by bandwidth ÷ bytes per token.

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

    #[test]
    fn databricks_worked_example_is_half() {
        // 7B at 16 bits = 14 GB per token, 14 ms per token, 2 TB/s peak.
        let m = mbu(1.0 / 0.014, 14e9, 2e12).unwrap();
        assert!((m - 0.5).abs() < 1e-12, "{m}");
    }

    #[test]
    fn no_peak_no_mbu() {
        assert_eq!(mbu(10.0, 1e8, 0.0), None);
        assert_eq!(mbu(10.0, 1e8, f64::NAN), None);
    }
}
