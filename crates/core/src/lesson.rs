//! The guided path (`#/guide/N`): seven steps from "this is my rate" to "this is why", each a
//! live experiment whose sentence is said with the reader's own measured figures. Each
//! function returns `None` until the step's figures exist (the page then says what to do).
//!
//! The reasoning is DESIGN.md's: a decoded token reads every weight once plus its KV cache, so
//! the rate cannot beat bandwidth ÷ bytes per token (Williams, Waterman & Patterson,
//! "Roofline", CACM 2009); MBU = bytes per token × tok/s ÷ bandwidth (Databricks, "LLM
//! Inference Performance Engineering: Best Practices", 2023); what a step takes beyond the bytes
//! is the fixed cost per token ([`crate::roofline::floor`]); a batch shares one read of the
//! weights per step (Pope et al., "Efficiently Scaling Transformer Inference", 2022).

use crate::human::{bytes, count, duration};
use crate::roofline::{GB, achieved_bandwidth, mbu};

/// One step of the path: its title and what the reader does in it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Step {
    pub title: &'static str,
    pub task: &'static str,
}

/// The steps in order; `#/guide/1` is the first.
pub const STEPS: [Step; 7] = [
    Step {
        title: "Your rate",
        task: "Generate some text and watch the decode meter: tokens per second, on this device.",
    },
    Step {
        title: "Bytes per token",
        task: "Each token reads the whole model once. The file says how many bytes that is.",
    },
    Step {
        title: "Your bandwidth",
        task: "Run the speed check: it measures how fast this device reads memory, then decodes.",
    },
    Step {
        title: "The ceiling",
        task: "Bandwidth ÷ bytes per token is the fastest any engine could decode here. Compare your run with it.",
    },
    Step {
        title: "The precision dial",
        task: "Run the precision dial: the same model at fewer and more bits per weight, each decoded here.",
    },
    Step {
        title: "The batch dial",
        task: "Run the batch dial: several sequences decoded together share one read of the weights.",
    },
    Step {
        title: "The agent loop",
        task: "An agent writes many steps in a row: see what your rate means for its wait.",
    },
];

fn positive(x: f64) -> bool {
    x.is_finite() && x > 0.0
}

/// Step 1: the measured rate as time per token, and what it is in reading terms.
pub fn rate(tok_s: f64, tokens: usize, engine: &str) -> Option<String> {
    (positive(tok_s) && tokens > 0).then(|| {
        format!(
            "Your device generated {} tokens at {:.1} tok/s on {engine}: {} a token.",
            count(tokens as u64),
            tok_s,
            ms(1.0 / tok_s)
        )
    })
}

/// Step 2: what one token reads, from the loaded file.
pub fn bytes_per_token(name: &str, parameters: u64, weight_bytes: u64, bytes_per_token: u64) -> Option<String> {
    (weight_bytes > 0 && bytes_per_token >= weight_bytes).then(|| {
        let kv = bytes_per_token - weight_bytes;
        format!(
            "{name} has {} parameters stored in {} ({:.2} bits each). Every token reads all of them once, \
             plus {} of KV cache: {} a token, whatever the prompt says.",
            count(parameters),
            bytes(weight_bytes as f64),
            weight_bytes as f64 * 8.0 / parameters.max(1) as f64,
            bytes(kv as f64),
            bytes(bytes_per_token as f64)
        )
    })
}

