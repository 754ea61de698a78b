//! GGUF writer: builds files byte for byte as the spec lays them out. Tests use it to make tiny
//! models and malformed files; the precision dial uses it to re-encode a loaded model.

use super::{DEFAULT_ALIGNMENT, MAGIC, Value};
use crate::quant::GgmlType;

pub struct WriterTensor {
    pub name: String,
    pub dims: Vec<u64>,
    pub ty: GgmlType,
    pub data: Vec<u8>,
}

pub struct GgufWriter {
    pub version: u32,
    pub alignment: u64,
    pub metadata: Vec<(String, Value)>,
    pub tensors: Vec<WriterTensor>,
}

impl Default for GgufWriter {
    fn default() -> Self {
        Self {
            version: 3,
            alignment: DEFAULT_ALIGNMENT,
            metadata: Vec::new(),
            tensors: Vec::new(),
        }
    }
}

impl GgufWriter {
    pub fn new() -> Self {
        Self::default()
    }

    pub fn meta(&mut self, key: &str, value: Value) -> &mut Self {
        self.metadata.push((key.to_string(), value));
        self
    }

    pub fn tensor(&mut self, name: &str, dims: &[u64], ty: GgmlType, data: Vec<u8>) -> &mut Self {
        self.tensors.push(WriterTensor {
            name: name.to_string(),
            dims: dims.to_vec(),
            ty,
            data,
        });
        self
    }

    /// The value of metadata key `key`, to change before writing (malformed files, tests).
    pub fn meta_mut(&mut self, key: &str) -> Option<&mut Value> {
        self.metadata.iter_mut().find(|(k, _)| k == key).map(|(_, v)| v)
    }

    /// The tensor named `name`, to change before writing (malformed files, tests).
    pub fn tensor_mut(&mut self, name: &str) -> Option<&mut WriterTensor> {
        self.tensors.iter_mut().find(|t| t.name == name)
    }

    /// Serializes header, metadata, tensor infos, padding and data. `general.alignment`, when set
    /// in the metadata, must agree with `self.alignment` (the writer does not second-guess it).
    pub fn to_bytes(&self) -> Vec<u8> {
        let sizes: Vec<usize> = self.tensors.iter().map(|t| t.data.len()).collect();
        let (mut out, offsets) = self.header(&sizes);
        let data_start = out.len();
        for (t, off) in self.tensors.iter().zip(offsets) {
            out.resize(data_start + off, 0);
            out.extend_from_slice(&t.data);
        }
        out
    }

    /// Everything before the tensor data (header, metadata, tensor infos, padding) when tensor
    /// `i` holds `sizes[i]` bytes, and each tensor's offset from the data's start. Lets a large
    /// file be written a tensor at a time (`synthetic::shaped`) instead of whole in memory.
    pub fn header(&self, sizes: &[usize]) -> (Vec<u8>, Vec<usize>) {
        assert_eq!(sizes.len(), self.tensors.len(), "one size per tensor");
        let align = self.alignment as usize;
        let mut out = Vec::new();
        out.extend_from_slice(MAGIC);
        out.extend_from_slice(&self.version.to_le_bytes());
        out.extend_from_slice(&(self.tensors.len() as u64).to_le_bytes());
        out.extend_from_slice(&(self.metadata.len() as u64).to_le_bytes());
        for (key, value) in &self.metadata {
            write_string(&mut out, key);
            out.extend_from_slice(&(value.value_type() as u32).to_le_bytes());
            write_value(&mut out, value);
        }
        let mut offset = 0usize;
        let mut offsets = Vec::with_capacity(self.tensors.len());
        for (t, size) in self.tensors.iter().zip(sizes) {
            write_string(&mut out, &t.name);
            out.extend_from_slice(&(t.dims.len() as u32).to_le_bytes());
            for d in &t.dims {
                out.extend_from_slice(&d.to_le_bytes());
            }
            out.extend_from_slice(&t.ty.id().to_le_bytes());
            out.extend_from_slice(&(offset as u64).to_le_bytes());
            offsets.push(offset);
            offset = (offset + size).next_multiple_of(align);
        }
        out.resize(out.len().next_multiple_of(align), 0);
        (out, offsets)
    }
}

fn write_string(out: &mut Vec<u8>, s: &str) {
    out.extend_from_slice(&(s.len() as u64).to_le_bytes());
    out.extend_from_slice(s.as_bytes());
}

fn write_value(out: &mut Vec<u8>, value: &Value) {
    match value {
        Value::U8(v) => out.push(*v),
        Value::I8(v) => out.push(*v as u8),
        Value::U16(v) => out.extend_from_slice(&v.to_le_bytes()),
        Value::I16(v) => out.extend_from_slice(&v.to_le_bytes()),
        Value::U32(v) => out.extend_from_slice(&v.to_le_bytes()),
        Value::I32(v) => out.extend_from_slice(&v.to_le_bytes()),
        Value::F32(v) => out.extend_from_slice(&v.to_le_bytes()),
        Value::Bool(v) => out.push(*v as u8),
        Value::String(s) => write_string(out, s),
        Value::Array(ty, values) => {
            out.extend_from_slice(&(*ty as u32).to_le_bytes());
            out.extend_from_slice(&(values.len() as u64).to_le_bytes());
            for v in values {
                write_value(out, v);
            }
        }
        Value::U64(v) => out.extend_from_slice(&v.to_le_bytes()),
        Value::I64(v) => out.extend_from_slice(&v.to_le_bytes()),
        Value::F64(v) => out.extend_from_slice(&v.to_le_bytes()),
    }
}
