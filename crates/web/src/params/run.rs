//! The run panel's settings, read from the page's URL (`?prompt=…&max_tokens=32&temperature=0&seed=1&chat=1&autorun=1`,
//! `&ignore_eos=1`),
//! so a link reproduces it, and written back for "copy link". Values arrive already
//! percent-decoded (the page uses `URLSearchParams`); bad ones are reported, not guessed.

use super::{Settings, flag, number};
use crate::protocol::BackendChoice;
use tokscope_core::roofline::chain::Chain;
use tokscope_core::sampling::SamplingParams;

#[derive(Debug, Clone, PartialEq)]
pub struct RunSettings {
    pub prompt: String,
    pub chat: bool,
    pub sampling: SamplingParams,
    pub max_tokens: usize,
    pub autorun: bool,
    /// `backend=cpu` forces the WebAssembly CPU engine, `backend=gpu` WebGPU even on a software
    /// adapter; `auto` (the default) picks.
    pub backend: BackendChoice,
    /// `model=URL` loads another GGUF instead of the default.
    pub model: Option<String>,
    /// `ignore_eos=1` decodes past the model's end-of-text token, to `max_tokens` or the full
    /// context (llama.cpp's `--ignore-eos`, the CLI's too): a run of known length.
    pub ignore_eos: bool,
    /// `nudge=0` keeps the WebGPU engine from nudging the queue while it waits for a result,
    /// even where that would pay (tokscope-core's `roofline::completion`): to see the browser's
    /// own completion latency.
    pub nudge: bool,
    /// `chain=0` decodes one step a submit on WebGPU, reading each token back; `chain=K` fixes
    /// K greedy steps a submit; `auto` (the default) chooses from the measured round trip
    /// (tokscope-gpu's `decode`).
    pub chain: Chain,
}

/// Most tokens one run may ask for (the default model's context is 8,192).
pub const MAX_TOKENS_LIMIT: usize = 8192;

impl Default for RunSettings {
    fn default() -> Self {
        Self {
            prompt: "The capital of France is".into(),
            chat: false,
            sampling: SamplingParams {
                temperature: 0.0,
                ..Default::default()
            },
            max_tokens: 64,
            autorun: false,
            backend: BackendChoice::Auto,
            model: None,
            ignore_eos: false,
            nudge: true,
            chain: Chain::Auto,
        }
    }
}

impl Settings for RunSettings {
    /// Sets one parameter from text (a URL value or a form field). On error the settings are
    /// unchanged and the message says what is allowed. Unknown keys are ignored: other panels'
    /// parameters share the URL.
    fn set(&mut self, key: &str, v: &str) -> Result<(), String> {
        let mut s = self.clone();
        match key {
            "prompt" => s.prompt = v.to_string(),
            "chat" => s.chat = flag(v)?,
            "autorun" => s.autorun = flag(v)?,
            "ignore_eos" => s.ignore_eos = flag(v)?,
            "nudge" => s.nudge = flag(v)?,
            "chain" => s.chain = Chain::parse(v)?,
            "backend" => {
                s.backend = match v {
                    "cpu" => BackendChoice::Cpu,
                    "gpu" => BackendChoice::Gpu,
                    "auto" => BackendChoice::Auto,
                    _ => return Err(format!("expected auto, cpu or gpu, got {v:?}")),
                }
            }
            "model" => {
                s.model = match v {
                    "" => None,
                    url => Some(crate::protocol::check_model_setting(url)?.to_string()),
                }
            }
            "max_tokens" => {
                s.max_tokens = match number::<usize>(v)? {
                    n @ 1..=MAX_TOKENS_LIMIT => n,
                    _ => return Err(format!("must be between 1 and {MAX_TOKENS_LIMIT}")),
                }
            }
            "temperature" => s.sampling.temperature = number(v)?,
            "top_k" => s.sampling.top_k = number(v)?,
            "top_p" => s.sampling.top_p = number(v)?,
            "seed" => s.sampling.seed = number(v)?,
            _ => {}
        }
        s.sampling.validate().map_err(|e| e.to_string())?;
        *self = s;
        Ok(())
    }

