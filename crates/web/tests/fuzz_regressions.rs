//! Every input that once failed a fuzz target (`fuzz/regressions/TARGET/`), and the seeds, run
//! through the targets' own code on the stable toolchain: a fixed bug stays fixed without a
//! nightly compiler or libFuzzer. The fuzzers' limit of 1 s an input is held here with room for
//! a loaded test machine.

#[path = "../../../fuzz/harness/mod.rs"]
mod harness;

use std::path::Path;
use std::time::{Duration, Instant};

#[test]
fn every_fuzz_regression_and_seed_passes() {
    let fuzz = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fuzz");
    let mut ran = 0;
    for (target, run) in harness::TARGETS {
        for dir in ["regressions", "seeds"] {
            let Ok(entries) = std::fs::read_dir(fuzz.join(dir).join(target)) else {
                continue;
            };
            for path in entries.flatten().map(|e| e.path()) {
                let input = std::fs::read(&path).unwrap();
                let start = Instant::now();
                run(&input);
                let took = start.elapsed();
                assert!(took < Duration::from_secs(10), "{} took {took:?}", path.display());
                ran += 1;
            }
        }
    }
    assert!(ran >= 20, "only {ran} inputs found under {}", fuzz.display());
}
