//! The roofline panel's settings: a model and a device (presets or the reader's own figures),
//! batch, KV cache and fixed overhead. `model_preset` and `device` fill in their figures first;
//! explicit `params`, `bits`, `bandwidth`, `tflops` then override them.
//! Example: `#/embed/roofline?model_preset=llama-3.1-8b-16&device=h100-sxm&batch=8&context=4096`.

use super::{Settings, number};
use tokscope_core::human::parse_count;
use tokscope_core::presets;
use tokscope_core::roofline::{Inputs, KvCache};

/// The preset ids the two pickers may also hold.
pub const CUSTOM: &str = "custom";
/// The model loaded in the page (its own parameter count and bytes per token).
pub const LOADED: &str = "loaded";
/// This device, as the speed check measured it.
pub const MEASURED: &str = "measured";

#[derive(Debug, Clone, PartialEq)]
pub struct RooflineSettings {
    /// A model preset id, [`LOADED`] or [`CUSTOM`].
    pub model_preset: String,
    /// A device preset id, [`MEASURED`] or [`CUSTOM`].
    pub device: String,
    pub params: f64,
    pub bits: f64,
    pub bandwidth_gb_s: f64,
    pub tflops: Option<f64>,
    pub batch: u32,
    /// Layers, KV heads, head dim (from the model preset, or set by hand).
    pub kv_shape: Option<(u32, u32, u32)>,
    /// Tokens in the KV cache; 0 leaves the cache out.
    pub context: u64,
    pub kv_bits: f64,
    pub overhead_ms: f64,
}

impl Default for RooflineSettings {
    /// DESIGN.md's worked example: Llama 3.1 8B at 16 bits on 1 TB/s.
    fn default() -> Self {
        let m = presets::model("llama-3.1-8b-16").expect("preset");
        Self {
            model_preset: m.id.into(),
            device: CUSTOM.into(),
            params: m.active_params,
            bits: m.bits_per_weight,
            bandwidth_gb_s: 1000.0,
            tflops: None,
            batch: 1,
            kv_shape: m.kv_shape,
            context: 0,
            kv_bits: 16.0,
            overhead_ms: 0.0,
        }
    }
}

impl RooflineSettings {
    /// The calculator's inputs (checked by `Inputs::estimate`, which names a bad field).
    pub fn inputs(&self) -> Inputs {
        Inputs {
            active_params: self.params,
            bits_per_weight: self.bits,
            bandwidth_gb_s: self.bandwidth_gb_s,
            peak_tflops: self.tflops,
            batch: self.batch,
            kv: self
                .kv_shape
                .filter(|_| self.context > 0)
                .map(|(layers, kv_heads, head_dim)| KvCache {
                    layers,
                    kv_heads,
                    head_dim,
                    context: self.context,
                    bits: self.kv_bits,
                }),
            overhead_s: self.overhead_ms / 1e3,
        }
    }

    /// Fills the model's figures from a preset (or marks them the reader's own).
    pub fn pick_model(&mut self, id: &str) -> Result<(), String> {
        match id {
            CUSTOM | LOADED => {}
            _ => {
                let m = presets::model(id).ok_or_else(|| format!("no model preset {id:?}"))?;
                (self.params, self.bits, self.kv_shape) = (m.active_params, m.bits_per_weight, m.kv_shape);
            }
        }
        self.model_preset = id.into();
        Ok(())
    }

    /// Takes the loaded model's figures: its parameter count, the bits per weight its weight
    /// bytes imply (scales included), its KV shape and the engine's KV precision.
    /// Figures the calculator cannot use (a zero-parameter file) leave the settings unchanged.
    pub fn use_loaded(
        &mut self,
        params: u64,
        weight_bytes: u64,
        kv_shape: (u32, u32, u32),
        kv_bits: u32,
    ) -> Result<(), String> {
        let mut s = self.clone();
        s.model_preset = LOADED.into();
        s.params = params as f64;
        s.bits = weight_bytes as f64 * 8.0 / params.max(1) as f64;
        s.kv_shape = Some(kv_shape);
        s.kv_bits = kv_bits as f64;
        self.accept(s)
    }

