//! How the page's state moves: each start button's request, and each worker message. Every
//! finished run becomes one record (tokscope_core::record), made when its `Done` arrives and
//! credited to the request that `Done` answers; the panels read records, never the live signals
//! of some other run. While any run is in flight the other start buttons wait ([`State::busy`]).

use super::stages::{DialStage, InFlight, SpeedStage};
use super::{Loading, State, mark_first, page_now_s};
use crate::app::port::send;
use crate::browser::browser_name;
use crate::protocol::{FromWorker, GenerateRequest, ModelInfo, Request, StopReason, ToWorker};
use crate::speed::{DECODE_TOKENS, PROMPT, SpeedResult};
use leptos::prelude::*;
use tokscope_core::meter::DecodeMeter;
use tokscope_core::record::{RunContext, RunKind, RunRecord};
use tokscope_core::requant::DIAL;
use tokscope_core::sampling::SamplingParams;

/// Tokens decoded at each precision of the dial.
pub const DIAL_TOKENS: usize = 32;
/// The batch dial's batch sizes, and decode steps per size.
pub const BATCHES: [usize; 5] = [1, 2, 4, 8, 16];
pub const BATCH_TOKENS: usize = 16;

/// The engine and model a run is on now, for its record.
fn context(m: &ModelInfo) -> RunContext {
    RunContext {
        model: m.name.clone(),
        encoding: m.precision.clone(),
        engine: m.backend.label.clone(),
        gpu: m.backend.gpu,
        bytes_per_token: m.bytes_per_token,
        weight_bytes: m.weight_bytes,
        kv_bits: m.kv_bits,
    }
}

impl State {
    /// Why a run cannot start now, in words for a disabled button; `None` when one can.
    pub fn busy(&self) -> Option<String> {
        if self.model.with(Option::is_none) {
            return Some("waiting for the model to load".into());
        }
        let what = if self.dial.with(|d| d.active()) {
            "the precision dial"
        } else if self.batch.with(|b| b.running) {
            "the batch dial"
        } else if matches!(self.speed.get(), SpeedStage::Probing | SpeedStage::Decoding) {
            "the speed check"
        } else if let Some(f) = self.in_flight.get() {
            f.kind.what()
        } else {
            return None;
        };
        Some(format!("waiting: {what} is running"))
    }

    fn take_id(&self) -> u32 {
        let id = self.next_id.get_untracked();
        self.next_id.set(id + 1);
        id
    }

    /// Sends a generate request as a run of `kind`, clearing the live figures for it.
    pub fn start_run(&self, kind: RunKind, mut req: GenerateRequest) {
        let id = self.take_id();
        req.run = id;
        self.begin_run();
        self.steps_per_submit.set(None);
        self.in_flight.set(Some(InFlight { id, kind }));
        send(&ToWorker::Generate(req), None);
    }

    /// A measurement's decode: `tokens` greedy tokens from a fixed prompt, end-of-text ignored
    /// (the speed check and the precision dial).
    fn fixed_decode(&self, kind: RunKind, tokens: usize) {
        let req = GenerateRequest {
            prompt: PROMPT.into(),
            chat: false,
            sampling: SamplingParams {
                temperature: 0.0,
                ..Default::default()
            },
            max_tokens: tokens,
            ignore_eos: true,
            run: 0,
            chain: self.settings.with_untracked(|s| s.chain),
        };
        self.start_run(kind, req);
    }

    /// The speed check: the probe first where a GPU runs the model, else straight to decoding.
    pub fn start_speed_check(&self) {
        match self.model.get_untracked() {
            Some(m) if m.backend.gpu => {
                self.speed.set(SpeedStage::Probing);
                self.status.set("Speed check: measuring read bandwidth…".into());
                send(&ToWorker::Probe, None);
            }
            Some(_) => self.speed_decode(),
            None => self.speed.set(SpeedStage::Failed("no model is loaded yet".into())),
        }
    }

