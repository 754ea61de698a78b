//! Geometry of the log-log roofline chart, as plain numbers so it is tested natively: the
//! bandwidth slope (attainable FLOP/s = bandwidth × intensity) up to the compute roof, the
//! ridge point, and points for the estimate and the running model's measured decode and prefill.

/// The SVG's drawing box (the page scales it to its width).
pub const WIDTH: f64 = 480.0;
pub const HEIGHT: f64 = 300.0;
pub const LEFT: f64 = 112.0;
pub const RIGHT: f64 = 12.0;
pub const TOP: f64 = 12.0;
pub const BOTTOM: f64 = 36.0;

/// A point in data units: intensity (FLOP/byte) and attainable or achieved FLOP/s.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct DataPoint {
    pub intensity: f64,
    pub flop_s: f64,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Plot {
    /// The roof as an SVG `points` list.
    pub roof: String,
    pub ridge: Option<(f64, f64)>,
    /// Each input point in pixels, in the order given (`None` where it was not positive).
    pub points: Vec<Option<(f64, f64)>>,
    pub x_ticks: Vec<(f64, String)>,
    pub y_ticks: Vec<(f64, String)>,
}

/// A base-10 log axis from `10^lo` to `10^hi` onto pixels `a..b`.
#[derive(Debug, Clone, Copy)]
struct LogAxis {
    lo: f64,
    hi: f64,
    a: f64,
    b: f64,
}

impl LogAxis {
    fn px(&self, v: f64) -> f64 {
        self.a + (v.log10() - self.lo) / (self.hi - self.lo) * (self.b - self.a)
    }

    fn ticks(&self, label: fn(f64) -> String) -> Vec<(f64, String)> {
        let step = ((self.hi - self.lo) / 6.0).ceil().max(1.0) as i32;
        (self.lo as i32..=self.hi as i32)
            .step_by(step as usize)
            .map(|e| (self.px(10f64.powi(e)), label(10f64.powi(e))))
            .collect()
    }
}

fn decade_below(v: f64) -> f64 {
    v.log10().floor()
}

fn decade_above(v: f64) -> f64 {
    v.log10().ceil()
}

fn intensity_label(v: f64) -> String {
    if v >= 1.0 { format!("{v:.0}") } else { format!("{v}") }
}

/// A decade's label without trailing zeros: "100 GFLOP/s", not "100.0 GFLOP/s".
fn flops_label(v: f64) -> String {
    let s = tokscope_core::human::si(v, "FLOP/s");
    match s.split_once(' ') {
        Some((n, unit)) if n.contains('.') => format!("{} {unit}", n.trim_end_matches('0').trim_end_matches('.')),
        _ => s,
    }
}

/// Lays out the chart for a bandwidth (bytes/s), an optional peak (FLOP/s) and points.
pub fn plot(bandwidth: f64, peak: Option<f64>, points: &[DataPoint]) -> Plot {
    let valid = |p: &&DataPoint| p.intensity > 0.0 && p.flop_s > 0.0 && p.intensity.is_finite() && p.flop_s.is_finite();
    let ridge = peak.map(|p| p / bandwidth);
    let xs: Vec<f64> = points.iter().filter(valid).map(|p| p.intensity).chain(ridge).collect();
    let x_lo = decade_below(xs.iter().cloned().fold(1.0, f64::min) / 3.0);
    let x_hi = decade_above(xs.iter().cloned().fold(1.0, f64::max) * 10.0).max(x_lo + 1.0);
    let roof_at = |i: f64| peak.map_or(bandwidth * i, |p| p.min(bandwidth * i));
    let ys: Vec<f64> = points
        .iter()
        .filter(valid)
        .map(|p| p.flop_s)
        .chain([roof_at(10f64.powf(x_lo))])
        .collect();
    let y_lo = decade_below(ys.iter().cloned().fold(f64::MAX, f64::min) / 2.0);
    let y_hi = decade_above(roof_at(10f64.powf(x_hi)) * 1.5).max(y_lo + 1.0);
    let x = LogAxis {
        lo: x_lo,
        hi: x_hi,
        a: LEFT,
        b: WIDTH - RIGHT,
    };
    let y = LogAxis {
        lo: y_lo,
        hi: y_hi,
        a: HEIGHT - BOTTOM,
        b: TOP,
    };
    let mut corners = vec![10f64.powf(x_lo)];
    corners.extend(ridge.filter(|r| r.log10() > x_lo && r.log10() < x_hi));
    corners.push(10f64.powf(x_hi));
    let roof = corners
        .iter()
        .map(|&i| format!("{:.1},{:.1}", x.px(i), y.px(roof_at(i))))
        .collect::<Vec<_>>()
        .join(" ");
    Plot {
        roof,
        ridge: ridge.map(|r| (x.px(r), y.px(roof_at(r)))),
        points: points
            .iter()
            .map(|p| valid(&p).then(|| (x.px(p.intensity), y.px(p.flop_s))))
            .collect(),
        x_ticks: x.ticks(intensity_label),
        y_ticks: y.ticks(flops_label),
    }
}

