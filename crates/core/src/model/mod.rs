//! A llama-family model: the parsed file, its hyperparameters and the description of its
//! weights. Owns the bytes; engines borrow from it.

mod config;
mod desc;
mod error;

pub use config::{Family, LlamaConfig, SUPPORTED_ARCHITECTURES};
pub use desc::{LayerDesc, ModelDesc, Weight};
pub use error::ModelError;

use crate::gguf::Gguf;
use crate::quant::dequantize_row;

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

    /// A weight dequantized to f32 (norm weights, RoPE factors: small vectors read as floats).
    pub fn dequantized(&self, w: &Weight) -> Vec<f32> {
        let mut out = vec![0f32; w.rows * w.cols];
        dequantize_row(w.ty, self.data(w), &mut out).expect("weight types are validated at load");
        out
    }

    /// Writes token `token`'s embedding row into `out` (`d_model` floats). The caller has
    /// checked `token` against the vocabulary.
    pub fn embed(&self, token: u32, out: &mut [f32]) {
        let embd = &self.desc.token_embd;
        let rb = embd.row_bytes();
        let row = &self.data(embd)[token as usize * rb..][..rb];
        dequantize_row(embd.ty, row, out).expect("weight types are validated at load");
        let scale = self.config.embed_scale();
        if scale != 1.0 {
            out.iter_mut().for_each(|v| *v *= scale);
        }
    }

    /// RoPE inverse frequencies of layer `layer`, with Llama 3.1-style factors if present:
    /// both engines rotate by exactly these.
    pub fn rope_inv_freq(&self, layer: usize) -> Vec<f32> {
        let factors = self.desc.rope_freqs.as_ref().map(|w| self.dequantized(w));
        crate::cpu::ops::rope_inv_freq(self.config.rope_dim, self.config.rope_base(layer), factors.as_deref())
    }

    /// Bytes read from memory to decode the token at `position` (0-based): the weights once,
    /// plus the K and V of the `position + 1` cached tokens in every layer, at `kv_value_bytes`
    /// a value (the engine's cache: 4 on the CPU, 2 on the GPU).
    pub fn bytes_per_token(&self, position: usize, kv_value_bytes: u64) -> u64 {
        self.desc.weight_bytes_per_token() + (position as u64 + 1) * self.config.kv_bytes_per_token(kv_value_bytes)
    }
}
