//! The model cache: downloaded GGUFs kept in the browser's IndexedDB under a key made of their
//! size and SHA-256, with a record per source URL naming its key, so a reload does not download
//! again. Every failure here is a note, never fatal: the model still loads.
//!
//! IndexedDB rather than Cache Storage: WebKitGTK keeps Cache Storage entries only until the
//! page reloads in a private (ephemeral) session — measured here in MiniBrowser, whose WebDriver
//! sessions are private — while its IndexedDB keeps them; and IndexedDB holds a 260 MB
//! `Uint8Array` in Firefox, Chromium and WebKit alike. The values are arrays, not Blobs: WebKit
//! refuses to store a Blob in a private session.

use super::js::{describe, scope};
use crate::protocol::CachedModel;
use futures_channel::oneshot;
use sha2::{Digest, Sha256};
use std::cell::{Cell, RefCell};
use std::rc::Rc;
use wasm_bindgen::prelude::*;
use wasm_bindgen::{JsCast, JsValue};
use wasm_bindgen_futures::JsFuture;
use web_sys::{IdbDatabase, IdbRequest, IdbTransactionMode};

const DB: &str = "tokscope-models";
const DB_VERSION: u32 = 1;
/// Cache key → the file's bytes (`Uint8Array`).
const FILES: &str = "files";
/// Source URL → its [`CachedModel`] as JSON.
const SOURCES: &str = "sources";
/// Where earlier versions kept models (Cache Storage): emptied once, to give the space back.
const OLD_CACHE: &str = "tokscope-models-v1";
const KEY_PREFIX: &str = "/__tokscope_cache__/";

/// Waits for the first of `ok` or the `fail` events on `target`, then removes its listeners
/// (a listener left behind would hold the request, and with it the model's bytes).
async fn first_event(target: &web_sys::EventTarget, ok: &str, fail: &[&str]) -> Result<web_sys::Event, web_sys::Event> {
    let (tx, rx) = oneshot::channel();
    let tx = Rc::new(RefCell::new(Some(tx)));
    let listener = |succeeded: bool| {
        let tx = tx.clone();
        Closure::<dyn FnMut(web_sys::Event)>::new(move |e: web_sys::Event| {
            if let Some(tx) = tx.borrow_mut().take() {
                let _ = tx.send(if succeeded { Ok(e) } else { Err(e) });
            }
        })
    };
    let (on_ok, on_fail) = (listener(true), listener(false));
    let _ = target.add_event_listener_with_callback(ok, on_ok.as_ref().unchecked_ref());
    for f in fail {
        let _ = target.add_event_listener_with_callback(f, on_fail.as_ref().unchecked_ref());
    }
    let out = rx.await.expect("one of the listeners answers before they are dropped");
    let _ = target.remove_event_listener_with_callback(ok, on_ok.as_ref().unchecked_ref());
    for f in fail {
        let _ = target.remove_event_listener_with_callback(f, on_fail.as_ref().unchecked_ref());
    }
    out
}

/// A request's error in words: the DOMException's name and message; a full quota says what to do.
fn request_error(req: &IdbRequest) -> String {
    let why = match req.error() {
        Ok(Some(e)) => format!("{}: {}", e.name(), e.message()),
        _ => "the request failed".into(),
    };
    if why.contains("Quota") || why.contains("quota") {
        format!("the browser's storage quota is full ({why}); forget a cached model to make room")
    } else {
        why
    }
}

/// The result of `req` once it succeeds.
async fn done(req: IdbRequest) -> Result<JsValue, String> {
    match first_event(&req, "success", &["error"]).await {
        Ok(_) => req.result().map_err(|e| describe(&e)),
        Err(_) => Err(request_error(&req)),
    }
}

async fn open() -> Result<IdbDatabase, String> {
    let factory = scope()
        .indexed_db()
        .ok()
        .flatten()
        .ok_or("this browser offers no IndexedDB here")?;
    forget_old_cache().await;
    let req = factory.open_with_u32(DB, DB_VERSION).map_err(|e| describe(&e))?;
    // The stores are made inside the upgrade event itself, while its transaction is active.
    let upgrade = Closure::<dyn FnMut(web_sys::Event)>::new(|e: web_sys::Event| {
        let Some(db) = e
            .target()
            .and_then(|t| t.dyn_into::<IdbRequest>().ok())
            .and_then(|r| r.result().ok())
            .and_then(|d| d.dyn_into::<IdbDatabase>().ok())
        else {
            return;
        };
        for store in [FILES, SOURCES] {
            if !db.object_store_names().contains(store) {
                let _ = db.create_object_store(store);
            }
        }
    });
    req.set_onupgradeneeded(Some(upgrade.as_ref().unchecked_ref()));
    let result = done(req.clone().into()).await;
    req.set_onupgradeneeded(None);
    result?
        .dyn_into::<IdbDatabase>()
        .map_err(|_| "the model cache did not open".into())
}

