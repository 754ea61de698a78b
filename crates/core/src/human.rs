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
    fn counts_group_thousands() {
        assert_eq!(count(0), "0");
        assert_eq!(count(999), "999");
        assert_eq!(count(9600), "9,600");
        assert_eq!(count(1_234_567), "1,234,567");
    }
}
