//! Every panel's settings as the page reads them from a link's fragment (`#/embed/agent?…`):
//! the route, then the query split as `URLSearchParams` does (WHATWG form-urlencoded) and given
//! to each panel's parser. Invariants: no panic, and whatever settings come out write a link
//! that reads back with no error and writes the same link again.

use tokscope_web::params::{AgentSettings, RooflineSettings, RunSettings, Settings};
use tokscope_web::protocol::ModelSource;
use tokscope_web::route::Route;
use tokscope_web::speed::SpeedResult;

fn round_trip<S: Settings>(pairs: &[(String, String)]) {
    let (settings, _errors) = S::from_pairs(pairs.iter().map(|(k, v)| (k.as_str(), v.as_str())));
    let written = settings.to_pairs();
    let (back, errors) = S::from_pairs(written.iter().map(|(k, v)| (*k, v.as_str())));
    assert!(errors.is_empty(), "{written:?} read back with errors {errors:?}");
    assert_eq!(
        back.to_pairs(),
        written,
        "{written:?} did not read back to the same link"
    );
}

/// One input through the pipeline; panics on a bug.
pub fn run(data: &[u8]) {
    let Ok(hash) = std::str::from_utf8(data) else { return };
    let Ok(route) = Route::parse(hash) else { return };
    let pairs: Vec<(String, String)> = form_urlencoded::parse(route.query.as_bytes()).into_owned().collect();
    round_trip::<RunSettings>(&pairs);
    round_trip::<RooflineSettings>(&pairs);
    round_trip::<AgentSettings>(&pairs);
    round_trip::<SpeedResult>(&pairs);
    for (k, v) in &pairs {
        if k == "model" {
            let source = ModelSource::from_setting(v);
            assert_eq!(source.setting().as_deref(), Some(v.as_str()));
        }
    }
}