/// Deletes the Cache Storage that earlier versions filled, once per worker (best effort).
async fn forget_old_cache() {
    thread_local!(static DONE: Cell<bool> = const { Cell::new(false) });
    if DONE.replace(true) {
        return;
    }
    if let Ok(caches) = scope().caches() {
        let _ = JsFuture::from(caches.delete(OLD_CACHE)).await;
    }
}

/// The value under `key` in `store` (undefined where there is none).
async fn get(db: &IdbDatabase, store: &str, key: &str) -> Result<JsValue, String> {
    let tx = db.transaction_with_str(store).map_err(|e| describe(&e))?;
    let req = tx
        .object_store(store)
        .and_then(|s| s.get(&JsValue::from_str(key)))
        .map_err(|e| describe(&e))?;
    done(req).await
}

/// Runs `write` on `stores` in one read-write transaction and waits until it is committed.
async fn write(
    db: &IdbDatabase,
    stores: &[&str],
    write: impl FnOnce(&web_sys::IdbTransaction) -> Result<Vec<IdbRequest>, JsValue>,
) -> Result<(), String> {
    let names = js_sys::Array::new();
    for s in stores {
        names.push(&JsValue::from_str(s));
    }
    let tx = db
        .transaction_with_str_sequence_and_mode(&names, IdbTransactionMode::Readwrite)
        .map_err(|e| describe(&e))?;
    let requests = write(&tx).map_err(|e| describe(&e))?;
    match first_event(&tx, "complete", &["error", "abort"]).await {
        Ok(_) => Ok(()),
        Err(_) => Err(requests
            .iter()
            .find(|r| r.error().is_ok_and(|e| e.is_some()))
            .map(request_error)
            .or_else(|| tx.error().map(|e| format!("{}: {}", e.name(), e.message())))
            .unwrap_or_else(|| "the write was aborted".into())),
    }
}

async fn list_in(db: &IdbDatabase) -> Result<Vec<CachedModel>, String> {
    let tx = db.transaction_with_str(SOURCES).map_err(|e| describe(&e))?;
    let req = tx
        .object_store(SOURCES)
        .and_then(|s| s.get_all())
        .map_err(|e| describe(&e))?;
    let all: js_sys::Array = done(req).await?.unchecked_into();
    Ok(all
        .iter()
        .filter_map(|v| serde_json::from_str(&v.as_string()?).ok())
        .collect())
}

pub async fn list() -> Result<Vec<CachedModel>, String> {
    list_in(&open().await?).await
}

/// The cached bytes of `source`, if a complete copy is there.
pub async fn lookup(source: &str) -> Result<Option<Vec<u8>>, String> {
    let db = open().await?;
    let entry = get(&db, SOURCES, source).await?;
    let Some(entry) = entry
        .as_string()
        .and_then(|json| serde_json::from_str::<CachedModel>(&json).ok())
    else {
        return Ok(None);
    };
    let bytes = get(&db, FILES, &entry.key).await?;
    let Some(bytes) = bytes.dyn_ref::<js_sys::Uint8Array>() else {
        return Ok(None);
    };
    Ok((u64::from(bytes.length()) == entry.bytes).then(|| bytes.to_vec()))
}

/// The cache key of some bytes: size and SHA-256, so one file fetched from two URLs is kept once.
pub fn key_of(bytes: &[u8]) -> String {
    let hash = Sha256::digest(bytes);
    let hex: String = hash.iter().map(|b| format!("{b:02x}")).collect();
    format!("{KEY_PREFIX}{}-{hex}", bytes.len())
}

pub async fn store(source: &str, bytes: &[u8]) -> Result<(), String> {
    let db = open().await?;
    let entry = CachedModel {
        key: key_of(bytes),
        source: source.to_string(),
        bytes: bytes.len() as u64,
    };
    let have = get(&db, FILES, &entry.key).await?;
    let json = serde_json::to_string(&entry).expect("an entry serializes");
    write(&db, &[FILES, SOURCES], |tx| {
        let mut requests = vec![];
        if have.is_undefined() {
            let array = js_sys::Uint8Array::from(bytes);
            requests.push(
                tx.object_store(FILES)?
                    .put_with_key(&array, &entry.key.as_str().into())?,
            );
        }
        requests.push(
            tx.object_store(SOURCES)?
                .put_with_key(&json.as_str().into(), &source.into())?,
        );
        Ok(requests)
    })
    .await
}

/// Deletes one entry (by key) or everything.
pub async fn forget(key: Option<&str>) -> Result<(), String> {
    let db = open().await?;
    let gone: Vec<CachedModel> = list_in(&db)
        .await?
        .into_iter()
        .filter(|e| key.is_none_or(|k| e.key == k))
        .collect();
    write(&db, &[FILES, SOURCES], |tx| {
        let (files, sources) = (tx.object_store(FILES)?, tx.object_store(SOURCES)?);
        let mut requests = vec![];
        for e in &gone {
            requests.push(sources.delete(&e.source.as_str().into())?);
            requests.push(files.delete(&e.key.as_str().into())?);
        }
        Ok(requests)
    })
    .await
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