    fn speed_decode(&self) {
        self.speed.set(SpeedStage::Decoding);
        self.fixed_decode(RunKind::SpeedCheck, DECODE_TOKENS);
        self.status
            .set(format!("Speed check: decoding up to {DECODE_TOKENS} tokens…"));
    }

    /// The card of a finished speed check: its own record, and the probe where a GPU ran it.
    fn speed_card(&self, r: &RunRecord) -> SpeedStage {
        let Some(tok_s) = r.tok_s else {
            return SpeedStage::Failed("the decode produced no timed tokens".into());
        };
        let probe = self.probe.get_untracked().filter(|_| r.context.gpu);
        let ua = web_sys::window()
            .and_then(|w| w.navigator().user_agent().ok())
            .unwrap_or_default();
        SpeedStage::Done(Box::new(SpeedResult {
            adapter: r.context.engine.clone(),
            browser: browser_name(&ua),
            model: r.context.model.clone(),
            gb_s: probe.map(|p| p.read_gb_s),
            dispatch_us: probe.map(|p| p.dispatch_us),
            latency: probe.map(|p| p.latency),
            unnudged: probe.and_then(|p| p.unnudged),
            gpu_gb_s: probe.and_then(|p| p.gpu_read_gb_s),
            gpu_dispatch_us: probe.and_then(|p| p.gpu_dispatch_us),
            dispatches: self
                .model
                .get_untracked()
                .and_then(|m| m.backend.dispatches_per_token)
                .filter(|_| probe.is_some()),
            tok_s,
            tokens: r.tokens,
            bytes_per_token: r.context.bytes_per_token,
            steps_per_submit: self.steps_per_submit.get_untracked().filter(|_| probe.is_some()),
        }))
    }

    /// The precision dial from its first precision. Its ceiling curve uses the speed check's
    /// probe, when that has run (the dial runs no probe: on a CPU engine there is none).
    pub fn start_dial(&self) {
        self.dial.set(Default::default());
        self.dial_encode(0);
    }

    fn dial_encode(&self, i: usize) {
        self.dial.update(|d| d.stage = DialStage::Encoding(i));
        self.status
            .set(format!("Precision dial: re-encoding the weights as {}…", DIAL[i]));
        send(
            &ToWorker::Requantize {
                precision: Some(DIAL[i].name().into()),
            },
            None,
        );
    }

    fn dial_next(&self, i: usize) {
        match i + 1 < DIAL.len() {
            true => self.dial_encode(i + 1),
            false => {
                self.dial.update(|d| d.stage = DialStage::Restoring);
                send(&ToWorker::Requantize { precision: None }, None);
            }
        }
    }

    pub fn start_batch(&self) {
        self.batch.set(super::stages::BatchDial {
            running: true,
            id: self.take_id(),
            points: vec![],
        });
        self.status.set("Batch dial: decoding…".into());
        send(
            &ToWorker::BatchDial {
                batches: BATCHES.to_vec(),
                tokens: BATCH_TOKENS,
            },
            None,
        );
    }

    /// What belonged to the engine or model before: its runs, its probe, the panels' results
    /// ("not measured yet" again).
    fn forget_measurements(&self) {
        self.own_run.set(None);
        self.last_run.set(None);
        self.probe.set(None);
        self.speed.set(SpeedStage::Idle);
        self.dial.set(Default::default());
        self.batch.set(Default::default());
        self.meter.set(DecodeMeter::new());
        self.ttft_s.set(None);
        self.prefill_tok_s.set(None);
        self.prompt_tokens.set(None);
    }

