//! Reader round-trips and one test per malformed-input case.

use super::*;
use crate::quant::quantize_row;

fn sample() -> GgufWriter {
    let mut w = GgufWriter::new();
    w.meta("general.architecture", Value::String("llama".into()))
        .meta("u8", Value::U8(7))
        .meta("i8", Value::I8(-7))
        .meta("u16", Value::U16(700))
        .meta("i16", Value::I16(-700))
        .meta("u32", Value::U32(70000))
        .meta("i32", Value::I32(-70000))
        .meta("f32", Value::F32(1.5))
        .meta("bool", Value::Bool(true))
        .meta("u64", Value::U64(1 << 40))
        .meta("i64", Value::I64(-(1 << 40)))
        .meta("f64", Value::F64(-2.25))
        .meta("empty", Value::Array(ValueType::U32, vec![]))
        .meta(
            "nested",
            Value::Array(
                ValueType::Array,
                vec![
                    Value::Array(
                        ValueType::String,
                        vec![Value::String("a".into()), Value::String("ü".into())],
                    ),
                    Value::Array(ValueType::I32, vec![Value::I32(1), Value::I32(-2)]),
                ],
            ),
        );
    let q = quantize_row(GgmlType::Q4_1, &[0.5; 64]).unwrap();
    w.tensor("a", &[64], GgmlType::Q4_1, q)
        .tensor("b", &[3, 2], GgmlType::F32, vec![0; 24])
        .tensor("c", &[32, 2], GgmlType::Q8_0, vec![1; 68]);
    w
}

#[test]
fn round_trip_every_value_type_and_tensor() {
    let w = sample();
    let bytes = w.to_bytes();
    let g = Gguf::parse(&bytes[..]).unwrap();
    assert_eq!(g.version, 3);
    assert_eq!(g.alignment, 32);
    assert_eq!(g.metadata(), &w.metadata[..]);
    assert_eq!(g.get_u64("u32").unwrap(), 70000);
    assert_eq!(g.get_f32("f64").unwrap(), -2.25);
    assert_eq!(g.get_str("general.architecture").unwrap(), "llama");
    assert_eq!(g.tensors().len(), 3);
    for (info, t) in g.tensors().iter().zip(&w.tensors) {
        assert_eq!(info.name, t.name);
        assert_eq!(info.dims, t.dims);
        assert_eq!(info.ty, t.ty);
        assert_eq!(g.tensor_data(info), &t.data[..]);
        assert_eq!(info.data.start as u64 % 32, 0);
    }
    assert_eq!(g.tensor("b").unwrap().rows(), 2);
    // Zero copy: tensor data points into the caller's buffer.
    let c = g.tensor("c").unwrap();
    assert_eq!(g.tensor_data(c).as_ptr(), bytes[c.data.clone()].as_ptr());
}

#[test]
fn version_2_and_custom_alignment() {
    let mut w = sample();
    w.version = 2;
    w.alignment = 64;
    w.meta("general.alignment", Value::U32(64));
    let bytes = w.to_bytes();
    let g = Gguf::parse(bytes).unwrap();
    assert_eq!(g.version, 2);
    assert_eq!(g.alignment, 64);
    assert!(g.tensors().iter().all(|t| t.data.start % 64 == 0));
}

fn err(bytes: &[u8]) -> GgufError {
    match Gguf::parse(bytes) {
        Ok(_) => panic!("parse accepted malformed input"),
        Err(e) => e,
    }
}

#[test]
fn bad_magic() {
    let mut bytes = sample().to_bytes();
    bytes[0] = b'X';
    assert!(matches!(err(&bytes), GgufError::BadMagic { .. }));
    assert!(matches!(err(b"GG"), GgufError::BadMagic { .. }));
    assert!(matches!(err(b""), GgufError::BadMagic { .. }));
}

#[test]
fn unsupported_and_big_endian_versions() {
    let mut bytes = sample().to_bytes();
    bytes[4..8].copy_from_slice(&1u32.to_le_bytes());
    assert_eq!(err(&bytes), GgufError::UnsupportedVersion { version: 1 });
    bytes[4..8].copy_from_slice(&3u32.to_be_bytes());
    assert!(matches!(err(&bytes), GgufError::BigEndian { .. }));
    let msg = GgufError::UnsupportedVersion { version: 9 }.to_string();
    assert!(msg.contains("offset 4"), "{msg}");
}

#[test]
fn truncation_anywhere_is_a_typed_error_never_a_panic() {
    let bytes = sample().to_bytes();
    for len in 0..bytes.len() {
        match Gguf::parse(&bytes[..len]) {
            Err(GgufError::BadMagic { .. })
            | Err(GgufError::Truncated { .. })
            | Err(GgufError::CountTooLarge { .. })
            | Err(GgufError::DataOutOfBounds { .. }) => {}
            other => panic!("truncated at {len}: {:?}", other.map(|_| ())),
        }
    }
}

