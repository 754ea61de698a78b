//! The worker's state and its one sequential loop: a loaded model with its engine, and what
//! each message does to it. The model's bytes stay here, so a lost GPU device is recovered by
//! re-uploading them, without a download or a page reload.

use super::Job;
use super::cache;
use super::fetch::{self, Progress};
use super::js::{describe, now_s, post, yield_now};
use super::trial;
use crate::protocol::{
    BackendChoice, BackendInfo, FromWorker, GenerateRequest, MemoryReport, ModelInfo, ModelSource, Phase, ProbeReport,
    Request, StopReason, ToWorker, TokenView,
};
use futures_channel::mpsc::UnboundedSender;
use std::cell::Cell;
use std::rc::Rc;
use std::sync::Arc;
use tokscope_core::cpu::PREFILL_CHUNK;
use tokscope_core::engine_trial::EngineTrial;
use tokscope_core::gguf::Gguf;
use tokscope_core::model::Model;
use tokscope_core::prompt::{chat_template, prompt_tokens};
use tokscope_core::quant::GgmlType;
use tokscope_core::requant::{DIAL, encoded_len, requantize};
use tokscope_core::sampling::Sampler;
use tokscope_core::text_stats::{TextStats, WordCounter};
use tokscope_core::tokenizer::Tokenizer;
use tokscope_gpu::batch::Batch;
use tokscope_gpu::decode::Decode;
use tokscope_gpu::runner::Runner;
use tokscope_gpu::{GpuContext, GpuError};
use wasm_bindgen::JsCast;

/// The context the page's engine reserves: the default model allows 8,192 tokens, whose f32
/// KV cache (377 MB) is more than a browser tab should take for a playground.
const MAX_CONTEXT: usize = 2048;

/// Pairs of submits per probe figure: three medians a few seconds where completions wait on a
/// 100 ms tick (each long submit then takes ≈ 2 s), well under a second elsewhere.
const PROBE_RUNS: usize = 3;

/// The largest re-encoded model the precision dial builds in a tab (the bytes live in the
/// worker's memory, and once more on the GPU).
const DIAL_BUDGET: u64 = 768_000_000;

struct Loaded {
    model: Arc<Model<Vec<u8>>>,
    /// The model as its file encodes it, while `model` is a re-encoding of it (precision dial).
    original: Option<Arc<Model<Vec<u8>>>>,
    tokenizer: Tokenizer,
    runner: Runner<Vec<u8>>,
    info: ModelInfo,
}

pub struct Worker {
    jobs: UnboundedSender<Job>,
    stop: Rc<Cell<bool>>,
    loaded: Option<Loaded>,
    /// The last vocabulary read from a GGUF header for the token view, by URL (the page asks
    /// again for each text).
    vocab: Option<Vocab>,
    /// Bumped whenever a GPU engine is replaced, so a late device-lost callback for an old one
    /// is ignored.
    generation: u64,
    /// The next recovery from a lost device finds no GPU (the "no GPU after" simulation): it
    /// lands on the CPU engine, as when a device is lost for good.
    no_gpu_after_loss: bool,
    /// Whether a WebGPU engine may nudge the queue (the last Load's `nudge`).
    nudge: bool,
}

impl Worker {
    pub fn new(jobs: UnboundedSender<Job>, stop: Rc<Cell<bool>>) -> Self {
        Self {
            jobs,
            stop,
            loaded: None,
            vocab: None,
            generation: 0,
            no_gpu_after_loss: false,
            nudge: true,
        }
    }

