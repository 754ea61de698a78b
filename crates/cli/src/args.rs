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
    /// Measure this GPU's read bandwidth, cost per dispatch and completion latency.
    Probe(ProbeArgs),
    /// The decode ceiling a device's bandwidth and compute set for a model (no model file needed).
    Roofline(RooflineArgs),
    /// How long an agent loop of N model calls takes at a given decode speed.
    Agent(AgentArgs),
    /// Split a text into the model's tokens (ids and pieces), as generate would feed it.
    Tokenize(TokenizeArgs),
    /// Decode to the context limit (or --tokens) and report memory as it goes: resident memory
    /// and GPU buffers must stay flat after warm-up.
    Soak(SoakArgs),
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
    /// GPU decode steps a submit: `auto` (from the measured round trip and step time), a
    /// number up to 64, or 0 for one step a submit with each token read back. Greedy decoding
    /// chains; sampled decoding and the CPU engine run a step at a time.
    #[arg(long, default_value = "auto", value_parser = tokscope_gpu::decode::Chain::parse)]
    pub chain: tokscope_gpu::decode::Chain,
}

#[derive(Clone, Copy, ValueEnum, PartialEq, Eq, Debug)]
pub enum Sweep {
    /// Q4_0, Q4_1, Q8_0, F16, F32: tok/s against bytes per token.
    Precision,
    /// B = 1, 2, 4, 8, 16: per-user and aggregate tok/s.
    Batch,
}

#[derive(clap::Args)]
pub struct InspectArgs {
    pub file: PathBuf,
    #[arg(long)]
    pub json: bool,
}

#[derive(clap::Args)]
pub struct SoakArgs {
    #[arg(long)]
    pub model: PathBuf,
    #[arg(long, default_value = "The history of the printing press")]
    pub prompt: String,
    /// Tokens to decode (EOS ignored); fewer when the model's context fills first.
    #[arg(long, default_value_t = 4096)]
    pub tokens: usize,
    /// A memory sample every this many tokens; the first is the warm-up point.
    #[arg(long, default_value_t = 256)]
    pub every: usize,
    #[arg(long, value_enum, default_value_t = Backend::Cpu)]
    pub backend: Backend,
    #[arg(long)]
    pub json: bool,
}

#[derive(clap::Args)]
pub struct TokenizeArgs {
    #[arg(long)]
    pub model: PathBuf,
    /// The text (special tokens such as <|im_start|> are parsed).
    pub text: String,
    /// Wrap the text in the model's chat template as one user turn.
    #[arg(long)]
    pub chat: bool,
    /// Without the BOS token the model's flags would add.
    #[arg(long)]
    pub no_bos: bool,
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
    /// Measure a table instead: the same weights at every precision of the dial, or every batch.
    #[arg(long, value_enum)]
    pub sweep: Option<Sweep>,
    /// GPU decode steps a submit: `auto` (from the measured round trip and step time), a
    /// number up to 64, or 0 for one step a submit with each token read back. Greedy decoding
    /// chains; sampled decoding and the CPU engine run a step at a time.
    #[arg(long, default_value = "auto", value_parser = tokscope_gpu::decode::Chain::parse)]
    pub chain: tokscope_gpu::decode::Chain,
    #[arg(long)]
    pub json: bool,
}

#[derive(clap::Args)]
#[command(allow_negative_numbers = true)]
pub struct ProbeArgs {
    /// Timed pairs of submits per figure (a short and a long one; the median is reported).
    #[arg(long, default_value_t = 5)]
    pub runs: usize,
    /// Learn of each completion only at the next tick of a timer this long after the submit,
    /// as Firefox's WebGPU does (100): the figures should not move.
    #[arg(long, value_name = "MS")]
    pub tick_ms: Option<f64>,
    #[arg(long)]
    pub json: bool,
}

#[derive(clap::Args)]
#[command(allow_negative_numbers = true)]
pub struct RooflineArgs {
    /// Start from a model preset (see --list); explicit flags override its figures.
    #[arg(long)]
    pub model: Option<String>,
    /// Start from a device preset (peak figures, see --list).
    #[arg(long)]
    pub device: Option<String>,
    /// List the presets and exit.
    #[arg(long)]
    pub list: bool,
    /// Active parameters: 8B, 135M, 8.03e9 (a mixture of experts' active share).
    #[arg(long)]
    pub params: Option<String>,
    /// Bits per weight, scales included (Q4_0 4.5, Q4_1 5, Q8_0 8.5, F16 16).
    #[arg(long)]
    pub bits: Option<f64>,
    /// Memory bandwidth, GB/s (10^9 bytes per second).
    #[arg(long = "bandwidth-gbs")]
    pub bandwidth_gbs: Option<f64>,
    /// Peak compute, TFLOP/s (none: no compute roof).
    #[arg(long)]
    pub tflops: Option<f64>,
    /// Sequences decoded together.
    #[arg(long, default_value_t = 1)]
    pub batch: u32,
    /// KV cache: layers (with --kv-heads, --head-dim and --context).
    #[arg(long)]
    pub layers: Option<u32>,
    #[arg(long)]
    pub kv_heads: Option<u32>,
    #[arg(long)]
    pub head_dim: Option<u32>,
    /// Tokens in the KV cache.
    #[arg(long)]
    pub context: Option<u64>,
    /// Bits per cached element.
    #[arg(long, default_value_t = 16.0)]
    pub kv_bits: f64,
    /// Fixed cost per step, milliseconds (dispatches, synchronisation).
    #[arg(long, default_value_t = 0.0)]
    pub overhead_ms: f64,
    /// A measured per-user decode rate, for its MBU against this bandwidth.
    #[arg(long)]
    pub measured_tok_s: Option<f64>,
    #[arg(long)]
    pub json: bool,
}

#[derive(Clone, Copy, ValueEnum, PartialEq, Eq, Debug)]
pub enum OnOff {
    On,
    Off,
}

#[derive(clap::Args)]
#[command(allow_negative_numbers = true)]
pub struct AgentArgs {
    /// Model calls in the loop.
    #[arg(long)]
    pub steps: u32,
    /// Visible tokens each step writes.
    #[arg(long)]
    pub output_tokens: u64,
    /// Decode rate, tokens per second.
    #[arg(long = "tok-s")]
    pub tok_s: f64,
    /// Hidden reasoning tokens each step decodes.
    #[arg(long, default_value_t = 0)]
    pub reasoning_tokens: u64,
    /// The first call's prompt tokens.
    #[arg(long, default_value_t = 0)]
    pub prompt_tokens: u64,
    /// Tokens each tool result adds to the context.
    #[arg(long, default_value_t = 0)]
    pub tool_tokens: u64,
    /// Prompt-processing rate, tokens per second (left out: no prefill time).
    #[arg(long = "prefill-tok-s")]
    pub prefill_tok_s: Option<f64>,
    /// With a prefix cache only new tokens are prefilled each call; without, the whole context.
    #[arg(long, value_enum, default_value_t = OnOff::On)]
    pub prefix_cache: OnOff,
    /// Fixed wait for each call's first token (network, queue), seconds.
    #[arg(long = "ttft-s", default_value_t = 0.0)]
    pub ttft_s: f64,
    /// Tool latency after every step but the last, seconds.
    #[arg(long = "tool-s", default_value_t = 0.0)]
    pub tool_s: f64,
    #[arg(long)]
    pub json: bool,
}
