//! Typed errors of the GGUF reader. Every message names the field and the byte offset where the
//! file stopped making sense, because a user looking at a broken download needs to know *where*.

use thiserror::Error;

#[derive(Debug, Clone, PartialEq, Error)]
pub enum GgufError {
    #[error("not a GGUF file: the first 4 bytes are {found:?}, expected \"GGUF\"")]
    BadMagic { found: Vec<u8> },
    #[error("big-endian GGUF files are not supported (version field at offset 4 reads {raw:#010x})")]
    BigEndian { raw: u32 },
    #[error("unsupported GGUF version {version} (field at offset 4); tokscope reads versions 2 and 3")]
    UnsupportedVersion { version: u32 },
    #[error("file truncated: reading {field} at byte offset {offset} needs {needed} bytes, only {available} left")]
    Truncated {
        field: String,
        offset: u64,
        needed: u64,
        available: u64,
    },
    #[error(
        "{field} at byte offset {offset} claims {count} {what}, which cannot fit in the {remaining} bytes left in the file"
    )]
    CountTooLarge {
        field: String,
        offset: u64,
        count: u64,
        what: &'static str,
        remaining: u64,
    },
    #[error("{field} at byte offset {offset} is not valid UTF-8")]
    InvalidUtf8 { field: String, offset: u64 },
    #[error("metadata key {key:?} at byte offset {offset} has unknown value type {ty}")]
    UnknownValueType { key: String, offset: u64, ty: u32 },
    #[error("metadata key {key:?} at byte offset {offset}: arrays nested deeper than {limit} levels")]
    NestingTooDeep { key: String, offset: u64, limit: usize },
    #[error("metadata key {key:?} at byte offset {offset} appears twice")]
    DuplicateKey { key: String, offset: u64 },
    #[error("general.alignment = {value} is not a power of two between 1 and 2^30")]
    BadAlignment { value: u64 },
    #[error("tensor {name:?} (info at byte offset {offset}) has unknown tensor type id {ty}")]
    UnknownTensorType { name: String, offset: u64, ty: u32 },
    #[error("tensor {name:?} (info at byte offset {offset}) has {n_dims} dimensions; GGUF allows 1 to 4")]
    BadDimCount { name: String, offset: u64, n_dims: u32 },
    #[error("tensor {name:?} (info at byte offset {offset}) has a zero or overflowing dimension {dims:?}")]
    BadDims { name: String, offset: u64, dims: Vec<u64> },
    #[error("tensor {name:?}: first dimension {ne0} is not a multiple of {ty}'s block size {block_size}")]
    BlockMismatch {
        name: String,
        ty: &'static str,
        ne0: u64,
        block_size: u64,
    },
    #[error("tensor {name:?}: data offset {offset} is not a multiple of the alignment {alignment}")]
    Misaligned { name: String, offset: u64, alignment: u64 },
    #[error(
        "tensor {name:?}: data spans bytes {start}..{end} of the file, but the file has only {file_len} bytes (truncated download?)"
    )]
    DataOutOfBounds {
        name: String,
        start: u64,
        end: u64,
        file_len: u64,
    },
    #[error("tensors {first:?} and {second:?} overlap in the data section")]
    Overlap { first: String, second: String },
    #[error("tensor name {name:?} (info at byte offset {offset}) appears twice")]
    DuplicateTensor { name: String, offset: u64 },
    #[error("missing required metadata key {key:?}")]
    MissingKey { key: String },
    #[error("metadata key {key:?} is {found}, expected {expected}")]
    WrongType {
        key: String,
        found: String,
        expected: &'static str,
    },
    #[error("missing required tensor {name:?}")]
    MissingTensor { name: String },
}

impl GgufError {
    /// The bytes ran out before the structure did: a prefix of a longer file (a range read of
    /// its header) may parse once more of it is read. On a whole file this is a real error.
    pub fn wants_more_bytes(&self) -> bool {
        matches!(self, GgufError::Truncated { .. } | GgufError::CountTooLarge { .. })
    }
}
