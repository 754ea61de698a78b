//! A llama-family model: the parsed file, its hyperparameters and the description of its
//! weights. Owns the bytes; engines borrow from it.

mod config;
mod desc;
mod error;

pub use config::{LlamaConfig, SUPPORTED_ARCHITECTURES};
pub use desc::{LayerDesc, ModelDesc, Weight};
pub use error::ModelError;

use crate::gguf::Gguf;

pub struct Model<B> {
    pub gguf: Gguf<B>,
    pub config: LlamaConfig,
    pub desc: ModelDesc,
}

impl<B: AsRef<[u8]>> Model<B> {
    pub fn load(bytes: B) -> Result<Self, ModelError> {
        let gguf = Gguf::parse(bytes)?;
        Self::from_gguf(gguf)
    }

    pub fn from_gguf(gguf: Gguf<B>) -> Result<Self, ModelError> {
        let config = LlamaConfig::from_gguf(&gguf)?;
        let desc = ModelDesc::from_gguf(&gguf, &config)?;
        Ok(Self { gguf, config, desc })
    }

    /// The bytes of one weight.
    pub fn data(&self, w: &Weight) -> &[u8] {
        &self.gguf.bytes()[w.data.clone()]
    }

    /// Bytes read from memory to decode the token at `position` (0-based): the weights once,
    /// plus the f32 K and V of the `position + 1` cached tokens in every layer.
    pub fn bytes_per_token(&self, position: usize) -> u64 {
        self.desc.weight_bytes_per_token() + (position as u64 + 1) * self.config.kv_bytes_per_token_f32()
    }
}
