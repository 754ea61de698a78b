//! Summary statistics for benchmark runs.

/// Median of `xs` (mean of the middle two for an even count); NaN-safe ordering. Benchmarks
/// report the median because a shared machine's outliers are one-sided.
pub fn median(xs: &[f64]) -> f64 {
    assert!(!xs.is_empty(), "median of no runs");
    let mut v = xs.to_vec();
    v.sort_by(f64::total_cmp);
    let n = v.len();
    if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn median_odd_even() {
        assert_eq!(super::median(&[3.0, 1.0, 2.0]), 2.0);
        assert_eq!(super::median(&[4.0, 1.0, 2.0, 3.0]), 2.5);
    }
}