/// Step 3: the probed bandwidth beside what the run moved; without a probe (no WebGPU), the
/// run's own traffic as a lower bound.
pub fn bandwidth(probe_gb_s: Option<f64>, bytes_per_token: u64, tok_s: f64) -> Option<String> {
    let moved =
        (positive(tok_s) && bytes_per_token > 0).then(|| achieved_bandwidth(bytes_per_token as f64, 1.0 / tok_s) / GB);
    match (probe_gb_s.filter(|g| positive(*g)), moved) {
        (Some(probe), Some(moved)) => Some(format!(
            "This device reads memory at {} GB/s (the probe: a streaming read as wide as the model's). \
             Your run moved {} × {:.1} tok/s = {} GB/s of it.",
            gb(probe),
            bytes(bytes_per_token as f64),
            tok_s,
            gb(moved)
        )),
        (Some(probe), None) => Some(format!(
            "This device reads memory at {} GB/s (the probe: a streaming read as wide as the model's).",
            gb(probe)
        )),
        (None, Some(moved)) => Some(format!(
            "Without WebGPU there is no probe; your run itself moved {} × {:.1} tok/s = {} GB/s, \
             so this device reads at least that fast.",
            bytes(bytes_per_token as f64),
            tok_s,
            gb(moved)
        )),
        (None, None) => None,
    }
}

/// Step 4: the bandwidth ceiling, where the run sits under it (MBU), and the fixed cost per
/// token: the measured step time less the time its bytes take.
pub fn ceiling(bytes_per_token: u64, bandwidth_gb_s: f64, tok_s: f64) -> Option<String> {
    if !(positive(bandwidth_gb_s) && positive(tok_s) && bytes_per_token > 0) {
        return None;
    }
    let b = bytes_per_token as f64;
    let ceiling = bandwidth_gb_s * GB / b;
    let used = mbu(tok_s, b, bandwidth_gb_s * GB)?;
    let step = 1.0 / tok_s;
    let reading = b / (bandwidth_gb_s * GB);
    let fixed = step - reading;
    let mut s = format!(
        "Ceiling: {} GB/s ÷ {} = {:.0} tok/s. You decoded {:.1} tok/s, {:.0} % of it (MBU). ",
        gb(bandwidth_gb_s),
        bytes(b),
        ceiling,
        tok_s,
        100.0 * used
    );
    if fixed > 0.0 {
        s.push_str(&format!(
            "Of your {} a token, {} is reading the bytes and {} is fixed cost per token: launching \
             kernels, synchronising, and arithmetic the engine does not hide behind the reads.",
            ms(step),
            ms(reading),
            ms(fixed)
        ));
        if fixed > reading {
            s.push_str(" Here the fixed cost is the larger part: a bigger model would decode at nearly the same rate.");
        }
    } else {
        s.push_str("Your run is at the ceiling: the bytes alone set its speed.");
    }
    Some(s)
}

/// Step 5: the precision dial's points, fewest bytes first: how the rate followed the bytes.
pub fn precision(points: &[(&str, u64, f64)]) -> Option<String> {
    let (first, last) = (points.first()?, points.last()?);
    if points.len() < 2 || first.1 == 0 || !positive(first.2) || !positive(last.2) {
        return None;
    }
    let bytes_ratio = last.1 as f64 / first.1 as f64;
    let rate_ratio = first.2 / last.2;
    let verdict = if rate_ratio > 1.5 * bytes_ratio {
        "the rate fell faster than the bytes grew, so unpacking these formats costs this engine \
         arithmetic beyond the reads"
    } else if rate_ratio >= 0.6 * bytes_ratio {
        "the rate followed the bytes, so decoding here is bandwidth-bound"
    } else if rate_ratio >= 1.2 {
        "the rate followed the bytes only part of the way; the fixed cost per token and unpacking take the rest"
    } else {
        "the rate barely moved, so the fixed cost per token, not the bytes, sets the speed here"
    };
    Some(format!(
        "From {} ({}) to {} ({}) a token reads {:.1}× the bytes, and your rate fell {:.1}× ({:.1} → {:.1} tok/s): {verdict}.",
        first.0,
        bytes(first.1 as f64),
        last.0,
        bytes(last.1 as f64),
        bytes_ratio,
        rate_ratio,
        first.2,
        last.2
    ))
}

