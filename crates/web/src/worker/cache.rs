//! The model cache: downloaded GGUFs kept in the browser's Cache Storage under a key made of
//! their size and SHA-256, with a small index from source URL to key, so a reload does not
//! download again. Every failure here is a note, never fatal: the model still loads.

use super::js::{describe, scope};
use crate::protocol::CachedModel;
use sha2::{Digest, Sha256};
use wasm_bindgen::{JsCast, JsValue};
use wasm_bindgen_futures::JsFuture;

const CACHE: &str = "tokscope-models-v1";
const PREFIX: &str = "/__tokscope_cache__/";
const INDEX: &str = "/__tokscope_cache__/index.json";

async fn open() -> Result<web_sys::Cache, String> {
    let caches = scope()
        .caches()
        .map_err(|e| format!("this browser offers no Cache Storage here: {}", describe(&e)))?;
    let c = JsFuture::from(caches.open(CACHE))
        .await
        .map_err(|e| format!("the model cache cannot be opened: {}", describe(&e)))?;
    Ok(c.unchecked_into())
}

async fn matched(cache: &web_sys::Cache, key: &str) -> Result<Option<web_sys::Response>, String> {
    let r = JsFuture::from(cache.match_with_str(key))
        .await
        .map_err(|e| describe(&e))?;
    Ok((!r.is_undefined()).then(|| r.unchecked_into()))
}

async fn body(resp: web_sys::Response) -> Result<Vec<u8>, String> {
    let buf = JsFuture::from(resp.array_buffer().map_err(|e| describe(&e))?)
        .await
        .map_err(|e| describe(&e))?;
    Ok(js_sys::Uint8Array::new(&buf).to_vec())
}

async fn put(cache: &web_sys::Cache, key: &str, bytes: &[u8], content_type: &str) -> Result<(), String> {
    let init = web_sys::ResponseInit::new();
    let headers = web_sys::Headers::new().map_err(|e| describe(&e))?;
    let _ = headers.set("content-type", content_type);
    init.set_headers(&headers);
    let array = js_sys::Uint8Array::from(bytes);
    let resp = web_sys::Response::new_with_opt_buffer_source_and_init(Some(&array), &init).map_err(|e| describe(&e))?;
    JsFuture::from(cache.put_with_str(key, &resp)).await.map_err(|e| {
        let why = describe(&e);
        if why.contains("Quota") || why.contains("quota") {
            format!("the browser's storage quota is full ({why}); forget a cached model to make room")
        } else {
            why
        }
    })?;
    Ok(())
}

pub async fn list() -> Result<Vec<CachedModel>, String> {
    list_in(&open().await?).await
}

async fn list_in(cache: &web_sys::Cache) -> Result<Vec<CachedModel>, String> {
    match matched(cache, INDEX).await? {
        Some(r) => {
            let bytes = body(r).await?;
            serde_json::from_slice(&bytes).map_err(|e| format!("the cache index is unreadable: {e}"))
        }
        None => Ok(Vec::new()),
    }
}

async fn write_index(cache: &web_sys::Cache, entries: &[CachedModel]) -> Result<(), String> {
    let json = serde_json::to_vec(entries).expect("index serializes");
    put(cache, INDEX, &json, "application/json").await
}

/// The cached bytes of `source`, if a complete copy is there.
pub async fn lookup(source: &str) -> Result<Option<Vec<u8>>, String> {
    let cache = open().await?;
    let Some(entry) = list_in(&cache).await?.into_iter().find(|e| e.source == source) else {
        return Ok(None);
    };
    let Some(resp) = matched(&cache, &entry.key).await? else {
        return Ok(None);
    };
    let bytes = body(resp).await?;
    Ok((bytes.len() as u64 == entry.bytes).then_some(bytes))
}

/// The cache key of some bytes: size and SHA-256, so one file fetched from two URLs is kept once.
pub fn key_of(bytes: &[u8]) -> String {
    let hash = Sha256::digest(bytes);
    let hex: String = hash.iter().map(|b| format!("{b:02x}")).collect();
    format!("{PREFIX}{}-{hex}", bytes.len())
}

pub async fn store(source: &str, bytes: &[u8]) -> Result<(), String> {
    let cache = open().await?;
    let key = key_of(bytes);
    if matched(&cache, &key).await?.is_none() {
        put(&cache, &key, bytes, "application/octet-stream").await?;
    }
    let mut entries = list_in(&cache).await.unwrap_or_default();
    entries.retain(|e| e.source != source);
    entries.push(CachedModel {
        key,
        source: source.to_string(),
        bytes: bytes.len() as u64,
    });
    write_index(&cache, &entries).await
}

/// Deletes one entry (by key) or everything.
pub async fn forget(key: Option<&str>) -> Result<(), String> {
    let cache = open().await?;
    let mut entries = list_in(&cache).await.unwrap_or_default();
    let (gone, kept): (Vec<_>, Vec<_>) = entries.drain(..).partition(|e| key.is_none_or(|k| e.key == k));
    for e in &gone {
        if !kept.iter().any(|k| k.key == e.key) {
            let _ = JsFuture::from(cache.delete_with_str(&e.key)).await;
        }
    }
    write_index(&cache, &kept).await
}

/// How much of the origin's quota is used, as a note for the cache list.
pub async fn usage_note() -> Option<String> {
    let storage = scope().navigator().storage();
    let est = JsFuture::from(storage.estimate().ok()?).await.ok()?;
    let get = |k: &str| js_sys::Reflect::get(&est, &JsValue::from_str(k)).ok()?.as_f64();
    Some(format!(
        "storage used {:.0} MB of {:.0} MB allowed",
        get("usage")? / 1e6,
        get("quota")? / 1e6
    ))
}
