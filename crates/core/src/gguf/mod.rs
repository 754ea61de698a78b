//! GGUF reader: validated, zero-copy views over one byte buffer.
//!
//! Format source: the GGUF specification (ggml/docs/gguf.md). Versions 2 and 3 share one layout
//! (v1 used 32-bit counts and is long gone). The parser reads the header, metadata and tensor
//! infos into small owned structures and keeps the tensor data where it is: a 100 MB model handed
//! over as a `Vec<u8>` or an `ArrayBuffer` copy is never copied again.

mod cursor;
mod error;
mod value;
mod writer;

pub use error::GgufError;
pub use value::{Value, ValueType};
pub use writer::{GgufWriter, WriterTensor};

use crate::quant::GgmlType;
use cursor::Cursor;
use std::collections::HashMap;
use std::ops::Range;

/// "GGUF" as stored in the first four bytes.
pub const MAGIC: &[u8; 4] = b"GGUF";
/// Alignment of the data section when `general.alignment` is absent (spec: 32).
pub const DEFAULT_ALIGNMENT: u64 = 32;
/// Deepest array nesting accepted; deeper files are malformed or hostile (stack safety).
pub const MAX_ARRAY_NESTING: usize = 8;

#[derive(Debug, Clone, PartialEq)]
pub struct TensorInfo {
    pub name: String,
    /// ggml order: `dims[0]` is the innermost (contiguous) dimension, e.g. the row length.
    pub dims: Vec<u64>,
    pub ty: GgmlType,
    /// Absolute byte range of the tensor's data in the file.
    pub data: Range<usize>,
    /// Where this tensor's info record starts, for error messages.
    pub info_offset: u64,
}

impl TensorInfo {
    pub fn n_elements(&self) -> u64 {
        self.dims.iter().product()
    }

    pub fn n_bytes(&self) -> u64 {
        (self.data.end - self.data.start) as u64
    }

    /// Rows of a 2-D weight (product of the outer dimensions).
    pub fn rows(&self) -> u64 {
        self.dims.iter().skip(1).product()
    }
}

/// A parsed GGUF over any byte container (`Vec<u8>`, `&[u8]`, a memory map).
pub struct Gguf<B> {
    bytes: B,
    pub version: u32,
    pub alignment: u64,
    /// Absolute offset of the data section.
    pub data_offset: u64,
    metadata: Vec<(String, Value)>,
    metadata_index: HashMap<String, usize>,
    tensors: Vec<TensorInfo>,
    tensor_index: HashMap<String, usize>,
}

impl<B: AsRef<[u8]>> Gguf<B> {
    /// Parses and validates the whole file structure; tensor data is bounds-checked, not read.
    pub fn parse(bytes: B) -> Result<Self, GgufError> {
        Self::from_header(parse_header(bytes.as_ref(), Sections::Whole)?, bytes)
    }

    /// The metadata alone, from a prefix of the file that holds it (the tensor list and data are
    /// not read): enough for the tokenizer, whose keys are a few MB at the front of a model of
    /// hundreds. A prefix that stops inside the metadata is [`GgufError::Truncated`]: read
    /// more and try again.
    pub fn parse_metadata(bytes: B) -> Result<Self, GgufError> {
        Self::from_header(parse_header(bytes.as_ref(), Sections::Metadata)?, bytes)
    }

    fn from_header(header: Header, bytes: B) -> Result<Self, GgufError> {
        Ok(Self {
            bytes,
            version: header.version,
            alignment: header.alignment,
            data_offset: header.data_offset,
            metadata_index: index_of(header.metadata.iter().map(|(k, _)| k)),
            metadata: header.metadata,
            tensor_index: index_of(header.tensors.iter().map(|t| &t.name)),
            tensors: header.tensors,
        })
    }

    pub fn bytes(&self) -> &[u8] {
        self.bytes.as_ref()
    }

    pub fn file_len(&self) -> u64 {
        self.bytes.as_ref().len() as u64
    }

    pub fn metadata(&self) -> &[(String, Value)] {
        &self.metadata
    }

    pub fn tensors(&self) -> &[TensorInfo] {
        &self.tensors
    }

    pub fn get(&self, key: &str) -> Option<&Value> {
        self.metadata_index.get(key).map(|&i| &self.metadata[i].1)
    }

    pub fn tensor(&self, name: &str) -> Option<&TensorInfo> {
        self.tensor_index.get(name).map(|&i| &self.tensors[i])
    }

