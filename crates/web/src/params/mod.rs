//! Each panel's inputs as plain settings that round-trip through URL pairs, so a link or an
//! embed reproduces a panel exactly. Values arrive already percent-decoded (the page uses
//! `URLSearchParams`); bad ones are reported by name and keep their defaults, never guessed.

mod agent;
mod roofline;
mod run;

pub use agent::{AgentSettings, MAX_SPEEDS, PRESETS as AGENT_PRESETS, Speed};
pub use roofline::{
    CUSTOM as ROOFLINE_CUSTOM, LOADED as ROOFLINE_LOADED, MEASURED as ROOFLINE_MEASURED, RooflineSettings,
};
pub use run::{MAX_TOKENS_LIMIT, RunSettings};

/// One panel's settings.
pub trait Settings: Default + Clone {
    /// Keys applied before the others whatever their order in the URL: presets, which the
    /// explicit values then refine.
    const FIRST: &'static [&'static str] = &[];

    /// Sets one parameter from text (a URL value or a form field). On error the settings are
    /// unchanged and the message says what is allowed. Unknown keys are ignored: other panels'
    /// parameters share the URL.
    fn set(&mut self, key: &str, v: &str) -> Result<(), String>;

    /// The pairs that reproduce these settings (values not yet percent-encoded).
    fn to_pairs(&self) -> Vec<(&'static str, String)>;

    /// Settings from URL pairs, with one message per rejected parameter.
    fn from_pairs<'a>(pairs: impl IntoIterator<Item = (&'a str, &'a str)>) -> (Self, Vec<String>) {
        let pairs: Vec<(&str, &str)> = pairs.into_iter().collect();
        let (first, rest): (Vec<_>, Vec<_>) = pairs.iter().partition(|(k, _)| Self::FIRST.contains(k));
        let mut s = Self::default();
        let mut errors = Vec::new();
        for (k, v) in first.into_iter().chain(rest) {
            if let Err(e) = s.set(k, v) {
                errors.push(format!("URL parameter {k}: {e}"));
            }
        }
        (s, errors)
    }
}

pub(crate) fn flag(v: &str) -> Result<bool, String> {
    match v {
        "1" | "true" | "on" | "yes" | "" => Ok(true),
        "0" | "false" | "off" | "no" => Ok(false),
        _ => Err(format!("expected 1 or 0, got {v:?}")),
    }
}

pub(crate) fn number<T: std::str::FromStr>(v: &str) -> Result<T, String> {
    v.trim().parse().map_err(|_| format!("{v:?} is not a valid number"))
}