    /// Takes this device's measured read bandwidth (no compute roof: the probe measures none);
    /// a probe that measured nothing usable leaves the settings unchanged.
    /// This device's measured figures: the probe's bandwidth, and where a GPU engine runs, its
    /// fixed cost per token (dispatches × cost per dispatch + round trip, ms: the floor model's
    /// fixed term), so the ceiling shown is the floor this device can reach.
    pub fn use_measured(&mut self, gb_s: f64, fixed_ms: Option<f64>) -> Result<(), String> {
        let mut s = self.clone();
        s.device = MEASURED.into();
        s.bandwidth_gb_s = gb_s;
        s.tflops = None;
        if let Some(ms) = fixed_ms {
            s.overhead_ms = ms;
        }
        self.accept(s)
    }

    /// Replaces these settings with `s` if its inputs are valid: settings only ever hold valid
    /// inputs, so the panel's estimate always exists.
    fn accept(&mut self, s: Self) -> Result<(), String> {
        s.inputs().estimate().map_err(|e| e.to_string())?;
        *self = s;
        Ok(())
    }

    /// Fills the device's peaks from a preset (or marks them the reader's own).
    pub fn pick_device(&mut self, id: &str) -> Result<(), String> {
        match id {
            CUSTOM | MEASURED => {}
            _ => {
                let d = presets::device(id).ok_or_else(|| format!("no device preset {id:?}"))?;
                (self.bandwidth_gb_s, self.tflops) = (d.bandwidth_gb_s, d.peak_tflops);
            }
        }
        self.device = id.into();
        Ok(())
    }
}

fn shape_part(shape: &mut Option<(u32, u32, u32)>, index: usize, v: &str) -> Result<(), String> {
    let n: u32 = number(v)?;
    let mut s = shape.unwrap_or((1, 1, 1));
    match index {
        0 => s.0 = n,
        1 => s.1 = n,
        _ => s.2 = n,
    }
    *shape = Some(s);
    Ok(())
}

