//! The shaders as the page ships them: WGSL without comments, indentation or blank lines.
//!
//! The kernels carry their reasoning in comments (≈ half of their 66 KB); the page downloads
//! them as text inside the worker's wasm, so the wasm build includes compacted copies that
//! `build.rs` writes with this function (native builds keep the files as written, so naga's
//! errors point at their lines). WGSL has no string literals, so `//` always opens a comment;
//! the kernels use no `/* */` comments, and a test holds that compacting keeps every module
//! the same.

/// `source` without `//` comments, leading and trailing blanks, or empty lines.
pub fn compact(source: &str) -> String {
    let mut out = String::with_capacity(source.len() / 2);
    for line in source.lines() {
        let code = line.split_once("//").map_or(line, |(code, _)| code).trim();
        if !code.is_empty() {
            out.push_str(code);
            out.push('\n');
        }
    }
    out
}

#[cfg(all(test, not(target_arch = "wasm32")))]
mod tests {
    use super::compact;
    use naga::valid::{Capabilities, ShaderStages, SubgroupOperationSet, ValidationFlags, Validator};

    /// The module naga reads from `source`, written back as WGSL: equal text, equal kernel.
    fn as_naga_writes_it(source: &str) -> String {
        let module = naga::front::wgsl::parse_str(source).unwrap_or_else(|e| panic!("{}", e.emit_to_string(source)));
        let info = Validator::new(ValidationFlags::all(), Capabilities::all())
            .subgroup_stages(ShaderStages::COMPUTE)
            .subgroup_operations(SubgroupOperationSet::all())
            .validate(&module)
            .unwrap_or_else(|e| panic!("{e:?}"));
        naga::back::wgsl::write_string(&module, &info, naga::back::wgsl::WriterFlags::empty())
            .expect("naga writes WGSL")
    }

    #[test]
    fn compacting_keeps_every_kernel_the_same() {
        for (name, source) in [
            ("ops.wgsl", crate::engine::ops_source()),
            ("probe.wgsl", crate::probe::SHADER.to_string()),
            ("matvec.wgsl", crate::matvec::source(false)),
            ("matvec.wgsl with subgroups", crate::matvec::source(true)),
            ("embed.wgsl", crate::embed::EMBED_SHADER.to_string()),
            ("sample.wgsl", crate::sampling::SAMPLE_SHADER.to_string()),
        ] {
            let compacted = compact(&source);
            assert!(
                compacted.len() * 10 < source.len() * 7,
                "{name}: {} of {} bytes",
                compacted.len(),
                source.len()
            );
            assert_eq!(as_naga_writes_it(&compacted), as_naga_writes_it(&source), "{name}");
        }
    }

    #[test]
    fn comments_blanks_and_empty_lines_go_code_stays() {
        let source = "// a kernel\n\n  let x = 1u; // why\n\tfn f() {}  \n//\n";
        assert_eq!(compact(source), "let x = 1u;\nfn f() {}\n");
    }
}