    /// A model is ready: the dial's re-encoding (its next step), or a model newly loaded.
    fn on_ready(&self, info: ModelInfo) {
        self.loading.set(None);
        mark_first("__tokscope_ready_ms");
        self.status
            .set(format!("Ready: {} on {}.", info.name, info.backend.label));
        self.note_backend(&info);
        let stage = self.dial.get_untracked().stage;
        if !matches!(stage, DialStage::Encoding(_) | DialStage::Restoring) {
            self.forget_measurements();
        }
        self.model.set(Some(info));
        match stage {
            DialStage::Encoding(i) => {
                self.dial.update(|d| d.stage = DialStage::Decoding(i));
                let precision = DIAL[i].name().to_string();
                self.fixed_decode(RunKind::Dial { precision }, DIAL_TOKENS);
                self.status
                    .set(format!("Precision dial: decoding {DIAL_TOKENS} tokens at {}…", DIAL[i]));
            }
            DialStage::Restoring => self.dial.update(|d| d.stage = DialStage::Done),
            _ => {}
        }
    }

    /// A run ended: its record, credited to the request it answers.
    fn on_done(&self, run: u32, generated: usize, reason: StopReason) {
        let why = match reason {
            StopReason::EndOfText => "the model ended its text",
            StopReason::MaxTokens => "reached max tokens",
            StopReason::Stopped => "stopped",
            StopReason::ContextFull => "the context is full",
        };
        self.status.set(format!("Done: {generated} tokens ({why})."));
        let Some(f) = self.in_flight.get_untracked().filter(|f| f.id == run) else {
            return; // a run the page no longer waits for (its model was replaced)
        };
        self.in_flight.set(None);
        let Some(m) = self.model.get_untracked() else { return };
        let first = self.ttft_s.get_untracked().zip(self.prefill_tok_s.get_untracked());
        let record = self.meter.with_untracked(|meter| {
            RunRecord::new(
                run,
                f.kind.clone(),
                context(&m),
                meter,
                first,
                self.prompt_tokens.get_untracked(),
            )
        });
        self.last_run.set(Some(record.clone()));
        match f.kind {
            RunKind::Generate => self.own_run.set(Some(record)),
            RunKind::SpeedCheck => {
                self.speed.set(self.speed_card(&record));
                self.own_run.set(Some(record));
            }
            RunKind::Dial { .. } => {
                if let DialStage::Decoding(i) = self.dial.get_untracked().stage {
                    if record.tok_s.is_some() {
                        self.dial.update(|d| {
                            d.points.push(record);
                            d.points.sort_by_key(|p| p.context.bytes_per_token);
                        });
                    }
                    self.dial_next(i);
                }
            }
            RunKind::Batch { .. } => {}
        }
    }

    /// An error from the worker: the panel whose request it answers takes it.
    fn on_error(&self, message: String, to: Request) {
        if to == Request::Tokenize {
            // The token view's own: the page's model and run stay as they were.
            self.tokens.update(|t| {
                t.busy = false;
                t.error = Some(message);
            });
            return;
        }
        self.batch.update(|b| b.running = false);
        if matches!(self.speed.get_untracked(), SpeedStage::Probing | SpeedStage::Decoding) {
            self.speed.set(SpeedStage::Failed(message.clone()));
        }
        // A precision that failed (too big for this page or device) is skipped, not the dial.
        match self.dial.get_untracked().stage {
            DialStage::Encoding(i) | DialStage::Decoding(i) => {
                self.dial.update(|d| d.skipped.push(format!("{}: {message}", DIAL[i])));
                self.in_flight.set(None);
                self.loading.set(None);
                self.dial_next(i);
            }
            DialStage::Restoring => {
                self.dial.update(|d| {
                    d.skipped.push(format!("restoring the file's encoding: {message}"));
                    d.stage = DialStage::Done;
                });
                self.fail(message);
            }
            _ => self.fail(message),
        }
    }