impl Settings for RooflineSettings {
    const FIRST: &'static [&'static str] = &["model_preset", "device"];

    fn set(&mut self, key: &str, v: &str) -> Result<(), String> {
        let mut s = self.clone();
        match key {
            "model_preset" => s.pick_model(v)?,
            "device" => s.pick_device(v)?,
            "params" => s.params = parse_count(v)?,
            "bits" => s.bits = number(v)?,
            "bandwidth" => s.bandwidth_gb_s = number(v)?,
            "tflops" => s.tflops = if v.trim().is_empty() { None } else { Some(number(v)?) },
            "batch" => s.batch = number(v)?,
            "context" => s.context = number(v)?,
            "kv_bits" => s.kv_bits = number(v)?,
            "overhead_ms" => s.overhead_ms = number(v)?,
            "layers" => shape_part(&mut s.kv_shape, 0, v)?,
            "kv_heads" => shape_part(&mut s.kv_shape, 1, v)?,
            "head_dim" => shape_part(&mut s.kv_shape, 2, v)?,
            _ => return Ok(()),
        }
        // Hand-edited figures are no longer the preset's.
        let model_changed = (s.params, s.bits, s.kv_shape) != (self.params, self.bits, self.kv_shape);
        if model_changed && key != "model_preset" && s.model_preset != LOADED {
            s.model_preset = CUSTOM.into();
        }
        let device_changed = (s.bandwidth_gb_s, s.tflops) != (self.bandwidth_gb_s, self.tflops);
        if device_changed && key != "device" && s.device != MEASURED {
            s.device = CUSTOM.into();
        }
        s.inputs().estimate().map_err(|e| e.to_string())?;
        *self = s;
        Ok(())
    }

    fn to_pairs(&self) -> Vec<(&'static str, String)> {
        let mut p = vec![
            ("model_preset", self.model_preset.clone()),
            ("device", self.device.clone()),
            ("params", self.params.to_string()),
            ("bits", self.bits.to_string()),
            ("bandwidth", self.bandwidth_gb_s.to_string()),
        ];
        if let Some(t) = self.tflops {
            p.push(("tflops", t.to_string()));
        }
        p.push(("batch", self.batch.to_string()));
        if let Some((l, h, d)) = self.kv_shape {
            p.extend([
                ("layers", l.to_string()),
                ("kv_heads", h.to_string()),
                ("head_dim", d.to_string()),
            ]);
        }
        p.extend([
            ("context", self.context.to_string()),
            ("kv_bits", self.kv_bits.to_string()),
            ("overhead_ms", self.overhead_ms.to_string()),
        ]);
        p
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn default_is_the_worked_example() {
        let e = RooflineSettings::default().inputs().estimate().unwrap();
        assert_eq!(e.per_user_tok_s.round(), 62.0);
    }

    #[test]
    fn presets_fill_first_and_explicit_values_override() {
        let (s, errors) =
            RooflineSettings::from_pairs([("bits", "8"), ("model_preset", "llama-3.1-8b-16"), ("device", "h200")]);
        assert!(errors.is_empty(), "{errors:?}");
        assert_eq!(s.bits, 8.0);
        assert_eq!(s.model_preset, CUSTOM);
        assert_eq!((s.bandwidth_gb_s, s.tflops), (4800.0, Some(989.0)));
        assert_eq!(s.device, "h200");
    }

    #[test]
    fn bad_values_are_named_and_keep_the_last_good_state() {
        let (s, errors) = RooflineSettings::from_pairs([
            ("bandwidth", "-5"),
            ("batch", "0"),
            ("device", "toaster"),
            ("params", "NaN"),
        ]);
        assert_eq!(errors.len(), 4, "{errors:?}");
        assert!(
            errors[0].contains("device") && errors[0].contains("toaster"),
            "{errors:?}"
        );
        assert!(errors[1].contains("bandwidth: must be more than zero"), "{errors:?}");
        assert!(errors[2].contains("batch"), "{errors:?}");
        assert_eq!(s, RooflineSettings::default());
    }

    #[test]
    fn the_loaded_model_brings_its_own_bits() {
        let mut s = RooflineSettings::default();
        // SmolLM2-135M Q4_1-ish: 134.5M params in 84.06 MB.
        s.use_loaded(134_515_008, 84_059_136, (30, 3, 64), 32).unwrap();
        assert_eq!(s.model_preset, LOADED);
        assert!((s.bits - 84_059_136.0 * 8.0 / 134_515_008.0).abs() < 1e-12);
        assert!(s.inputs().estimate().unwrap().weight_bytes - 84_059_136.0 < 1e-3);
        // Editing the batch keeps it "loaded"; the model's figures stay.
        s.set("batch", "4").unwrap();
        assert_eq!(s.model_preset, LOADED);
        s.use_measured(19.5, None).unwrap();
        assert_eq!((s.device.as_str(), s.bandwidth_gb_s, s.tflops), (MEASURED, 19.5, None));
        assert_eq!(s.overhead_ms, 0.0);
        // With the GPU engine's fixed cost: the ceiling becomes the floor model's rate.
        s.use_measured(19.5, Some(3.68)).unwrap();
        assert_eq!(s.overhead_ms, 3.68);
        let e = s.inputs().estimate().unwrap();
        assert!((e.step_s - (e.memory_s + 3.68e-3)).abs() < 1e-12);
        // A probe that measured 0 GB/s changes nothing.
        let before = s.clone();
        assert!(s.use_measured(0.0, Some(1.0)).is_err());
        assert_eq!(s, before);
    }

    #[test]
    fn pairs_round_trip() {
        let (s, _) = RooflineSettings::from_pairs([
            ("model_preset", "mixtral-8x7b-4"),
            ("device", "m1-max"),
            ("batch", "4"),
            ("context", "32768"),
            ("overhead_ms", "0.5"),
        ]);
        let pairs = s.to_pairs();
        let (back, errors) = RooflineSettings::from_pairs(pairs.iter().map(|(k, v)| (*k, v.as_str())));
        assert!(errors.is_empty(), "{errors:?}");
        assert_eq!(back, s);
        assert!(back.inputs().kv.is_some());
    }
}