/// The precision dial's chart: measured decode tok/s against bytes per token (log-log), over
/// the ceiling `bandwidth ÷ bytes` where the probe has measured a bandwidth (bytes/s).
#[derive(Debug, Clone, PartialEq)]
pub struct DialPlot {
    pub ceiling: Option<String>,
    pub points: Vec<(f64, f64)>,
    pub x_ticks: Vec<(f64, String)>,
    pub y_ticks: Vec<(f64, String)>,
}

pub fn dial(points: &[(f64, f64)], bandwidth: Option<f64>) -> DialPlot {
    let ok: Vec<(f64, f64)> = points
        .iter()
        .copied()
        .filter(|(b, t)| *b > 0.0 && *t > 0.0 && b.is_finite() && t.is_finite())
        .collect();
    let (b_lo, b_hi) = ok
        .iter()
        .fold((f64::MAX, 0f64), |(lo, hi), (b, _)| (lo.min(*b), hi.max(*b)));
    let (b_lo, b_hi) = if ok.is_empty() { (1e7, 1e9) } else { (b_lo, b_hi) };
    let ceiling_at = |b: f64| bandwidth.map(|bw| bw / b);
    let ys: Vec<f64> = ok
        .iter()
        .map(|p| p.1)
        .chain(ceiling_at(b_lo))
        .chain(ceiling_at(b_hi))
        .collect();
    let (t_lo, t_hi) = ys.iter().fold((f64::MAX, 0f64), |(lo, hi), t| (lo.min(*t), hi.max(*t)));
    let (t_lo, t_hi) = if ys.is_empty() { (1.0, 100.0) } else { (t_lo, t_hi) };
    let x = LogAxis {
        lo: decade_below(b_lo / 1.5),
        hi: decade_above(b_hi * 1.5),
        a: LEFT,
        b: WIDTH - RIGHT,
    };
    let y = LogAxis {
        lo: decade_below(t_lo / 1.5),
        hi: decade_above(t_hi * 1.5).max(decade_below(t_lo / 1.5) + 1.0),
        a: HEIGHT - BOTTOM,
        b: TOP,
    };
    let ceiling = bandwidth.map(|bw| {
        (0..=24)
            .map(|i| 10f64.powf(x.lo + (x.hi - x.lo) * i as f64 / 24.0))
            .map(|b| format!("{:.1},{:.1}", x.px(b), y.px(bw / b)))
            .collect::<Vec<_>>()
            .join(" ")
    });
    DialPlot {
        ceiling,
        points: ok.iter().map(|(b, t)| (x.px(*b), y.px(*t))).collect(),
        x_ticks: x.ticks(|v| tokscope_core::human::bytes(v).replace(".00", "")),
        y_ticks: y.ticks(|v| if v >= 1.0 { format!("{v:.0}") } else { format!("{v}") }),
    }
}

/// A phase of an agent step, for the timeline's colours and legend.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Phase {
    Ttft,
    Prefill,
    Decode,
    Tool,
    /// The reference row: reading the visible text at people's pace.
    Reading,
}

impl Phase {
    pub fn class(self) -> &'static str {
        match self {
            Phase::Ttft => "ph-ttft",
            Phase::Prefill => "ph-prefill",
            Phase::Decode => "ph-decode",
            Phase::Tool => "ph-tool",
            Phase::Reading => "ph-reading",
        }
    }
}