    pub async fn handle(&mut self, job: Job) {
        let to = match &job {
            Job::Message(m, _) => m.request(),
            Job::DeviceLost { .. } => Request::Recover,
        };
        let r = match job {
            Job::Message(ToWorker::Load { source, backend, nudge }, file) => {
                self.nudge = nudge;
                self.load(source, backend, file).await
            }
            Job::Message(ToWorker::Generate(req), _) => self.generate(req).await,
            Job::Message(ToWorker::ListCache, _) => list_cache().await,
            Job::Message(ToWorker::Forget { key }, _) => match cache::forget(key.as_deref()).await {
                Ok(()) => list_cache().await,
                Err(e) => Err(e),
            },
            Job::Message(ToWorker::LoseDevice { gpu_after }, _) => self.lose_device(gpu_after),
            Job::Message(ToWorker::Probe, _) => self.probe().await,
            Job::Message(ToWorker::BatchDial { batches, tokens }, _) => self.batch_dial(&batches, tokens).await,
            Job::Message(ToWorker::Requantize { precision }, _) => self.requantize(precision).await,
            Job::Message(ToWorker::Tokenize { text, model }, _) => self.tokenize(text, model).await,
            Job::Message(ToWorker::Stop, _) => Ok(()),
            Job::DeviceLost { generation, message } if generation == self.generation => self.recover(message).await,
            Job::DeviceLost { .. } => Ok(()),
        };
        if let Err(message) = r {
            post(&FromWorker::Error { message, to });
        }
    }

    async fn load(
        &mut self,
        source: ModelSource,
        choice: BackendChoice,
        file: Option<web_sys::File>,
    ) -> Result<(), String> {
        self.loaded = None;
        self.generation += 1;
        let (name, bytes) = match &source {
            ModelSource::Url(url) => (
                url.rsplit('/').next().unwrap_or(url).to_string(),
                fetch_cached(url).await?,
            ),
            ModelSource::File { name } => {
                let file = file.ok_or("the picked file did not reach the worker")?;
                (name.clone(), fetch::read_file(&file).await?)
            }
            ModelSource::Synthetic { shape, ty } => synthetic(shape, ty)?,
        };
        Progress::new(Phase::Parse, None).report(0, true);
        let file_bytes = bytes.len() as u64;
        let gguf = Gguf::parse(bytes).map_err(|e| format!("{name}: {e}"))?;
        let title = gguf.opt_str("general.name").ok().flatten().unwrap_or(&name).to_string();
        let architecture = gguf
            .opt_str("general.architecture")
            .ok()
            .flatten()
            .unwrap_or("?")
            .to_string();
        let parameters = gguf.tensors().iter().map(|t| t.n_elements()).sum();
        let model = Arc::new(Model::from_gguf(gguf).map_err(|e| format!("{name}: {e}"))?);
        let context = model.config.context_length.min(MAX_CONTEXT);
        let (runner, backend) = self.engine(&model, context, choice).await?;
        // After the engine: its KV cache then takes the place the previous model's left, whole,
        // before the tokenizer's many small allocations can split it (built first, they made
        // the first reload grow the wasm memory by one KV vector, 47 MB for the default model).
        let tokenizer = Tokenizer::from_gguf(&model.gguf).map_err(|e| format!("{name}: {e}"))?;
        let info = ModelInfo {
            name: title,
            architecture,
            parameters,
            file_bytes,
            bytes_per_token: model.bytes_per_token(0, runner.kv_value_bytes()),
            weight_bytes: model.desc.weight_bytes_per_token(),
            context,
            layers: model.config.n_layers,
            kv_heads: model.config.n_kv_heads,
            head_dim: model.config.head_dim,
            kv_bits: runner.kv_value_bytes() as u32 * 8,
            precision: None,
            backend,
        };
        post(&FromWorker::Ready(info.clone()));
        post_memory(&runner);
        self.loaded = Some(Loaded {
            model,
            original: None,
            tokenizer,
            runner,
            info,
        });
        Ok(())
    }

    /// The engine asked for. `auto`: where WebGPU can run the model, both engines decode the
    /// same few steps and the faster is kept (tokscope-core's `engine_trial`: which one wins
    /// depends on the browser as much as the adapter); elsewhere the CPU engine, with the reason.
    async fn engine(
        &self,
        model: &Arc<Model<Vec<u8>>>,
        context: usize,
        choice: BackendChoice,
    ) -> Result<(Runner<Vec<u8>>, BackendInfo), String> {
        let reason = match choice {
            BackendChoice::Cpu => "the CPU engine was chosen".to_string(),
            BackendChoice::Gpu => match self.gpu_engine(model, context).await {
                Ok(ok) => return Ok(ok),
                Err(e) => e,
            },
            BackendChoice::Auto => match self.gpu_engine(model, context).await {
                Ok((mut gpu, mut info)) => {
                    Progress::new(Phase::Trial, None).report(0, true);
                    match trial::run(&mut gpu, model, context).await {
                        Ok((trial, _)) if trial.use_gpu() => {
                            info.trial = Some(trial);
                            return Ok((gpu, info));
                        }
                        // The GPU engine's buffers go with it; its device too, once unreferenced.
                        Ok((trial, cpu)) => return Ok((cpu, cpu_info(trial.describe(), Some(trial)))),
                        Err(e) => format!("timing WebGPU against the CPU engine failed: {e}"),
                    }
                }
                Err(e) => e,
            },
        };
        let runner = Runner::cpu(model.clone(), context).map_err(|e| e.to_string())?;
        Ok((runner, cpu_info(reason, None)))
    }

