//! The ggml tensor type table: id, name, block size and bytes per block.
//!
//! Source: ggml's `ggml_type` enum and `type_traits` table (ggml/include/ggml.h, ggml/src/ggml.c).
//! The reader knows every type's geometry so that `inspect` can size any GGUF, while only the
//! types in [`GgmlType::is_supported`] can be executed.

use serde::Serialize;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[allow(non_camel_case_types)]
pub enum GgmlType {
    F32,
    F16,
    Q4_0,
    Q4_1,
    Q5_0,
    Q5_1,
    Q8_0,
    Q8_1,
    Q2_K,
    Q3_K,
    Q4_K,
    Q5_K,
    Q6_K,
    Q8_K,
    IQ2_XXS,
    IQ2_XS,
    IQ3_XXS,
    IQ1_S,
    IQ4_NL,
    IQ3_S,
    IQ2_S,
    IQ4_XS,
    I8,
    I16,
    I32,
    I64,
    F64,
    IQ1_M,
    BF16,
    TQ1_0,
    TQ2_0,
    MXFP4,
}

/// (type, ggml id, elements per block, bytes per block).
const TABLE: &[(GgmlType, u32, u64, u64)] = {
    use GgmlType::*;
    &[
        (F32, 0, 1, 4),
        (F16, 1, 1, 2),
        (Q4_0, 2, 32, 18),
        (Q4_1, 3, 32, 20),
        (Q5_0, 6, 32, 22),
        (Q5_1, 7, 32, 24),
        (Q8_0, 8, 32, 34),
        (Q8_1, 9, 32, 36),
        (Q2_K, 10, 256, 84),
        (Q3_K, 11, 256, 110),
        (Q4_K, 12, 256, 144),
        (Q5_K, 13, 256, 176),
        (Q6_K, 14, 256, 210),
        (Q8_K, 15, 256, 292),
        (IQ2_XXS, 16, 256, 66),
        (IQ2_XS, 17, 256, 74),
        (IQ3_XXS, 18, 256, 98),
        (IQ1_S, 19, 256, 50),
        (IQ4_NL, 20, 32, 18),
        (IQ3_S, 21, 256, 110),
        (IQ2_S, 22, 256, 82),
        (IQ4_XS, 23, 256, 136),
        (I8, 24, 1, 1),
        (I16, 25, 1, 2),
        (I32, 26, 1, 4),
        (I64, 27, 1, 8),
        (F64, 28, 1, 8),
        (IQ1_M, 29, 256, 56),
        (BF16, 30, 1, 2),
        (TQ1_0, 34, 256, 54),
        (TQ2_0, 35, 256, 66),
        (MXFP4, 39, 32, 17),
    ]
};

impl GgmlType {
    /// The type for a ggml id, or `None` for ids that ggml never had or has removed.
    pub fn from_id(id: u32) -> Option<Self> {
        TABLE.iter().find(|row| row.1 == id).map(|row| row.0)
    }

