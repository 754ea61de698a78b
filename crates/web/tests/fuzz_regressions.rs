//! Every input that once failed a fuzz target (`fuzz/regressions/TARGET/`) and the seeds, run
//! through the targets' own code on the stable toolchain: a fixed bug stays fixed without a
//! nightly compiler or libFuzzer. With `TOKSCOPE_FUZZ_CORPUS=1` the fuzzers' whole working
//! corpus (`fuzz/corpus/TARGET/`) is replayed too: the project's limit of 1 s an input is held
//! here, on the product's build, rather than under the fuzzers' sanitizers (see xtask/src/fuzz.rs),
//! and so is their allocation limit.

#[path = "../../../fuzz/harness/mod.rs"]
mod harness;

use std::alloc::{GlobalAlloc, Layout, System};
use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering::Relaxed};
use std::time::{Duration, Instant};

const LIMIT: Duration = Duration::from_secs(1);

/// The fuzzers' other limit, held here too: no single allocation over 256 MiB from an input
/// under 1 MiB. (Natively a huge allocation may succeed untouched; this notices it anyway.)
const ALLOCATION_LIMIT: usize = 256 << 20;

struct Watch;

static LARGEST: AtomicUsize = AtomicUsize::new(0);

// SAFETY: every call goes straight to the system allocator; the size is only recorded.
unsafe impl GlobalAlloc for Watch {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        LARGEST.fetch_max(layout.size(), Relaxed);
        unsafe { System.alloc(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        unsafe { System.dealloc(ptr, layout) }
    }
    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        LARGEST.fetch_max(layout.size(), Relaxed);
        unsafe { System.alloc_zeroed(layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        LARGEST.fetch_max(new_size, Relaxed);
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static WATCH: Watch = Watch;

#[test]
fn every_fuzz_regression_and_seed_passes_within_a_second() {
    let fuzz = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fuzz");
    let mut dirs = vec!["regressions", "seeds"];
    if std::env::var_os("TOKSCOPE_FUZZ_CORPUS").is_some() {
        dirs.push("corpus");
    }
    let mut ran = 0;
    for (target, run) in harness::TARGETS {
        let (mut count, mut slowest) = (0, (Duration::ZERO, String::new()));
        for dir in &dirs {
            let Ok(entries) = std::fs::read_dir(fuzz.join(dir).join(target)) else {
                continue;
            };
            for path in entries.flatten().map(|e| e.path()) {
                let input = std::fs::read(&path).unwrap();
                LARGEST.store(0, Relaxed);
                let start = Instant::now();
                run(&input);
                let took = start.elapsed();
                assert!(took < LIMIT, "{} took {took:?}", path.display());
                let largest = LARGEST.load(Relaxed);
                assert!(
                    largest <= ALLOCATION_LIMIT || input.len() >= 1 << 20,
                    "{} allocated {largest} bytes at once",
                    path.display()
                );
                if took > slowest.0 {
                    slowest = (took, path.display().to_string());
                }
                count += 1;
            }
        }
        println!("{target}: {count} inputs, slowest {:?} ({})", slowest.0, slowest.1);
        ran += count;
    }
    assert!(ran >= 20, "only {ran} inputs found under {}", fuzz.display());
}