/// One bar of the timeline, as a fraction of the longest row (`x`, `w` in 0..=1).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Segment {
    pub x: f64,
    pub w: f64,
    pub phase: Phase,
}

/// Steps drawn one by one up to this many; beyond, each phase is one bar (same totals).
pub const MAX_DRAWN_STEPS: usize = 200;

/// Lays out each agent run as a row of phase segments on one shared time scale (so the slower
/// speed is visibly longer), plus an optional reading-pace row of `reading_s` seconds.
pub fn timeline(runs: &[&tokscope_core::agent::AgentRun], reading_s: Option<f64>) -> Vec<Vec<Segment>> {
    let longest = runs.iter().map(|r| r.total_s).chain(reading_s).fold(0.0, f64::max);
    if longest <= 0.0 {
        return runs.iter().map(|_| vec![]).collect();
    }
    let mut rows: Vec<Vec<Segment>> = runs
        .iter()
        .map(|r| {
            let mut row = Vec::new();
            // One step's phases in order from `start` (or the run's totals from 0).
            let mut phases = |start: f64, ttft: f64, prefill: f64, decode: f64, tool: f64| {
                let mut t = start;
                for (len, phase) in [
                    (ttft, Phase::Ttft),
                    (prefill, Phase::Prefill),
                    (decode, Phase::Decode),
                    (tool, Phase::Tool),
                ] {
                    if len > 0.0 {
                        row.push(Segment {
                            x: t / longest,
                            w: len / longest,
                            phase,
                        });
                    }
                    t += len;
                }
            };
            if r.steps.len() <= MAX_DRAWN_STEPS {
                for s in &r.steps {
                    phases(s.start_s, s.ttft_s, s.prefill_s, s.decode_s, s.tool_s);
                }
            } else {
                phases(0.0, r.ttft_s, r.prefill_s, r.decode_s, r.tool_s);
            }
            row
        })
        .collect();
    if let Some(s) = reading_s {
        rows.push(vec![Segment {
            x: 0.0,
            w: s / longest,
            phase: Phase::Reading,
        }]);
    }
    rows
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokscope_core::agent::AgentInputs;

    #[test]
    fn dial_points_sit_on_the_ceiling_when_they_reach_it() {
        // 10 GB/s: 50 MB a token → 200 tok/s on the ceiling; 100 MB at half the ceiling.
        let p = dial(&[(50e6, 200.0), (100e6, 50.0)], Some(10e9));
        let curve: Vec<(f64, f64)> = parse(p.ceiling.as_ref().unwrap());
        let near = |pt: (f64, f64)| {
            curve.windows(2).any(|w| {
                let (a, b) = (w[0], w[1]);
                pt.0 >= a.0 && pt.0 <= b.0 && (pt.1 - (a.1 + (b.1 - a.1) * (pt.0 - a.0) / (b.0 - a.0))).abs() < 0.5
            })
        };
        assert!(near(p.points[0]), "{:?} not on {curve:?}", p.points[0]);
        assert!(!near(p.points[1]));
        assert!(dial(&[(50e6, 200.0)], None).ceiling.is_none());
    }

    #[test]
    fn timeline_shares_one_scale_and_ends_where_the_run_ends() {
        let slow = AgentInputs {
            steps: 2,
            output_tokens: 100,
            tool_s: 1.0,
            decode_tok_s: 10.0,
            ..Default::default()
        }
        .simulate()
        .unwrap();
        let fast = AgentInputs {
            decode_tok_s: 100.0,
            ..AgentInputs {
                steps: 2,
                output_tokens: 100,
                tool_s: 1.0,
                ..Default::default()
            }
        }
        .simulate()
        .unwrap();
        // slow: 10 + 1 + 10 = 21 s; fast: 1 + 1 + 1 = 3 s.
        let rows = timeline(&[&slow, &fast], None);
        let end = |row: &Vec<Segment>| row.last().map(|s| s.x + s.w).unwrap();
        assert!((end(&rows[0]) - 1.0).abs() < 1e-12);
        assert!((end(&rows[1]) - 3.0 / 21.0).abs() < 1e-12);
        let phases: Vec<Phase> = rows[0].iter().map(|s| s.phase).collect();
        assert_eq!(phases, [Phase::Decode, Phase::Tool, Phase::Decode]);
        // A reading row longer than both becomes the scale.
        let rows = timeline(&[&slow], Some(42.0));
        assert!((end(&rows[0]) - 0.5).abs() < 1e-12);
        assert_eq!(
            rows[1],
            [Segment {
                x: 0.0,
                w: 1.0,
                phase: Phase::Reading
            }]
        );
    }

    #[test]
    fn many_steps_collapse_to_one_bar_per_phase() {
        let r = AgentInputs {
            steps: 1000,
            output_tokens: 10,
            tool_s: 0.5,
            ttft_s: 0.1,
            ..Default::default()
        }
        .simulate()
        .unwrap();
        let rows = timeline(&[&r], None);
        assert_eq!(rows[0].len(), 3);
        assert!((rows[0].iter().map(|s| s.w).sum::<f64>() - 1.0).abs() < 1e-9);
    }

    fn parse(points: &str) -> Vec<(f64, f64)> {
        points
            .split(' ')
            .map(|p| {
                let (a, b) = p.split_once(',').unwrap();
                (a.parse().unwrap(), b.parse().unwrap())
            })
            .collect()
    }

    #[test]
    fn the_roof_rises_then_flattens_at_the_ridge() {
        // 3350 GB/s, 989 TFLOP/s: ridge at 295 FLOP/byte; a decode point at intensity 1.
        let p = plot(
            3350e9,
            Some(989e12),
            &[DataPoint {
                intensity: 1.0,
                flop_s: 3350e9,
            }],
        );
        let roof = parse(&p.roof);
        assert_eq!(roof.len(), 3);
        let (rx, ry) = p.ridge.unwrap();
        assert!((roof[1].0 - rx).abs() < 0.06 && (roof[1].1 - ry).abs() < 0.06);
        assert!(roof[0].1 > roof[1].1, "the slope rises (smaller y is higher)");
        assert!((roof[2].1 - roof[1].1).abs() < 1e-9, "flat after the ridge");
        // The decode point sits on the slope: same height as the roof at its intensity.
        let (px, py) = p.points[0].unwrap();
        let slope = (roof[1].1 - roof[0].1) / (roof[1].0 - roof[0].0);
        let on_roof = roof[0].1 + slope * (px - roof[0].0);
        assert!((py - on_roof).abs() < 0.2, "{py} vs {on_roof}");
        // Everything inside the box.
        for (x, y) in roof.iter().chain([(px, py)].iter()) {
            assert!(
                (LEFT..=WIDTH - RIGHT + 1e-9).contains(x) && (TOP - 1e-9..=HEIGHT - BOTTOM + 1e-9).contains(y),
                "{x},{y}"
            );
        }
        assert!(!p.x_ticks.is_empty() && !p.y_ticks.is_empty());
        assert_eq!(flops_label(1e11), "100 GFLOP/s");
        assert_eq!(flops_label(1e12), "1 TFLOP/s");
    }

    #[test]
    fn without_a_peak_the_roof_is_one_slope_and_bad_points_are_dropped() {
        let p = plot(
            100e9,
            None,
            &[
                DataPoint {
                    intensity: 2.0,
                    flop_s: 50e9,
                },
                DataPoint {
                    intensity: f64::NAN,
                    flop_s: 1.0,
                },
            ],
        );
        assert_eq!(parse(&p.roof).len(), 2);
        assert_eq!(p.ridge, None);
        assert!(p.points[0].is_some() && p.points[1].is_none());
    }

    #[test]
    fn a_point_below_the_roof_plots_below_it() {
        // Measured at 22 % of the bandwidth roof.
        let p = plot(
            20e9,
            None,
            &[
                DataPoint {
                    intensity: 3.0,
                    flop_s: 0.22 * 20e9 * 3.0,
                },
                DataPoint {
                    intensity: 3.0,
                    flop_s: 20e9 * 3.0,
                },
            ],
        );
        let (a, b) = (p.points[0].unwrap(), p.points[1].unwrap());
        assert_eq!(a.0, b.0);
        assert!(a.1 > b.1 + 10.0);
    }
}
