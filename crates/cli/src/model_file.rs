//! Opening a model file: memory-mapped (an 8B model is not read into RAM), with messages that
//! name the file.

use std::path::Path;
use std::sync::Arc;
use tokscope_core::gguf::Gguf;
use tokscope_core::model::Model;
use tokscope_core::tokenizer::Tokenizer;

pub enum FileBytes {
    Mapped(memmap2::Mmap),
    /// Made in memory (the precision sweep's re-encoded models).
    Owned(Vec<u8>),
    Empty,
}

impl AsRef<[u8]> for FileBytes {
    fn as_ref(&self) -> &[u8] {
        match self {
            FileBytes::Mapped(m) => m,
            FileBytes::Owned(v) => v,
            FileBytes::Empty => &[],
        }
    }
}

pub fn open(path: &Path) -> Result<Gguf<FileBytes>, String> {
    let shown = path.display();
    let file = std::fs::File::open(path).map_err(|e| format!("cannot open {shown}: {e}"))?;
    let len = file.metadata().map_err(|e| format!("cannot read {shown}: {e}"))?.len();
    if file.metadata().is_ok_and(|m| m.is_dir()) {
        return Err(format!("{shown} is a directory, not a GGUF file"));
    }
    let bytes = if len == 0 {
        FileBytes::Empty
    } else {
        // SAFETY: the map is read-only; a file changed underneath us while running is the same
        // hazard every mmap-based loader (llama.cpp included) accepts.
        FileBytes::Mapped(unsafe { memmap2::Mmap::map(&file) }.map_err(|e| format!("cannot map {shown}: {e}"))?)
    };
    Gguf::parse(bytes).map_err(|e| format!("{shown}: {e}"))
}

pub struct Loaded {
    pub model: Arc<Model<FileBytes>>,
    pub tokenizer: Tokenizer,
}

pub fn load(path: &Path) -> Result<Loaded, String> {
    let gguf = open(path)?;
    let shown = path.display();
    let tokenizer = Tokenizer::from_gguf(&gguf).map_err(|e| format!("{shown}: {e}"))?;
    let model = Model::from_gguf(gguf).map_err(|e| format!("{shown}: {e}"))?;
    Ok(Loaded {
        model: Arc::new(model),
        tokenizer,
    })
}
