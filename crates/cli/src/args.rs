//! Command-line arguments.

use clap::{Parser, Subcommand, ValueEnum};
use std::path::PathBuf;

#[derive(Parser)]
#[command(
    name = "tokscope",
    version,
    about = "Run a quantized llama-family GGUF and measure why decode speed tracks memory bandwidth"
)]
pub struct Cli {
    /// Worker threads for the CPU backend (default: all cores).
    #[arg(long, global = true)]
    pub threads: Option<usize>,
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Subcommand)]
pub enum Command {
    /// Generate text; only the text goes to stdout, timings go to stderr.
    Generate(GenerateArgs),
    /// Describe a GGUF: architecture, hyperparameters, quantization mix, bytes per token.
    Inspect(InspectArgs),
    /// Measure decode and prefill speed, bytes per token and effective bandwidth.
    Bench(BenchArgs),
    /// Measure this GPU's read bandwidth, cost per dispatch and submit round trip.
    Probe(ProbeArgs),
}

#[derive(Clone, Copy, ValueEnum, PartialEq, Eq, Debug)]
pub enum Backend {
    Cpu,
    /// wgpu (Vulkan/Metal/DX12/WebGPU): one compute pass and one submit per token.
    Gpu,
}

#[derive(clap::Args)]
pub struct GenerateArgs {
    #[arg(long)]
    pub model: PathBuf,
    #[arg(long)]
    pub prompt: String,
    /// Wrap the prompt in the model's chat template as one user turn.
    #[arg(long)]
    pub chat: bool,
    #[arg(long, default_value_t = 128)]
    pub max_tokens: usize,
    /// 0 = greedy.
    #[arg(long, default_value_t = 0.0)]
    pub temperature: f32,
    /// 0 = no top-k cut.
    #[arg(long, default_value_t = 40)]
    pub top_k: usize,
    #[arg(long, default_value_t = 0.95)]
    pub top_p: f32,
    #[arg(long, default_value_t = 0)]
    pub seed: u64,
    /// KV-cache capacity in tokens (default: prompt + max tokens, at most the model's context).
    #[arg(long)]
    pub context: Option<usize>,
    /// Keep generating past end-of-turn tokens (for fixed-length measurements).
    #[arg(long)]
    pub ignore_eos: bool,
    #[arg(long, value_enum, default_value_t = Backend::Cpu)]
    pub backend: Backend,
}

#[derive(clap::Args)]
pub struct InspectArgs {
    pub file: PathBuf,
    #[arg(long)]
    pub json: bool,
}

#[derive(clap::Args)]
pub struct BenchArgs {
    #[arg(long)]
    pub model: PathBuf,
    #[arg(long, value_enum, default_value_t = Backend::Cpu)]
    pub backend: Backend,
    /// Tokens decoded per run.
    #[arg(long, default_value_t = 128)]
    pub tokens: usize,
    /// Timed runs (the median is reported; at least 3).
    #[arg(long, default_value_t = 5)]
    pub runs: usize,
    /// Prompt tokens for the prefill measurement.
    #[arg(long, default_value_t = 128)]
    pub prompt_tokens: usize,
    /// Sequences decoded together (1 to 16).
    #[arg(long, default_value_t = 1)]
    pub batch: usize,
    #[arg(long)]
    pub json: bool,
}

#[derive(clap::Args)]
pub struct ProbeArgs {
    /// Timed runs per figure (the median is reported; at least 5).
    #[arg(long, default_value_t = 7)]
    pub runs: usize,
    #[arg(long)]
    pub json: bool,
}