#[test]
fn truncated_message_names_field_and_offset() {
    let bytes = sample().to_bytes();
    let e = err(&bytes[..240]);
    let msg = e.to_string();
    assert!(
        matches!(e, GgufError::Truncated { .. } | GgufError::CountTooLarge { .. }),
        "{msg}"
    );
    assert!(msg.contains("metadata key") && msg.contains("offset"), "{msg}");
    let e = err(&bytes[..bytes.len() - 1]);
    assert!(
        e.to_string().contains("\"c\"") && e.to_string().contains("truncated"),
        "{e}"
    );
}

#[test]
fn counts_that_cannot_fit_are_rejected_before_allocating() {
    let mut bytes = sample().to_bytes();
    // tensor_count at offset 8.
    bytes[8..16].copy_from_slice(&u64::MAX.to_le_bytes());
    assert!(matches!(err(&bytes), GgufError::CountTooLarge { offset: 8, .. }));
    let mut bytes = sample().to_bytes();
    bytes[16..24].copy_from_slice(&(1u64 << 60).to_le_bytes());
    assert!(matches!(err(&bytes), GgufError::CountTooLarge { offset: 16, .. }));
    // First key's string length at offset 24.
    let mut bytes = sample().to_bytes();
    bytes[24..32].copy_from_slice(&(1u64 << 50).to_le_bytes());
    assert!(matches!(err(&bytes), GgufError::CountTooLarge { offset: 24, .. }));
}

#[test]
fn huge_array_length_is_rejected() {
    let mut w = GgufWriter::new();
    w.meta("arr", Value::Array(ValueType::U64, vec![Value::U64(1)]));
    let mut bytes = w.to_bytes();
    // magic 4 + version 4 + counts 16 + key (8 + 3) + value type 4 + elem type 4 = 43.
    bytes[43..51].copy_from_slice(&(u64::MAX / 2).to_le_bytes());
    let e = err(&bytes);
    assert!(matches!(e, GgufError::CountTooLarge { offset: 43, .. }), "{e:?}");
    assert!(e.to_string().contains("\"arr\""));
}

#[test]
fn unknown_value_type_and_bad_bool_and_utf8() {
    let mut w = GgufWriter::new();
    w.meta("k", Value::U32(1));
    let mut bytes = w.to_bytes();
    // key "k" → value type at 24 + 8 + 1 = 33.
    bytes[33..37].copy_from_slice(&99u32.to_le_bytes());
    assert_eq!(
        err(&bytes),
        GgufError::UnknownValueType {
            key: "k".into(),
            offset: 33,
            ty: 99
        }
    );

    let mut w = GgufWriter::new();
    w.meta("k", Value::Bool(true));
    let mut bytes = w.to_bytes();
    bytes[37] = 2;
    assert!(matches!(err(&bytes), GgufError::WrongType { .. }));

    let mut w = GgufWriter::new();
    w.meta("k", Value::String("ab".into()));
    let mut bytes = w.to_bytes();
    bytes[45] = 0xFF;
    assert!(matches!(err(&bytes), GgufError::InvalidUtf8 { offset: 45, .. }));
}

#[test]
fn nesting_depth_is_bounded() {
    let mut v = Value::Array(ValueType::U8, vec![]);
    for _ in 0..MAX_ARRAY_NESTING + 1 {
        v = Value::Array(ValueType::Array, vec![v]);
    }
    let mut w = GgufWriter::new();
    w.meta("deep", v);
    assert!(matches!(err(&w.to_bytes()), GgufError::NestingTooDeep { .. }));
}

#[test]
fn duplicate_keys_and_tensors() {
    let mut w = GgufWriter::new();
    w.meta("k", Value::U8(1)).meta("k", Value::U8(2));
    assert!(matches!(err(&w.to_bytes()), GgufError::DuplicateKey { .. }));
    let mut w = GgufWriter::new();
    w.tensor("t", &[4], GgmlType::F32, vec![0; 16])
        .tensor("t", &[4], GgmlType::F32, vec![0; 16]);
    assert!(matches!(err(&w.to_bytes()), GgufError::DuplicateTensor { .. }));
}

#[test]
fn bad_alignment() {
    for value in [0u32, 3, 48] {
        let mut w = sample();
        w.meta("general.alignment", Value::U32(value));
        assert!(matches!(err(&w.to_bytes()), GgufError::BadAlignment { .. }), "{value}");
    }
}

/// Offset of the first tensor info's fields in `sample()` with only tensor "a" kept.
fn one_tensor(ty: GgmlType, dims: &[u64], data: Vec<u8>) -> (Vec<u8>, usize) {
    let mut w = GgufWriter::new();
    w.tensor("a", dims, ty, data);
    let bytes = w.to_bytes();
    (bytes, 24 + 8 + 1) // header, then the name "a": n_dims follows.
}