    pub fn require_tensor(&self, name: &str) -> Result<&TensorInfo, GgufError> {
        self.tensor(name)
            .ok_or_else(|| GgufError::MissingTensor { name: name.to_string() })
    }

    /// The bytes of one tensor, borrowed from the file buffer.
    pub fn tensor_data(&self, info: &TensorInfo) -> &[u8] {
        &self.bytes.as_ref()[info.data.clone()]
    }

    fn require(&self, key: &str) -> Result<&Value, GgufError> {
        self.get(key)
            .ok_or_else(|| GgufError::MissingKey { key: key.to_string() })
    }

    fn wrong_type(&self, key: &str, value: &Value, expected: &'static str) -> GgufError {
        GgufError::WrongType {
            key: key.to_string(),
            found: value.describe(),
            expected,
        }
    }

    /// A required non-negative integer of any stored width that fits in `u64`.
    pub fn get_u64(&self, key: &str) -> Result<u64, GgufError> {
        let value = self.require(key)?;
        value
            .as_int()
            .and_then(|v| u64::try_from(v).ok())
            .ok_or_else(|| self.wrong_type(key, value, "a non-negative integer"))
    }

    /// An optional integer: absent is `Ok(None)`, present with the wrong type is an error.
    pub fn opt_u64(&self, key: &str) -> Result<Option<u64>, GgufError> {
        match self.get(key) {
            None => Ok(None),
            Some(_) => self.get_u64(key).map(Some),
        }
    }

    pub fn get_f32(&self, key: &str) -> Result<f32, GgufError> {
        let value = self.require(key)?;
        value
            .as_f64()
            .map(|v| v as f32)
            .ok_or_else(|| self.wrong_type(key, value, "a number"))
    }

    pub fn opt_f32(&self, key: &str) -> Result<Option<f32>, GgufError> {
        match self.get(key) {
            None => Ok(None),
            Some(_) => self.get_f32(key).map(Some),
        }
    }

    pub fn get_str(&self, key: &str) -> Result<&str, GgufError> {
        let value = self.require(key)?;
        value.as_str().ok_or_else(|| self.wrong_type(key, value, "a string"))
    }

    pub fn opt_str(&self, key: &str) -> Result<Option<&str>, GgufError> {
        match self.get(key) {
            None => Ok(None),
            Some(_) => self.get_str(key).map(Some),
        }
    }

    pub fn opt_bool(&self, key: &str) -> Result<Option<bool>, GgufError> {
        match self.get(key) {
            None => Ok(None),
            Some(value) => value
                .as_bool()
                .map(Some)
                .ok_or_else(|| self.wrong_type(key, value, "a bool")),
        }
    }

    pub fn get_array(&self, key: &str) -> Result<&[Value], GgufError> {
        let value = self.require(key)?;
        value.as_array().ok_or_else(|| self.wrong_type(key, value, "an array"))
    }

    /// A required array of strings, borrowed.
    pub fn get_str_array(&self, key: &str) -> Result<Vec<&str>, GgufError> {
        let values = self.get_array(key)?;
        values
            .iter()
            .map(|v| v.as_str())
            .collect::<Option<Vec<_>>>()
            .ok_or_else(|| self.wrong_type(key, self.require(key).unwrap(), "an array of strings"))
    }

    /// An optional array of integers (e.g. `tokenizer.ggml.token_type`).
    pub fn opt_int_array(&self, key: &str) -> Result<Option<Vec<i64>>, GgufError> {
        let Some(value) = self.get(key) else {
            return Ok(None);
        };
        value
            .as_array()
            .and_then(|values| {
                values
                    .iter()
                    .map(|v| v.as_int().and_then(|i| i64::try_from(i).ok()))
                    .collect::<Option<Vec<_>>>()
            })
            .map(Some)
            .ok_or_else(|| self.wrong_type(key, value, "an array of integers"))
    }

    /// An optional array of numbers (e.g. `tokenizer.ggml.scores`).
    pub fn opt_f32_array(&self, key: &str) -> Result<Option<Vec<f32>>, GgufError> {
        let Some(value) = self.get(key) else {
            return Ok(None);
        };
        value
            .as_array()
            .and_then(|values| {
                values
                    .iter()
                    .map(|v| v.as_f64().map(|f| f as f32))
                    .collect::<Option<Vec<_>>>()
            })
            .map(Some)
            .ok_or_else(|| self.wrong_type(key, value, "an array of numbers"))
    }
}

fn index_of<'a>(names: impl Iterator<Item = &'a String>) -> HashMap<String, usize> {
    names.enumerate().map(|(i, n)| (n.clone(), i)).collect()
}

