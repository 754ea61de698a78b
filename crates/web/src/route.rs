//! The page's routes, all in the URL's fragment so a static host serves every one:
//! `#/` the whole playground, `#/<panel>` the playground scrolled to one panel, and
//! `#/embed/<panel>` one panel alone for an article's `<iframe>`, `#/guide/<n>` step n of the
//! guided path ([`tokscope_core::lesson`]). A `?query` after the path holds that panel's
//! settings (see [`crate::params`]).

/// The panels a reader can link to or embed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Panel {
    Run,
    Roofline,
    Agent,
    Speed,
    Tokens,
}

impl Panel {
    pub const ALL: [Panel; 5] = [Panel::Run, Panel::Roofline, Panel::Agent, Panel::Speed, Panel::Tokens];

    pub fn slug(self) -> &'static str {
        match self {
            Panel::Run => "run",
            Panel::Roofline => "roofline",
            Panel::Agent => "agent",
            Panel::Speed => "speed",
            Panel::Tokens => "tokens",
        }
    }

    pub fn title(self) -> &'static str {
        match self {
            Panel::Run => "tokscope: a language model on your device",
            Panel::Roofline => "tokscope: roofline calculator",
            Panel::Agent => "tokscope: agent-step latency",
            Panel::Speed => "tokscope: device speed check",
            Panel::Tokens => "tokscope: text as tokens",
        }
    }

    fn from_slug(s: &str) -> Option<Self> {
        Panel::ALL.into_iter().find(|p| p.slug() == s)
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Route {
    /// The panel linked to; `None` is the whole page from the top.
    pub panel: Option<Panel>,
    /// One panel alone, without the site's header and the other panels.
    pub embed: bool,
    /// The raw query after `?`, still percent-encoded.
    pub query: String,
    /// A step of the guided path (1-based, within the path).
    pub guide: Option<usize>,
}

impl Route {
    /// Reads `location.hash` (with or without its `#`). An unknown path is an error so the page
    /// can say so rather than show the wrong panel.
    pub fn parse(hash: &str) -> Result<Self, String> {
        let h = hash.strip_prefix('#').unwrap_or(hash);
        let (path, query) = h.split_once('?').unwrap_or((h, ""));
        let parts: Vec<&str> = path.split('/').filter(|p| !p.is_empty()).collect();
        let unknown = || {
            format!(
                "no such page {:?}: try #/guide/1, #/embed/run, #/embed/roofline, #/embed/agent, #/embed/speed or #/embed/tokens",
                format!("#{path}")
            )
        };
        let steps = tokscope_core::lesson::STEPS.len();
        let (panel, embed, guide) = match parts.as_slice() {
            [] => (None, false, None),
            ["guide"] => (None, false, Some(1)),
            ["guide", n] => match n.parse::<usize>() {
                Ok(n) if (1..=steps).contains(&n) => (None, false, Some(n)),
                _ => return Err(format!("the guided path has steps 1 to {steps}, not {n:?}")),
            },
            ["embed", p] => (Some(Panel::from_slug(p).ok_or_else(unknown)?), true, None),
            [p] => (Some(Panel::from_slug(p).ok_or_else(unknown)?), false, None),
            _ => return Err(unknown()),
        };
        Ok(Route {
            panel,
            embed,
            query: query.into(),
            guide,
        })
    }

    /// The fragment for a panel with an encoded query: `#/embed/agent?steps=12`.
    pub fn hash(panel: Panel, embed: bool, query: &str) -> String {
        let embed = if embed { "embed/" } else { "" };
        let q = if query.is_empty() {
            String::new()
        } else {
            format!("?{query}")
        };
        format!("#/{embed}{}{q}", panel.slug())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn routes() {
        let r = Route::parse("#/embed/agent?steps=12&tokens=800&speeds=30,300").unwrap();
        assert_eq!(
            (r.panel, r.embed, r.query.as_str()),
            (Some(Panel::Agent), true, "steps=12&tokens=800&speeds=30,300")
        );
        assert_eq!(
            Route::parse("").unwrap(),
            Route {
                panel: None,
                embed: false,
                query: String::new(),
                guide: None,
            }
        );
        assert_eq!(Route::parse("#/").unwrap().panel, None);
        assert_eq!(Route::parse("#/roofline?batch=2").unwrap().panel, Some(Panel::Roofline));
        assert!(!Route::parse("#/roofline").unwrap().embed);
        assert!(
            Route::parse("#/embed/toaster")
                .unwrap_err()
                .contains("no such page \"#/embed/toaster\"")
        );
        assert!(Route::parse("#/a/b/c").is_err());
        assert_eq!(Route::parse("#/guide").unwrap().guide, Some(1));
        let r = Route::parse("#/guide/4?batch=2").unwrap();
        assert_eq!(
            (r.guide, r.panel, r.embed, r.query.as_str()),
            (Some(4), None, false, "batch=2")
        );
        assert!(Route::parse("#/guide/0").unwrap_err().contains("steps 1 to 7"));
        assert!(
            Route::parse("#/guide/8")
                .unwrap_err()
                .contains("steps 1 to 7, not \"8\"")
        );
        assert!(Route::parse("#/guide/x").is_err());
    }

    #[test]
    fn hashes_round_trip() {
        for p in Panel::ALL {
            for embed in [false, true] {
                let h = Route::hash(p, embed, "a=1");
                let r = Route::parse(&h).unwrap();
                assert_eq!((r.panel, r.embed, r.query.as_str()), (Some(p), embed, "a=1"));
            }
        }
    }
}