/// Step 6: the batch dial's points (batch, one sequence's tok/s, all sequences' tok/s), read
/// for whether the batch shared the weights' bytes (the total grows with the batch) or the
/// engine's arithmetic binds (the total stays flat: the wasm CPU engine).
pub fn batch(points: &[(usize, f64, f64)]) -> Option<String> {
    let one = points.iter().find(|p| p.0 == 1)?;
    let most = points.iter().max_by_key(|p| p.0)?;
    if most.0 < 2 || !positive(one.2) || !positive(most.1) {
        return None;
    }
    let gain = most.2 / one.2;
    let verdict = if gain >= 0.5 * most.0 as f64 {
        "the weights are read once a step for the whole batch, so the total grows almost with the \
         batch: this is how a server serves many users from the bandwidth that caps one"
    } else if gain >= 1.5 {
        "the total grew, but less than the batch: the weights' bytes are shared, and arithmetic binds \
         part of the way"
    } else {
        "the total barely grew: arithmetic, not memory, binds this engine, so a batch only splits the \
         same rate between sequences (on a GPU the batch shares the bytes)"
    };
    Some(format!(
        "{} sequences together decoded {:.1}× the tokens of one ({:.1} → {:.1} tok/s in all), each at \
         {:.0} % of its lone rate: {verdict}.",
        most.0,
        gain,
        one.2,
        most.2,
        100.0 * most.1 / one.1
    ))
}

/// Step 7: an agent's wait for decoding alone at the reader's rate, and at ten times it.
pub fn agent(tok_s: f64, steps: u32, tokens_per_step: u64) -> Option<String> {
    (positive(tok_s) && steps > 0 && tokens_per_step > 0).then(|| {
        let tokens = steps as f64 * tokens_per_step as f64;
        format!(
            "An agent of {steps} steps writing {} tokens each decodes {} tokens: {} at your {:.1} tok/s, \
             {} at ten times it. Every step waits for the last, so the wait is the sum — decode speed, \
             that is bandwidth, is what an agent's user feels.",
            count(tokens_per_step),
            count(tokens as u64),
            duration(tokens / tok_s),
            tok_s,
            duration(tokens / (10.0 * tok_s))
        )
    })
}

fn ms(seconds: f64) -> String {
    match seconds * 1e3 {
        m if m >= 100.0 => format!("{m:.0} ms"),
        m if m >= 1.0 => format!("{m:.1} ms"),
        m => format!("{m:.2} ms"),
    }
}

