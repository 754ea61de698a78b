//! Figures in the form a reader takes in at a glance: durations ("5 min 20 s", "450 ms") and
//! counts with thousands separators ("9,600").

/// Two units at most, the larger first; below a minute one decimal under 10 s.
pub fn duration(seconds: f64) -> String {
    if !seconds.is_finite() || seconds < 0.0 {
        return "–".into();
    }
    if seconds < 1.0 {
        let ms = seconds * 1e3;
        return if ms < 10.0 && ms > 0.0 {
            format!("{ms:.1} ms")
        } else {
            format!("{ms:.0} ms")
        };
    }
    if seconds < 10.0 {
        let s = format!("{seconds:.1}");
        return format!("{} s", s.trim_end_matches(".0"));
    }
    let total = seconds.round() as u64;
    let (h, m, s) = (total / 3600, total / 60 % 60, total % 60);
    match (h, m, s) {
        (0, 0, s) => format!("{s} s"),
        (0, m, 0) => format!("{m} min"),
        (0, m, s) => format!("{m} min {s} s"),
        (h, 0, _) if h >= 1 => format!("{h} h"),
        (h, m, _) => format!("{h} h {m} min"),
    }
}

/// A count with commas between thousands: 9600 → "9,600".
pub fn count(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// Three significant figures, no exponent: 29.5, 0.612, 1,520.
pub fn figure(x: f64) -> String {
    if !x.is_finite() {
        return "∞".into();
    }
    if x >= 1000.0 {
        return count(x.round() as u64);
    }
    let digits = if x >= 100.0 {
        0
    } else if x >= 10.0 {
        1
    } else if x >= 1.0 {
        2
    } else {
        3
    };
    format!("{x:.digits$}")
}

/// Seconds as milliseconds, three significant figures: "4.70 ms", "0.612 ms".
pub fn ms(seconds: f64) -> String {
    format!("{} ms", figure(seconds * 1e3))
}

/// Bytes in SI units, as memory vendors quote them (GB = 10^9): "16.06 GB", "84.4 MB".
pub fn bytes(n: f64) -> String {
    si(n, "B")
}

/// A quantity with an SI prefix and about four significant figures: "16.06 G" + unit.
pub fn si(n: f64, unit: &str) -> String {
    if !n.is_finite() {
        return "–".into();
    }
    let prefixes = [(1e15, "P"), (1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "k")];
    let (scale, p) = prefixes
        .iter()
        .copied()
        .find(|(s, _)| n.abs() >= *s)
        .unwrap_or((1.0, ""));
    let v = n / scale;
    let digits = if v.abs() >= 100.0 { 1 } else { 2 };
    if scale == 1.0 && v.fract() == 0.0 {
        return format!("{v:.0} {unit}");
    }
    format!("{v:.digits$} {p}{unit}")
}

/// Reads a count the way people write model sizes: "8B", "135M", "46.7b", "8.03e9", "7000000".
/// K, M, B (or G) and T multiply by 10^3, 10^6, 10^9, 10^12.
pub fn parse_count(text: &str) -> Result<f64, String> {
    let t = text.trim();
    let (number, exponent) = match t.chars().last().map(|c| c.to_ascii_uppercase()) {
        Some('K') => (&t[..t.len() - 1], 3),
        Some('M') => (&t[..t.len() - 1], 6),
        Some('B') | Some('G') => (&t[..t.len() - 1], 9),
        Some('T') => (&t[..t.len() - 1], 12),
        _ => (t, 0),
    };
    let number = number.trim();
    // "8.03B" reads as "8.03e9", which is exact, where 8.03 × 1e9 is not.
    let parsed = match number.contains(['e', 'E']) {
        true => number.parse::<f64>().map(|v| v * 10f64.powi(exponent)),
        false => format!("{number}e{exponent}").parse::<f64>(),
    };
    match parsed {
        Ok(v) if v.is_finite() && !number.is_empty() => Ok(v),
        _ => Err(format!("{text:?} is not a count (write e.g. 8B, 135M or 8.03e9)")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_like_a_person_would_say_it() {
        assert_eq!(duration(320.0), "5 min 20 s");
        assert_eq!(duration(32.0), "32 s");
        assert_eq!(duration(0.45), "450 ms");
        assert_eq!(duration(0.0042), "4.2 ms");
        assert_eq!(duration(0.0), "0 ms");
        assert_eq!(duration(1.5), "1.5 s");
        assert_eq!(duration(2.0), "2 s");
        assert_eq!(duration(59.6), "1 min");
        assert_eq!(duration(3725.0), "1 h 2 min");
        assert_eq!(duration(7200.0), "2 h");
        assert_eq!(duration(f64::NAN), "–");
    }

    #[test]
    fn si_units() {
        assert_eq!(bytes(16.06e9), "16.06 GB");
        assert_eq!(bytes(84.375e6), "84.38 MB");
        assert_eq!(bytes(0.0), "0 B");
        assert_eq!(bytes(512.0), "512 B");
        assert_eq!(si(295.2e12, "FLOP/s"), "295.2 TFLOP/s");
    }

    #[test]
    fn counts_parse_with_suffixes() {
        assert_eq!(parse_count("8B").unwrap(), 8e9);
        assert_eq!(parse_count(" 135m ").unwrap(), 135e6);
        assert_eq!(parse_count("46.7b").unwrap(), 46.7e9);
        assert_eq!(parse_count("8.03B").unwrap(), 8.03e9);
        assert_eq!(parse_count("8.03e9").unwrap(), 8.03e9);
        assert_eq!(parse_count("-1").unwrap(), -1.0); // range checks are the calculator's
        assert!(parse_count("eight").is_err());
        assert!(parse_count("").is_err());
        assert!(parse_count("NaN").is_err());
    }

    #[test]
    fn counts_group_thousands() {
        assert_eq!(count(0), "0");
        assert_eq!(count(999), "999");
        assert_eq!(count(9600), "9,600");
        assert_eq!(count(1_234_567), "1,234,567");
    }
}