    // GpuEngine shares its context through an Arc; wgpu's wasm types are not Send (one thread).
    #[allow(clippy::arc_with_non_send_sync)]
    async fn gpu_engine(
        &self,
        model: &Arc<Model<Vec<u8>>>,
        context: usize,
    ) -> Result<(Runner<Vec<u8>>, BackendInfo), String> {
        if !super::js::has_webgpu_api() {
            return Err(super::js::without_webgpu());
        }
        let ctx = match GpuContext::new().await {
            Ok(ctx) => ctx,
            Err(GpuError::NoAdapter(_)) => return Err(super::js::without_webgpu()),
            Err(e) => return Err(e.to_string()),
        };
        let (jobs, generation) = (self.jobs.clone(), self.generation);
        ctx.device.set_device_lost_callback(move |reason, message| {
            let _ = jobs.unbounded_send(Job::DeviceLost {
                generation,
                message: format!("{reason:?}: {message}"),
            });
        });
        // How soon completions reach the page, and the nudge where it pays (Firefox's 100 ms
        // tick): measured once per device, before the engine's first read.
        let completion = tokscope_gpu::completion::settle(&ctx, &now_s, self.nudge)
            .await
            .map_err(|e| e.to_string())?;
        let ctx = Arc::new(ctx);
        let total = model.gguf.file_len();
        let mut progress = Progress::new(Phase::Upload, Some(total));
        let runner = ctx
            .guarded(|| {
                Runner::gpu(ctx.clone(), model.clone(), context, |done, _| {
                    progress.report(done, false)
                })
            })
            .await
            .map_err(|e| e.to_string())?;
        progress.report(total, true);
        let name = ctx.summary().name;
        let words = super::js::adapter_words().await.unwrap_or_default();
        let label = match (words.is_empty(), name.is_empty() || words.contains(&name)) {
            (true, true) => "WebGPU".to_string(),
            (false, true) => format!("WebGPU: {words}"),
            (true, false) => format!("WebGPU: {name}"),
            (false, false) => format!("WebGPU: {words} {name}"),
        };
        let dispatches_per_token = match &runner {
            Runner::Gpu(g) => Some(g.dispatches_per_token() as u32),
            Runner::Cpu { .. } => None,
        };
        Ok((
            runner,
            BackendInfo {
                gpu: true,
                label,
                fallback_reason: None,
                dispatches_per_token,
                completion: Some(completion),
                kernels: Some(ctx.kernels_words()),
                trial: None,
            },
        ))
    }

