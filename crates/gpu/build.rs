//! Writes compacted copies of the WGSL kernels into `OUT_DIR` for the wasm build (see
//! src/wgsl_compact.rs for why).

#[path = "src/wgsl_compact.rs"]
mod wgsl_compact;

fn main() {
    let out = std::path::PathBuf::from(std::env::var_os("OUT_DIR").expect("cargo sets OUT_DIR"));
    println!("cargo::rerun-if-changed=src/wgsl_compact.rs");
    for name in [
        "embed.wgsl",
        "half.wgsl",
        "matvec.wgsl",
        "ops.wgsl",
        "probe.wgsl",
        "sample.wgsl",
    ] {
        println!("cargo::rerun-if-changed=src/{name}");
        let source = std::fs::read_to_string(format!("src/{name}")).unwrap_or_else(|e| panic!("src/{name}: {e}"));
        std::fs::write(out.join(name), wgsl_compact::compact(&source)).unwrap_or_else(|e| panic!("{name}: {e}"));
    }
}