struct Header {
    version: u32,
    alignment: u64,
    data_offset: u64,
    metadata: Vec<(String, Value)>,
    tensors: Vec<TensorInfo>,
}

/// Smallest possible metadata entry: key length (8) + value type (4) + a one-byte value.
const MIN_KV_SIZE: u64 = 13;
/// Smallest possible tensor info: name length (8) + n_dims (4) + one dim (8) + type (4) + offset (8).
const MIN_TENSOR_INFO_SIZE: u64 = 32;

/// How much of the header to read.
#[derive(PartialEq)]
enum Sections {
    Whole,
    Metadata,
}

fn parse_header(bytes: &[u8], sections: Sections) -> Result<Header, GgufError> {
    let mut c = Cursor::new(bytes);
    let magic = c.take(4, &|| "magic".into()).map_err(|_| GgufError::BadMagic {
        found: bytes[..bytes.len().min(4)].to_vec(),
    })?;
    if magic != MAGIC {
        return Err(GgufError::BadMagic { found: magic.to_vec() });
    }
    let version = c.u32(&|| "version".into())?;
    if version.swap_bytes() == 2 || version.swap_bytes() == 3 {
        return Err(GgufError::BigEndian { raw: version });
    }
    if version != 2 && version != 3 {
        return Err(GgufError::UnsupportedVersion { version });
    }
    let tensor_count = c.count(MIN_TENSOR_INFO_SIZE, "tensors", &|| "tensor_count".into())?;
    let kv_count = c.count(MIN_KV_SIZE, "metadata entries", &|| "metadata_kv_count".into())?;

    let mut metadata = Vec::with_capacity(kv_count as usize);
    let mut seen = HashMap::new();
    for i in 0..kv_count {
        let offset = c.offset();
        let key = c.string(&|| format!("metadata key #{i}"))?;
        if seen.insert(key.clone(), ()).is_some() {
            return Err(GgufError::DuplicateKey { key, offset });
        }
        let ty_offset = c.offset();
        let ty_id = c.u32(&|| format!("value type of metadata key {key:?}"))?;
        let ty = ValueType::from_id(ty_id).ok_or_else(|| GgufError::UnknownValueType {
            key: key.clone(),
            offset: ty_offset,
            ty: ty_id,
        })?;
        let value = read_value(&mut c, ty, &key, 0)?;
        metadata.push((key, value));
    }

    let alignment = match metadata.iter().find(|(k, _)| k == "general.alignment") {
        None => DEFAULT_ALIGNMENT,
        Some((_, v)) => {
            let value = v.as_int().unwrap_or(0);
            if value <= 0 || value > 1 << 30 || (value & (value - 1)) != 0 {
                return Err(GgufError::BadAlignment {
                    value: value.max(0) as u64,
                });
            }
            value as u64
        }
    };
    if sections == Sections::Metadata {
        return Ok(Header {
            version,
            alignment,
            data_offset: 0,
            metadata,
            tensors: Vec::new(),
        });
    }

    let mut raw_tensors = Vec::with_capacity(tensor_count as usize);
    for i in 0..tensor_count {
        let info_offset = c.offset();
        let name = c.string(&|| format!("name of tensor #{i}"))?;
        let dims_offset = c.offset();
        let n_dims = c.u32(&|| format!("n_dims of tensor {name:?}"))?;
        if n_dims == 0 || n_dims > 4 {
            return Err(GgufError::BadDimCount {
                name,
                offset: dims_offset,
                n_dims,
            });
        }
        let mut dims = Vec::with_capacity(n_dims as usize);
        for d in 0..n_dims {
            dims.push(c.u64(&|| format!("dimension {d} of tensor {name:?}"))?);
        }
        let ty_offset = c.offset();
        let ty_id = c.u32(&|| format!("type of tensor {name:?}"))?;
        let ty = GgmlType::from_id(ty_id).ok_or_else(|| GgufError::UnknownTensorType {
            name: name.clone(),
            offset: ty_offset,
            ty: ty_id,
        })?;
        let rel_offset = c.u64(&|| format!("data offset of tensor {name:?}"))?;
        raw_tensors.push((name, dims, ty, rel_offset, info_offset));
    }

    let data_offset = c.offset().next_multiple_of(alignment);
    let file_len = bytes.len() as u64;
    let mut tensors = Vec::with_capacity(raw_tensors.len());
    let mut names = HashMap::new();
    for (name, dims, ty, rel_offset, info_offset) in raw_tensors {
        if names.insert(name.clone(), ()).is_some() {
            return Err(GgufError::DuplicateTensor {
                name,
                offset: info_offset,
            });
        }
        let n_elements = dims
            .iter()
            .try_fold(1u64, |acc, &d| if d == 0 { None } else { acc.checked_mul(d) });
        let Some(n_elements) = n_elements else {
            return Err(GgufError::BadDims {
                name,
                offset: info_offset,
                dims,
            });
        };
        if dims[0] % ty.block_size() != 0 {
            return Err(GgufError::BlockMismatch {
                name,
                ty: ty.name(),
                ne0: dims[0],
                block_size: ty.block_size(),
            });
        }
        if rel_offset % alignment != 0 {
            return Err(GgufError::Misaligned {
                name,
                offset: rel_offset,
                alignment,
            });
        }
        let n_bytes = ty.bytes_for(n_elements).ok_or_else(|| GgufError::BadDims {
            name: name.clone(),
            offset: info_offset,
            dims: dims.clone(),
        })?;
        let start = data_offset.checked_add(rel_offset);
        let end = start.and_then(|s| s.checked_add(n_bytes));
        match (start, end) {
            (Some(start), Some(end)) if end <= file_len => tensors.push(TensorInfo {
                name,
                dims,
                ty,
                data: start as usize..end as usize,
                info_offset,
            }),
            _ => {
                return Err(GgufError::DataOutOfBounds {
                    name,
                    start: start.unwrap_or(u64::MAX),
                    end: end.unwrap_or(u64::MAX),
                    file_len,
                });
            }
        }
    }

    let mut by_start: Vec<&TensorInfo> = tensors.iter().filter(|t| t.n_bytes() > 0).collect();
    by_start.sort_by_key(|t| t.data.start);
    for pair in by_start.windows(2) {
        if pair[1].data.start < pair[0].data.end {
            return Err(GgufError::Overlap {
                first: pair[0].name.clone(),
                second: pair[1].name.clone(),
            });
        }
    }

    Ok(Header {
        version,
        alignment,
        data_offset,
        metadata,
        tensors,
    })
}