    /// Re-encodes the loaded model's matrices at `precision` (from the file's own encoding,
    /// never from a previous re-encoding), or goes back to the file's with `None`, and rebuilds
    /// the engine on the same backend.
    async fn requantize(&mut self, precision: Option<String>) -> Result<(), String> {
        let loaded = self.loaded.as_ref().ok_or("no model is loaded yet")?;
        let original = loaded.original.clone().unwrap_or_else(|| loaded.model.clone());
        let model = match &precision {
            None => original.clone(),
            Some(name) => {
                let ty = GgmlType::from_name(name)
                    .filter(|t| DIAL.contains(t))
                    .ok_or_else(|| format!("{name:?} is not on the precision dial"))?;
                let need = encoded_len(&original.gguf, ty);
                if need > DIAL_BUDGET {
                    return Err(format!(
                        "{ty} would take {:.0} MB, more than this page's budget of {:.0} MB for a re-encoded model",
                        need as f64 / 1e6,
                        DIAL_BUDGET as f64 / 1e6
                    ));
                }
                let mut progress = Progress::new(Phase::Encode, Some(original.gguf.tensors().len() as u64));
                let bytes = requantize(&original.gguf, ty, |done, _| progress.report(done as u64, false))
                    .map_err(|e| e.to_string())?;
                let gguf = Gguf::parse(bytes).map_err(|e| format!("the {ty} re-encoding: {e}"))?;
                Arc::new(Model::from_gguf(gguf).map_err(|e| format!("the {ty} re-encoding: {e}"))?)
            }
        };
        let choice = match loaded.info.backend.gpu {
            true => BackendChoice::Gpu,
            false => BackendChoice::Cpu,
        };
        let context = loaded.info.context;
        let was_gpu = loaded.info.backend.gpu;
        self.generation += 1; // the old engine's device-lost callback no longer counts
        let built = match self.engine(&model, context, choice).await {
            // One dial, one engine: a precision the GPU refuses is not measured on the CPU.
            Ok((_, backend)) if was_gpu && !backend.gpu => {
                let name = precision.as_deref().unwrap_or("the file's encoding");
                Err(format!(
                    "{name} does not run on this GPU: {}",
                    backend.fallback_reason.unwrap_or_default()
                ))
            }
            other => other,
        };
        let (runner, backend) = match built {
            Ok(ok) => ok,
            Err(e) => {
                self.generation -= 1; // the old engine stays, and so does its device-lost callback
                return Err(e);
            }
        };
        let loaded = self.loaded.as_mut().expect("still loaded");
        on_engine(&mut loaded.info, &model, &runner, backend);
        loaded.info.weight_bytes = model.desc.weight_bytes_per_token();
        loaded.info.precision = precision;
        loaded.original = (!Arc::ptr_eq(&model, &original)).then_some(original);
        loaded.model = model;
        loaded.runner = runner;
        post(&FromWorker::Ready(loaded.info.clone()));
        Ok(())
    }

    /// Batched decode on the loaded engine's backend (WebGPU or the CPU engine): B sequences
    /// after the same short prompt, `tokens` greedy steps, one read of the weights per step.
    /// On WebGPU each batch size is new sequence state over the loaded engine's weights (no
    /// second upload).
    async fn batch_dial(&mut self, batches: &[usize], tokens: usize) -> Result<(), String> {
        let loaded = self.loaded.as_ref().ok_or("no model is loaded yet")?;
        let model = loaded.model.clone();
        let prompt = prompt_tokens(&loaded.tokenizer, None, crate::speed::PROMPT).map_err(|e| e.to_string())?;
        let context = prompt.len() + tokens + 1;
        for &b in batches {
            let mut e = match &loaded.runner {
                Runner::Gpu(g) => g.ctx.guarded(|| Batch::gpu_sharing(g, context, b)).await,
                Runner::Cpu { .. } => Batch::cpu(model.clone(), context, b),
            }
            .map_err(|e| e.to_string())?;
            let mut next = Vec::with_capacity(b);
            for s in 0..b {
                e.begin_prefill(s, &prompt).map_err(|e| e.to_string())?;
                next.extend(e.finish_async().await.map_err(|e| e.to_string())?);
            }
            let start = now_s();
            for _ in 0..tokens {
                e.begin_step(&next).map_err(|e| e.to_string())?;
                next = e.finish_async().await.map_err(|e| e.to_string())?;
                yield_now().await; // let a Stop or the page's messages through
            }
            let per_user_tok_s = tokens as f64 / (now_s() - start).max(1e-9);
            post(&FromWorker::BatchPoint {
                batch: b,
                per_user_tok_s,
                aggregate_tok_s: per_user_tok_s * b as f64,
            });
        }
        post(&FromWorker::BatchDone);
        Ok(())
    }

    async fn probe(&mut self) -> Result<(), String> {
        match self.loaded.as_ref().map(|l| &l.runner) {
            Some(Runner::Gpu(e)) => {
                let r = tokscope_gpu::probe::run_async(&e.ctx, PROBE_RUNS, &now_s)
                    .await
                    .map_err(|e| format!("the bandwidth probe failed: {e}"))?;
                post(&FromWorker::Probe(ProbeReport {
                    read_gb_s: r.read_gb_s,
                    dispatch_us: r.dispatch_us,
                    latency: r.latency,
                    gpu_read_gb_s: r.gpu_clock.map(|g| g.read_gb_s),
                    gpu_dispatch_us: r.gpu_clock.map(|g| g.dispatch_us),
                    unnudged: self
                        .loaded
                        .as_ref()
                        .and_then(|l| l.info.backend.completion)
                        .filter(|c| c.nudging)
                        .map(|c| c.plain),
                }));
                Ok(())
            }
            Some(_) => Err("the bandwidth probe needs WebGPU; this page runs the CPU engine".into()),
            None => Err("no model is loaded yet".into()),
        }
    }