    fn row(self) -> &'static (GgmlType, u32, u64, u64) {
        TABLE
            .iter()
            .find(|row| row.0 == self)
            .expect("every GgmlType has a table row")
    }

    pub fn id(self) -> u32 {
        self.row().1
    }

    /// Elements per block (1 for plain float and integer types).
    pub fn block_size(self) -> u64 {
        self.row().2
    }

    /// Bytes per block, scales included.
    pub fn type_size(self) -> u64 {
        self.row().3
    }

    /// Bits stored per weight including the block scales: Q4_0 is 4.5, Q4_1 5.0, Q8_0 8.5.
    /// Calculators that count 4 bits for "4-bit" under-count bytes by 11–25 %.
    pub fn bits_per_weight(self) -> f64 {
        self.type_size() as f64 * 8.0 / self.block_size() as f64
    }

    /// Bytes for `n` elements; `None` when `n` is not a whole number of blocks.
    pub fn bytes_for(self, n: u64) -> Option<u64> {
        if !n.is_multiple_of(self.block_size()) {
            return None;
        }
        (n / self.block_size()).checked_mul(self.type_size())
    }

    pub fn name(self) -> &'static str {
        use GgmlType::*;
        match self {
            F32 => "F32",
            F16 => "F16",
            Q4_0 => "Q4_0",
            Q4_1 => "Q4_1",
            Q5_0 => "Q5_0",
            Q5_1 => "Q5_1",
            Q8_0 => "Q8_0",
            Q8_1 => "Q8_1",
            Q2_K => "Q2_K",
            Q3_K => "Q3_K",
            Q4_K => "Q4_K",
            Q5_K => "Q5_K",
            Q6_K => "Q6_K",
            Q8_K => "Q8_K",
            IQ2_XXS => "IQ2_XXS",
            IQ2_XS => "IQ2_XS",
            IQ3_XXS => "IQ3_XXS",
            IQ1_S => "IQ1_S",
            IQ4_NL => "IQ4_NL",
            IQ3_S => "IQ3_S",
            IQ2_S => "IQ2_S",
            IQ4_XS => "IQ4_XS",
            I8 => "I8",
            I16 => "I16",
            I32 => "I32",
            I64 => "I64",
            F64 => "F64",
            IQ1_M => "IQ1_M",
            BF16 => "BF16",
            TQ1_0 => "TQ1_0",
            TQ2_0 => "TQ2_0",
            MXFP4 => "MXFP4",
        }
    }

    /// Types that tokscope's engines can execute (dequantize and dot).
    /// (The GPU engine runs all of them: `tokscope_gpu::matvec::entry_point` names each kernel.)
    pub const SUPPORTED: [GgmlType; 13] = [
        GgmlType::F32,
        GgmlType::F16,
        GgmlType::BF16,
        GgmlType::Q8_0,
        GgmlType::Q6_K,
        GgmlType::Q5_0,
        GgmlType::Q5_1,
        GgmlType::Q5_K,
        GgmlType::Q4_K,
        GgmlType::Q4_0,
        GgmlType::Q4_1,
        GgmlType::Q3_K,
        GgmlType::Q2_K,
    ];

    /// Block-quantized (values share per-block scales), as opposed to plain numbers.
    pub fn is_quantized(self) -> bool {
        self.block_size() > 1
    }

    pub fn is_supported(self) -> bool {
        Self::SUPPORTED.contains(&self)
    }

    /// Parses a name as written on the command line (`q4_1`, `Q8_0`, `f16`).
    pub fn from_name(name: &str) -> Option<Self> {
        TABLE
            .iter()
            .map(|row| row.0)
            .find(|t| t.name().eq_ignore_ascii_case(name))
    }
}

impl std::fmt::Display for GgmlType {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_round_trip_and_unknown_ids_are_rejected() {
        for row in TABLE {
            assert_eq!(GgmlType::from_id(row.1), Some(row.0));
            assert_eq!(GgmlType::from_name(row.0.name()), Some(row.0));
        }
        for removed in [4, 5, 31, 32, 33, 36, 37, 38, 40, 1000] {
            assert_eq!(GgmlType::from_id(removed), None);
        }
    }

    #[test]
    fn bits_per_weight_include_block_scales() {
        assert_eq!(GgmlType::Q4_0.bits_per_weight(), 4.5);
        assert_eq!(GgmlType::Q4_1.bits_per_weight(), 5.0);
        assert_eq!(GgmlType::Q8_0.bits_per_weight(), 8.5);
        assert_eq!(GgmlType::F16.bits_per_weight(), 16.0);
        assert_eq!(GgmlType::Q4_K.bits_per_weight(), 4.5);
    }

    #[test]
    fn bytes_for_requires_whole_blocks() {
        assert_eq!(GgmlType::Q4_1.bytes_for(64), Some(40));
        assert_eq!(GgmlType::Q4_1.bytes_for(33), None);
        assert_eq!(GgmlType::F32.bytes_for(3), Some(12));
    }
}