    /// The pairs that reproduce this run (values not yet percent-encoded).
    fn to_pairs(&self) -> Vec<(&'static str, String)> {
        let mut p = vec![
            ("prompt", self.prompt.clone()),
            ("max_tokens", self.max_tokens.to_string()),
            ("temperature", self.sampling.temperature.to_string()),
            ("top_k", self.sampling.top_k.to_string()),
            ("top_p", self.sampling.top_p.to_string()),
            ("seed", self.sampling.seed.to_string()),
            ("chat", u8::from(self.chat).to_string()),
        ];
        if self.ignore_eos {
            p.push(("ignore_eos", "1".into()));
        }
        if !self.nudge {
            p.push(("nudge", "0".into()));
        }
        if self.chain != Chain::Auto {
            p.push(("chain", self.chain.to_param()));
        }
        match self.backend {
            BackendChoice::Auto => {}
            BackendChoice::Cpu => p.push(("backend", "cpu".into())),
            BackendChoice::Gpu => p.push(("backend", "gpu".into())),
        }
        if let Some(m) = &self.model {
            p.push(("model", m.clone()));
        }
        p
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::params::Settings;

    #[test]
    fn a_model_address_must_be_http_or_relative() {
        for bad in [
            "javascript:alert(1)",
            "data:application/octet-stream,GGUF",
            "file:///etc/passwd",
            "blob:x",
        ] {
            let (s, errors) = RunSettings::from_pairs([("model", bad), ("max_tokens", "5")]);
            assert_eq!(s.model, None, "{bad}");
            assert_eq!(s.max_tokens, 5, "the other parameters still apply");
            assert!(
                errors[0].contains("URL parameter model") && errors[0].contains("http"),
                "{errors:?}"
            );
        }
        for good in [
            "https://example.org/m.gguf",
            "HTTP://example.org/m.gguf",
            "models/m.gguf",
            "/m.gguf",
            "synthetic:tiny:Q4_0",
            "m.gguf?x=a:b",
        ] {
            let (s, errors) = RunSettings::from_pairs([("model", good)]);
            assert_eq!(s.model.as_deref(), Some(good), "{errors:?}");
        }
    }

    #[test]
    fn reads_a_run() {
        let (s, errors) = RunSettings::from_pairs([
            ("prompt", "Hello <b>"),
            ("max_tokens", "32"),
            ("temperature", "0.7"),
            ("seed", "9"),
            ("chat", "1"),
            ("autorun", "1"),
            ("ignore_eos", "1"),
            ("steps", "12"),
        ]);
        assert!(errors.is_empty(), "{errors:?}");
        assert_eq!(s.prompt, "Hello <b>");
        assert_eq!(s.max_tokens, 32);
        assert_eq!(s.sampling.temperature, 0.7);
        assert_eq!(s.sampling.seed, 9);
        assert!(s.chat && s.autorun && s.ignore_eos && s.backend == BackendChoice::Auto);
    }

    #[test]
    fn bad_values_are_reported_and_keep_defaults() {
        let (s, errors) = RunSettings::from_pairs([("max_tokens", "0"), ("seed", "x"), ("chat", "maybe")]);
        assert_eq!(errors.len(), 3, "{errors:?}");
        assert!(errors[0].contains("max_tokens") && errors[0].contains("between 1 and"));
        assert_eq!(s, RunSettings::default());
        let (s, errors) = RunSettings::from_pairs([("temperature", "-1"), ("top_p", "0")]);
        assert_eq!(errors.len(), 2, "{errors:?}");
        assert_eq!(s.sampling, RunSettings::default().sampling);
        let mut s = RunSettings::default();
        assert!(s.set("top_p", "1.5").unwrap_err().contains("top"));
        assert!(s.set("chain", "65").unwrap_err().contains("0 (one step"));
        assert!(s.set("chain", "x").is_err());
        assert_eq!(s, RunSettings::default());
    }

    #[test]
    fn pairs_round_trip() {
        let (s, _) = RunSettings::from_pairs([
            ("prompt", "a&b=c"),
            ("top_k", "40"),
            ("backend", "cpu"),
            ("ignore_eos", "1"),
            ("nudge", "0"),
            ("chain", "0"),
        ]);
        assert!(!s.nudge);
        assert_eq!(s.chain, Chain::Off);
        let pairs = s.to_pairs();
        let (back, errors) = RunSettings::from_pairs(pairs.iter().map(|(k, v)| (*k, v.as_str())));
        assert!(errors.is_empty());
        assert_eq!(back, s);
    }
}