fn gb(gb_s: f64) -> String {
    match gb_s {
        g if g >= 100.0 => format!("{g:.0}"),
        g if g >= 1.0 => format!("{g:.1}"),
        g => format!("{g:.2}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_rate_in_time_per_token() {
        assert_eq!(
            rate(33.0, 64, "the CPU engine").unwrap(),
            "Your device generated 64 tokens at 33.0 tok/s on the CPU engine: 30.3 ms a token."
        );
        assert_eq!(rate(0.0, 64, "x"), None);
        assert_eq!(rate(f64::NAN, 64, "x"), None);
        assert_eq!(rate(33.0, 0, "x"), None);
    }

    #[test]
    fn bytes_per_token_from_the_file() {
        // The default model: 134.5 M parameters, 96.6 MB of weights.
        let s = bytes_per_token("SmolLM2", 134_515_008, 96_600_000, 97_000_000).unwrap();
        assert!(s.contains("134,515,008 parameters"), "{s}");
        assert!(s.contains("5.75 bits each"), "{s}");
        assert!(s.contains("400.0 kB of KV cache"), "{s}");
        assert!(s.contains("97.00 MB a token"), "{s}");
        assert_eq!(bytes_per_token("x", 1, 0, 0), None);
    }

    #[test]
    fn bandwidth_with_and_without_a_probe() {
        let s = bandwidth(Some(25.0), 100_000_000, 30.0).unwrap();
        assert!(s.contains("25.0 GB/s") && s.contains("= 3.0 GB/s"), "{s}");
        let s = bandwidth(None, 100_000_000, 30.0).unwrap();
        assert!(s.starts_with("Without WebGPU") && s.contains("at least"), "{s}");
        assert!(bandwidth(Some(25.0), 100_000_000, 0.0).unwrap().contains("25.0 GB/s"));
        assert_eq!(bandwidth(None, 100_000_000, 0.0), None);
        assert_eq!(bandwidth(Some(f64::INFINITY), 0, 0.0), None);
    }

    #[test]
    fn the_ceiling_mbu_and_fixed_cost() {
        // 100 MB at 10 GB/s: 10 ms of reading, a 100 tok/s ceiling; 25 tok/s is 40 ms a token.
        let s = ceiling(100_000_000, 10.0, 25.0).unwrap();
        assert!(s.contains("= 100 tok/s"), "{s}");
        assert!(s.contains("25 % of it (MBU)"), "{s}");
        assert!(
            s.contains("10.0 ms is reading the bytes and 30.0 ms is fixed cost"),
            "{s}"
        );
        assert!(s.contains("the fixed cost is the larger part"), "{s}");
        // 80 tok/s: 12.5 ms, of which 10 reading.
        let s = ceiling(100_000_000, 10.0, 80.0).unwrap();
        assert!(s.contains("80 % of it") && !s.contains("larger part"), "{s}");
        // Faster than the probe says (a probe below the true peak): no negative fixed cost.
        assert!(ceiling(100_000_000, 10.0, 120.0).unwrap().contains("at the ceiling"));
        assert_eq!(ceiling(100_000_000, 0.0, 25.0), None);
        assert_eq!(ceiling(0, 10.0, 25.0), None);
    }

    #[test]
    fn precision_reads_whether_the_rate_followed_the_bytes() {
        let bound = [
            ("Q4_0", 80_000_000, 100.0),
            ("Q8_0", 150_000_000, 55.0),
            ("F32", 560_000_000, 15.0),
        ];
        let s = precision(&bound).unwrap();
        assert!(s.contains("From Q4_0 (80.00 MB) to F32 (560.0 MB)"), "{s}");
        assert!(s.contains("7.0× the bytes") && s.contains("fell 6.7×"), "{s}");
        assert!(s.contains("bandwidth-bound"), "{s}");
        let flat = [("Q4_0", 80_000_000, 30.0), ("F32", 560_000_000, 28.0)];
        assert!(precision(&flat).unwrap().contains("barely moved"));
        let part = [("Q4_0", 80_000_000, 30.0), ("F32", 560_000_000, 10.0)];
        assert!(precision(&part).unwrap().contains("part of the way"));
        let unpacking = [("Q4_0", 75_000_000, 48.0), ("Q4_K", 90_000_000, 21.0)];
        assert!(
            precision(&unpacking)
                .unwrap()
                .contains("fell faster than the bytes grew")
        );
        assert_eq!(precision(&bound[..1]), None);
        assert_eq!(precision(&[]), None);
    }

    #[test]
    fn batch_reads_whether_the_batch_shared_the_bytes() {
        let shared = [(1, 30.0, 30.0), (2, 29.0, 58.0), (16, 20.0, 320.0)];
        let s = batch(&shared).unwrap();
        assert!(
            s.starts_with("16 sequences together decoded 10.7× the tokens of one (30.0 → 320.0"),
            "{s}"
        );
        assert!(
            s.contains("each at 67 % of its lone rate") && s.contains("serves many users"),
            "{s}"
        );
        let flat = [(1, 30.0, 30.0), (16, 2.0, 32.0)];
        assert!(batch(&flat).unwrap().contains("arithmetic, not memory"));
        let part = [(1, 30.0, 30.0), (16, 6.0, 96.0)];
        assert!(batch(&part).unwrap().contains("less than the batch"));
        assert_eq!(batch(&shared[..1]), None);
        assert_eq!(batch(&shared[1..]), None, "no batch of one to compare with");
    }

    #[test]
    fn the_agent_waits_for_every_token() {
        let s = agent(30.0, 12, 800).unwrap();
        assert!(s.contains("decodes 9,600 tokens"), "{s}");
        assert!(s.contains(&duration(320.0)) && s.contains(&duration(32.0)), "{s}");
        assert_eq!(agent(0.0, 12, 800), None);
        assert_eq!(agent(30.0, 0, 800), None);
    }
}