#[test]
fn unknown_tensor_type() {
    let (mut bytes, at) = one_tensor(GgmlType::F32, &[4], vec![0; 16]);
    let ty_at = at + 4 + 8;
    bytes[ty_at..ty_at + 4].copy_from_slice(&4u32.to_le_bytes()); // Q4_2, removed from ggml
    let e = err(&bytes);
    assert_eq!(
        e,
        GgufError::UnknownTensorType {
            name: "a".into(),
            offset: ty_at as u64,
            ty: 4
        }
    );
}

#[test]
fn bad_dimension_counts_and_sizes() {
    let (mut bytes, at) = one_tensor(GgmlType::F32, &[4], vec![0; 16]);
    bytes[at..at + 4].copy_from_slice(&0u32.to_le_bytes());
    assert!(matches!(err(&bytes), GgufError::BadDimCount { n_dims: 0, .. }));
    bytes[at..at + 4].copy_from_slice(&5u32.to_le_bytes());
    assert!(matches!(err(&bytes), GgufError::BadDimCount { n_dims: 5, .. }));
    let (bytes, _) = one_tensor(GgmlType::F32, &[4, 0], vec![]);
    assert!(matches!(err(&bytes), GgufError::BadDims { .. }));
    let (bytes, _) = one_tensor(GgmlType::F32, &[1 << 40, 1 << 40], vec![]);
    assert!(matches!(err(&bytes), GgufError::BadDims { .. }));
}

#[test]
fn element_count_must_match_block_size() {
    let (bytes, _) = one_tensor(GgmlType::Q4_1, &[48], vec![0; 40]);
    let e = err(&bytes);
    assert!(
        matches!(
            e,
            GgufError::BlockMismatch {
                ne0: 48,
                block_size: 32,
                ..
            }
        ),
        "{e:?}"
    );
}

#[test]
fn misaligned_out_of_bounds_and_overlapping_data() {
    let mut w = GgufWriter::new();
    w.tensor("a", &[8], GgmlType::F32, vec![0; 32])
        .tensor("b", &[8], GgmlType::F32, vec![0; 32]);
    let bytes = w.to_bytes();
    // Offset field of tensor "b": header 24, "a" info (8+1+4+8+4+8 = 33), "b" name 9 + 4 + 8 + 4.
    let off_b = 24 + 33 + 9 + 4 + 8 + 4;
    assert_eq!(u64::from_le_bytes(bytes[off_b..off_b + 8].try_into().unwrap()), 32);

    let mut bad = bytes.clone();
    bad[off_b..off_b + 8].copy_from_slice(&4u64.to_le_bytes());
    assert!(matches!(err(&bad), GgufError::Misaligned { offset: 4, .. }));

    let mut bad = bytes.clone();
    bad[off_b..off_b + 8].copy_from_slice(&0u64.to_le_bytes());
    assert!(matches!(err(&bad), GgufError::Overlap { .. }));

    let mut bad = bytes.clone();
    bad[off_b..off_b + 8].copy_from_slice(&(u64::MAX - 31).to_le_bytes());
    assert!(matches!(err(&bad), GgufError::DataOutOfBounds { .. }));

    let mut bad = bytes.clone();
    bad[off_b..off_b + 8].copy_from_slice(&(1u64 << 20).to_le_bytes());
    assert!(matches!(err(&bad), GgufError::DataOutOfBounds { .. }));
}

#[test]
fn missing_and_wrong_typed_keys() {
    let bytes = sample().to_bytes();
    let g = Gguf::parse(&bytes[..]).unwrap();
    assert_eq!(g.get_u64("nope"), Err(GgufError::MissingKey { key: "nope".into() }));
    let e = g.get_u64("general.architecture").unwrap_err();
    assert!(matches!(e, GgufError::WrongType { .. }));
    assert!(g.get_u64("i32").is_err(), "negative values are not u64");
    assert!(g.get_str_array("nested").is_err());
    assert_eq!(g.opt_u64("absent"), Ok(None));
    assert!(matches!(g.require_tensor("zz"), Err(GgufError::MissingTensor { .. })));
}

#[test]
fn the_metadata_parses_from_a_prefix_and_a_shorter_one_asks_for_more() {
    let w = sample();
    let bytes = w.to_bytes();
    let mut first_ok = None;
    for n in 0..=bytes.len() {
        match Gguf::parse_metadata(&bytes[..n]) {
            Ok(g) => {
                assert_eq!(g.metadata(), &w.metadata[..], "prefix of {n} bytes");
                assert!(g.tensors().is_empty());
                first_ok.get_or_insert(n);
            }
            Err(e) => {
                assert!(
                    first_ok.is_none(),
                    "{n} bytes failed after a shorter prefix parsed: {e}"
                );
                assert!(e.wants_more_bytes() || n < 8, "{n} bytes: {e}");
            }
        }
    }
    let n = first_ok.unwrap();
    let data_start = Gguf::parse(&bytes[..]).unwrap().data_offset as usize;
    assert!(
        n < data_start,
        "the metadata ({n} bytes) ends before the tensor data ({data_start})"
    );
    assert!(Gguf::parse(&bytes[..n]).is_err(), "the whole parse needs the tensors");
}