fn read_value(c: &mut Cursor, ty: ValueType, key: &str, depth: usize) -> Result<Value, GgufError> {
    let field = || format!("value of metadata key {key:?}");
    Ok(match ty {
        ValueType::U8 => Value::U8(c.u8(&field)?),
        ValueType::I8 => Value::I8(c.u8(&field)? as i8),
        ValueType::U16 => Value::U16(u16::from_le_bytes(c.array(&field)?)),
        ValueType::I16 => Value::I16(i16::from_le_bytes(c.array(&field)?)),
        ValueType::U32 => Value::U32(c.u32(&field)?),
        ValueType::I32 => Value::I32(i32::from_le_bytes(c.array(&field)?)),
        ValueType::F32 => Value::F32(f32::from_le_bytes(c.array(&field)?)),
        ValueType::U64 => Value::U64(c.u64(&field)?),
        ValueType::I64 => Value::I64(i64::from_le_bytes(c.array(&field)?)),
        ValueType::F64 => Value::F64(f64::from_le_bytes(c.array(&field)?)),
        ValueType::Bool => {
            let offset = c.offset();
            match c.u8(&field)? {
                0 => Value::Bool(false),
                1 => Value::Bool(true),
                other => {
                    return Err(GgufError::WrongType {
                        key: key.to_string(),
                        found: format!("byte {other} at offset {offset}"),
                        expected: "a bool (0 or 1)",
                    });
                }
            }
        }
        ValueType::String => Value::String(c.string(&field)?),
        ValueType::Array => {
            let offset = c.offset();
            if depth >= MAX_ARRAY_NESTING {
                return Err(GgufError::NestingTooDeep {
                    key: key.to_string(),
                    offset,
                    limit: MAX_ARRAY_NESTING,
                });
            }
            let elem_id = c.u32(&|| format!("array element type of metadata key {key:?}"))?;
            let elem = ValueType::from_id(elem_id).ok_or_else(|| GgufError::UnknownValueType {
                key: key.to_string(),
                offset,
                ty: elem_id,
            })?;
            let count = c.count(elem.min_encoded_size(), "array elements", &|| {
                format!("array length of metadata key {key:?}")
            })?;
            let mut values = Vec::with_capacity(count as usize);
            for _ in 0..count {
                values.push(read_value(c, elem, key, depth + 1)?);
            }
            Value::Array(elem, values)
        }
    })
}

#[cfg(test)]
mod tests;