    fn lose_device(&mut self, gpu_after: bool) -> Result<(), String> {
        match self.loaded.as_ref().map(|l| &l.runner) {
            Some(Runner::Gpu(e)) => {
                self.no_gpu_after_loss = !gpu_after;
                e.ctx.device.destroy();
                Ok(())
            }
            _ => Err("no GPU device is in use".into()),
        }
    }

    async fn recover(&mut self, message: String) -> Result<(), String> {
        let Some(loaded) = self.loaded.as_mut() else {
            return Ok(());
        };
        if !loaded.info.backend.gpu {
            return Ok(());
        }
        post(&FromWorker::DeviceLost { message });
        self.generation += 1;
        let model = loaded.model.clone();
        let context = loaded.info.context;
        // It was on a GPU: stay there, software adapter or not, unless no GPU is left.
        let choice = match std::mem::take(&mut self.no_gpu_after_loss) {
            true => BackendChoice::Cpu,
            false => BackendChoice::Gpu,
        };
        let (runner, mut backend) = self.engine(&model, context, choice).await?;
        if choice == BackendChoice::Cpu {
            backend.fallback_reason =
                Some("the GPU device was lost and no GPU was left to rebuild the engine on".into());
        }
        let loaded = self.loaded.as_mut().expect("still loaded");
        on_engine(&mut loaded.info, &model, &runner, backend);
        loaded.runner = runner;
        post(&FromWorker::Recovered(loaded.info.clone()));
        Ok(())
    }

    async fn generate(&mut self, req: GenerateRequest) -> Result<(), String> {
        self.stop.set(false);
        let loaded = self.loaded.as_mut().ok_or("no model is loaded yet")?;
        let gpu = loaded.info.backend.gpu;
        let mut sampler = Sampler::new(req.sampling).map_err(|e| e.to_string())?;
        let template = match req.chat {
            true => Some(chat_template(&loaded.model.gguf).map_err(|e| e.to_string())?),
            false => None,
        };
        let tokens = prompt_tokens(&loaded.tokenizer, template.as_ref(), &req.prompt).map_err(|e| e.to_string())?;
        let runner = &mut loaded.runner;
        runner.reset();
        let capacity = runner.fill().1;
        if tokens.len() >= capacity {
            return Err(format!(
                "the prompt is {} tokens; this context holds {capacity} including the reply: shorten it",
                tokens.len()
            ));
        }
        post(&FromWorker::Started {
            prompt_tokens: tokens.len(),
        });
        let start = now_s();
        // On the CPU engine the prompt runs a chunk at a time, with Stop looked for between
        // chunks (the engine's own chunks, so the result is the same bits as one call).
        let mut rest: &[u32] = &tokens;
        if !gpu {
            while rest.len() > PREFILL_CHUNK {
                let (part, after) = rest.split_at(PREFILL_CHUNK);
                if let Some(r) = runner.feed(part) {
                    r.map_err(|e| e.to_string())?;
                }
                rest = after;
                yield_now().await;
                if self.stop.get() {
                    post(&FromWorker::Done {
                        run: req.run,
                        generated: 0,
                        reason: StopReason::Stopped,
                        steps_per_submit: None,
                    });
                    return Ok(());
                }
            }
        }
        runner.begin_prefill(rest, &mut sampler).map_err(|e| e.to_string())?;
        let mut next = runner.finish_async(&mut sampler).await.map_err(|e| e.to_string())?;
        let ttft_s = now_s() - start;
        post(&FromWorker::FirstToken {
            ttft_s,
            prefill_tok_s: tokens.len() as f64 / ttft_s.max(1e-9),
        });
        let mut stream = loaded.tokenizer.stream();
        let mut words = WordCounter::default();
        let mut generated = 0;
        let mut seconds = None;
        // Greedy steps on WebGPU chain (tokscope-gpu's decode.rs): tokens arrive a chunk at a
        // time, each with its share of the chunk's time.
        let budget = req.max_tokens.saturating_sub(1).min(capacity - tokens.len());
        let mut decode =
            Decode::start(runner, &mut sampler, next, budget, req.chain, now_s()).map_err(|e| e.to_string())?;
        let reason = loop {
            if loaded.tokenizer.is_stop(next) && !req.ignore_eos {
                break StopReason::EndOfText;
            }
            generated += 1;
            let text = stream.step(next).map_err(|e| e.to_string())?.unwrap_or_default();
            let words = words.push(&text);
            post(&FromWorker::Token { text, seconds, words });
            if generated == req.max_tokens {
                break StopReason::MaxTokens;
            }
            if !gpu {
                yield_now().await; // the CPU step is synchronous: let a Stop message in
            }
            if self.stop.get() {
                break StopReason::Stopped;
            }
            if decode.full(runner) {
                break StopReason::ContextFull;
            }
            let (t, s) = decode
                .next(runner, &mut sampler, &now_s)
                .await
                .map_err(|e| e.to_string())?;
            (next, seconds) = (t, Some(s));
        };
        let steps_per_submit = decode
            .chained()
            .filter(|c| c.chunks > 0)
            .map(|c| c.steps_read as f64 / c.chunks as f64);
        decode.stop(runner);
        post(&FromWorker::Done {
            run: req.run,
            generated,
            reason,
            steps_per_submit,
        });
        post_memory(&loaded.runner);
        Ok(())
    }
}