    pub fn apply(&self, m: FromWorker) {
        match m {
            FromWorker::Alive => {
                self.alive.set(true);
                self.status.set("Engine started.".into());
            }
            FromWorker::Progress { phase, done, total } => {
                mark_first("__tokscope_load_start_ms");
                let name = format!("{phase:?}");
                if !self.phases_seen.get_untracked().split(' ').any(|p| p == name) {
                    self.phases_seen.update(|s| {
                        s.push(' ');
                        s.push_str(&name)
                    });
                }
                let now = page_now_s();
                let since = match self.loading.get_untracked() {
                    Some(l) if l.phase == phase => l.since,
                    _ => now,
                };
                self.loading.set(Some(Loading {
                    phase,
                    done,
                    total,
                    since,
                    now,
                }));
                self.status.set(format!("{}…", phase.name()));
            }
            FromWorker::Ready(info) => self.on_ready(info),
            FromWorker::Started { prompt_tokens } => {
                self.prompt_tokens.set(Some(prompt_tokens));
                self.status.set(format!("Prefilling {prompt_tokens} prompt tokens…"));
            }
            FromWorker::FirstToken { ttft_s, prefill_tok_s } => {
                self.ttft_s.set(Some(ttft_s));
                self.prefill_tok_s.set(Some(prefill_tok_s));
                self.status.set("Generating…".into());
            }
            FromWorker::Token { text, seconds, words } => {
                self.output.update(|o| o.push_str(&text));
                self.output_words.set(words);
                self.generated.update(|g| *g += 1);
                if let Some(s) = seconds {
                    let up = |m: &DecodeMeter| crate::speed::time_is_up(m.count(), m.total_s());
                    let was_up = self.meter.with_untracked(up);
                    self.meter.update(|m| m.push(s));
                    // The speed check stops early on a slow device (once, when time runs out).
                    if self.speed.get_untracked() == SpeedStage::Decoding && !was_up && self.meter.with_untracked(up) {
                        send(&ToWorker::Stop, None);
                    }
                }
            }
            FromWorker::Done {
                run,
                generated,
                reason,
                steps_per_submit,
            } => {
                self.steps_per_submit.set(steps_per_submit);
                self.on_done(run, generated, reason)
            }
            FromWorker::Cache { entries, note } => {
                self.cache.set(entries);
                self.cache_note.set(note);
            }
            FromWorker::CacheNote(note) => self.cache_warning.set(Some(note)),
            FromWorker::DeviceLost { message } => {
                self.in_flight.set(None);
                self.notice.set(Some(format!(
                    "The GPU device was lost ({message}). Recovering the engine…"
                )));
                self.status.set("GPU device lost: recovering…".into());
            }
            FromWorker::Recovered(info) => {
                self.notice.set(Some(format!(
                    "Recovered after the GPU device was lost: running on {}.",
                    info.backend.label
                )));
                self.status.set(format!("Ready again on {}.", info.backend.label));
                // Another engine: nothing measured on the lost one holds for it.
                self.forget_measurements();
                self.model.set(Some(info));
            }
            FromWorker::Probe(report) => {
                self.probe.set(Some(report));
                if self.speed.get_untracked() == SpeedStage::Probing {
                    self.speed_decode();
                }
            }
            FromWorker::BatchPoint {
                batch,
                per_user_tok_s,
                aggregate_tok_s: _,
            } => {
                let Some(m) = self.model.get_untracked() else { return };
                let record = RunRecord::batch_point(
                    self.batch.with_untracked(|b| b.id),
                    batch as u32,
                    context(&m),
                    BATCH_TOKENS,
                    per_user_tok_s,
                );
                self.last_run.set(Some(record.clone()));
                self.batch.update(|b| b.points.push(record));
            }
            FromWorker::Memory(m) => self.memory.set(Some(m)),
            FromWorker::Tokens(view) => self.tokens.update(|t| {
                t.busy = false;
                t.error = None;
                t.view = Some(view);
            }),
            FromWorker::BatchDone => {
                self.batch.update(|b| b.running = false);
                self.status.set("Batch dial: done.".into());
            }
            FromWorker::Error { message, to } => self.on_error(message, to),
        }
    }
}