/// A tokenizer read from the front of a GGUF, without its weights.
struct Vocab {
    url: String,
    name: String,
    tokenizer: Tokenizer,
    header_bytes: u64,
    file_bytes: Option<u64>,
}

/// The first range read for a vocabulary, doubled until the metadata is whole: the default
/// model's tokenizer keys end at 1.77 MB (one read), Gemma 3's (262,144 tokens) at 6.5 MB
/// (three: the browser's cache asks only for each longer range's new part).
const FIRST_HEADER_READ: u64 = 2 << 20;
/// Past this, a header is not a tokenizer the page should hold.
const MAX_HEADER_READ: u64 = 64 << 20;

impl Worker {
    /// Splits `text` with the loaded model's tokenizer, or with the one in `model`'s header.
    async fn tokenize(&mut self, text: String, model: Option<String>) -> Result<(), String> {
        let (tokenizer, name, header_bytes, file_bytes) = match (&model, &self.loaded) {
            (None, Some(l)) => (&l.tokenizer, l.info.name.clone(), None, Some(l.info.file_bytes)),
            (None, None) => return Err("the token view needs a model: load one first".into()),
            (Some(url), _) => {
                if self.vocab.as_ref().is_none_or(|v| &v.url != url) {
                    self.vocab = Some(read_vocab(url).await?);
                }
                let v = self.vocab.as_ref().expect("just read");
                (&v.tokenizer, v.name.clone(), Some(v.header_bytes), v.file_bytes)
            }
        };
        let ids = tokenizer
            .encode_with_bos(&text, tokenizer.add_bos)
            .map_err(|e| format!("could not tokenize the text: {e}"))?;
        post(&FromWorker::Tokens(TokenView {
            stats: TextStats::new(&text, ids.len()),
            pieces: tokenizer.pieces(&ids),
            text,
            tokenizer: name,
            header_bytes,
            file_bytes,
        }));
        Ok(())
    }
}

/// The tokenizer in the GGUF at `url`, read by growing range requests until its metadata is
/// whole (a server without ranges sends the file, which then serves whole).
async fn read_vocab(url: &str) -> Result<Vocab, String> {
    crate::protocol::check_model_setting(url)?;
    let mut len = FIRST_HEADER_READ;
    loop {
        let prefix = fetch::download_prefix(url, len).await?;
        let read = prefix.bytes.len() as u64;
        match Gguf::parse_metadata(prefix.bytes.as_slice()) {
            Ok(gguf) => {
                let name = url.rsplit('/').next().unwrap_or(url);
                let tokenizer = Tokenizer::from_gguf(&gguf).map_err(|e| format!("{name}: {e}"))?;
                return Ok(Vocab {
                    url: url.into(),
                    name: gguf.opt_str("general.name").ok().flatten().unwrap_or(name).to_string(),
                    tokenizer,
                    header_bytes: read,
                    file_bytes: prefix.file_bytes,
                });
            }
            Err(e) if e.wants_more_bytes() && !prefix.whole && len < MAX_HEADER_READ => len *= 2,
            Err(e) if e.wants_more_bytes() && !prefix.whole => {
                return Err(format!(
                    "{url}: the GGUF's metadata runs past its first {} MB: too large a vocabulary for the token view",
                    MAX_HEADER_READ >> 20
                ));
            }
            Err(e) => return Err(format!("{url}: {e}")),
        }
    }
}

/// Posts the worker's memory: its wasm memory's size and the GPU buffers `runner` made.
fn post_memory<B: AsRef<[u8]>>(runner: &Runner<B>) {
    let wasm_bytes = wasm_bindgen::memory()
        .unchecked_into::<js_sys::WebAssembly::Memory>()
        .buffer()
        .unchecked_into::<js_sys::ArrayBuffer>()
        .byte_length() as u64;
    let gpu = runner.gpu_buffers();
    post(&FromWorker::Memory(MemoryReport {
        wasm_bytes,
        gpu_buffers: gpu.map(|g| g.0),
        gpu_buffer_bytes: gpu.map(|g| g.1),
    }));
}

/// The model at `url`: from the cache when a complete copy is there, else downloaded (and
/// then cached; a cache failure is reported but does not stop the load).
async fn fetch_cached(url: &str) -> Result<Vec<u8>, String> {
    let href = super::js::scope().location().href();
    let absolute = web_sys::Url::new_with_base(url, &href)
        .map(|u| u.href())
        .map_err(|e| format!("{url:?} is not a valid URL: {}", describe(&e)))?;
    Progress::new(Phase::Cache, None).report(0, true);
    match cache::lookup(&absolute).await {
        Ok(Some(bytes)) => return Ok(bytes),
        Ok(None) => {}
        Err(e) => post(&FromWorker::CacheNote(format!("cache unavailable: {e}"))),
    }
    let bytes = fetch::download(&absolute).await?;
    if let Err(e) = cache::store(&absolute, &bytes).await {
        post(&FromWorker::CacheNote(format!("not cached: {e}")));
    }
    Ok(bytes)
}

async fn list_cache() -> Result<(), String> {
    let entries = cache::list().await?;
    post(&FromWorker::Cache {
        entries,
        note: cache::usage_note().await,
    });
    Ok(())
}

/// A random-weight model with a real one's shapes, made here (no download): its name and bytes.
fn synthetic(shape: &str, ty: &str) -> Result<(String, Vec<u8>), String> {
    let known = || tokscope_core::shaped::SHAPES.map(|s| s.id).join(", ");
    let spec = tokscope_core::shaped::ShapeSpec::by_id(shape)
        .ok_or_else(|| format!("no synthetic shape {shape:?} (known: {})", known()))?;
    let t = tokscope_core::quant::GgmlType::from_name(ty).ok_or_else(|| format!("{ty:?} is not a ggml type"))?;
    Progress::new(Phase::Parse, None).report(0, true);
    Ok((format!("synthetic {} {t}", spec.name), spec.build(t, 1)?))
}

/// The CPU engine's description, `reason` saying why it runs.
fn cpu_info(reason: String, trial: Option<EngineTrial>) -> BackendInfo {
    BackendInfo {
        gpu: false,
        label: "CPU (WASM)".into(),
        fallback_reason: Some(reason),
        dispatches_per_token: None,
        completion: None,
        kernels: None,
        trial,
    }
}

/// The figures of `info` that follow the engine now running `model`: its name, its KV cache's
/// bits (WebGPU's are 16, the CPU engine's 32) and so the bytes a token reads.
fn on_engine(info: &mut ModelInfo, model: &Model<Vec<u8>>, runner: &Runner<Vec<u8>>, backend: BackendInfo) {
    info.bytes_per_token = model.bytes_per_token(0, runner.kv_value_bytes());
    info.kv_bits = runner.kv_value_bytes() as u32 * 8;
    info.backend = backend;
}
