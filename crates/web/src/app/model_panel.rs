//! The model card: what is loaded (size, bytes read per token), the load progress (MB done,
//! MB/s, time left), another model from a file, a drop or a URL, and the cache with "forget".

use super::load;
use super::port::send;
use super::state::{Loading, State};
use crate::protocol::{MemoryReport, ModelSource, SYNTHETIC_CHOICES, ToWorker};
use leptos::prelude::*;
use tokscope_core::meter::transfer;
use tokscope_core::shaped::ShapeSpec;
use tokscope_core::shipped::SHIPPED;

fn load_file(state: State, file: web_sys::File) {
    load(state, ModelSource::File { name: file.name() }, Some(&file));
}

fn progress_text(l: &Loading) -> String {
    let t = transfer(l.done, l.total, l.now - l.since);
    let mut s = format!("{}: {:.1}", l.phase.name(), t.done_mb);
    if let Some(total) = t.total_mb {
        s += &format!(" of {total:.1}");
    }
    s += " MB";
    if let Some(r) = t.mb_s {
        s += &format!(", {r:.1} MB/s");
    }
    if let Some(eta) = t.eta_s.filter(|e| *e >= 0.5) {
        s += &format!(", {eta:.0} s left");
    }
    s
}

#[component]
pub fn ModelPanel(state: State) -> impl IntoView {
    let url = RwSignal::new(String::new());
    let dragging = RwSignal::new(false);
    let synthetic = RwSignal::new(0usize);
    let shipped = RwSignal::new(0usize);
    let fraction = move || {
        state
            .loading
            .get()
            .and_then(|l| transfer(l.done, l.total, 0.0).fraction)
    };
    view! {
        <section class="card model" aria-labelledby="model-h" data-testid="model"
            data-phases=move || state.phases_seen.get()
            class:dragging=move || dragging.get()
            on:dragover=move |ev: leptos::ev::DragEvent| { ev.prevent_default(); dragging.set(true); }
            on:dragleave=move |_| dragging.set(false)
            on:drop=move |ev: leptos::ev::DragEvent| {
                ev.prevent_default();
                dragging.set(false);
                if let Some(f) = ev.data_transfer().and_then(|d| d.files()).and_then(|l| l.get(0)) {
                    load_file(state, f);
                }
            }>
            <h2 id="model-h">"Model"</h2>
            {move || state.model.get().map(|m| view! {
                <dl class="figures" data-testid="model-info">
                    <dt>"Loaded"</dt><dd>{m.name.clone()}" ("{m.architecture.clone()}", "{format!("{:.0}", m.parameters as f64 / 1e6)}" M parameters)"</dd>
                    <dt>"File"</dt><dd>{format!("{:.1} MB", m.file_bytes as f64 / 1e6)}</dd>
                    <dt>"Read per token"</dt><dd>{format!("{:.1} MB", m.bytes_per_token as f64 / 1e6)}</dd>
                    <dt>"Context"</dt><dd>{m.context}" tokens, "{m.layers}" layers"</dd>
                    <dt>"Memory"</dt><dd data-testid="memory" data-wasm-bytes=move || state.memory.get().map(|m| m.wasm_bytes.to_string())
                        data-gpu-buffers=move || state.memory.get().and_then(|m| m.gpu_buffers).map(|n| n.to_string())>{move || state.memory.get().map(memory_text)}</dd>
                </dl>
            })}
            {move || state.cache_warning.get().map(|w| view! {
                <p class="notice" role="status" data-testid="cache-warning">{w}" — the model runs, but it will be downloaded again next time."</p>
            })}
            <Show when=move || state.loading.get().is_some()>
                <div class="progress" data-testid="progress">
                    <progress max="1" value=move || fraction().map(|f| f.to_string())></progress>
                    <p>{move || state.loading.get().map(|l| progress_text(&l))}</p>
                </div>
            </Show>
            <div class="row">
                <label class="file">
                    <span>"Open a GGUF…"</span>
                    <input type="file" accept=".gguf" data-testid="file"
                        on:change=move |ev| {
                            let input: web_sys::HtmlInputElement = event_target(&ev);
                            if let Some(f) = input.files().and_then(|l| l.get(0)) { load_file(state, f); }
                            input.set_value("");
                        }/>
                </label>
                <span class="hint">"or drop one here"</span>
            </div>
            <form class="row" on:submit=move |ev| {
                ev.prevent_default();
                let u = url.get_untracked();
                if !u.trim().is_empty() { load(state, ModelSource::Url(u.trim().to_string()), None); }
            }>
                <label for="model-url" class="sr-only">"Model URL"</label>
                <input id="model-url" type="url" placeholder="https://…/model.gguf" data-testid="model-url"
                    prop:value=move || url.get() on:input=move |ev| url.set(event_target_value(&ev))/>
                <button type="submit">"Load URL"</button>
            </form>
            <form class="row" on:submit=move |ev| {
                ev.prevent_default();
                load(state, ModelSource::Url(SHIPPED[shipped.get_untracked()].path.into()), None);
            }>
                <label for="model-shipped">"Served here"</label>
                <select id="model-shipped" data-testid="model-shipped"
                    on:change=move |ev| shipped.set(event_target_value(&ev).parse().unwrap_or(0))>
                    {SHIPPED.iter().enumerate().map(|(i, m)| view! {
                        <option value=i.to_string()>{m.label()}</option>
                    }).collect_view()}
                </select>
                <button type="submit" data-testid="model-shipped-load">"Load"</button>
            </form>
            <form class="row" on:submit=move |ev| {
                ev.prevent_default();
                let (shape, ty) = SYNTHETIC_CHOICES[synthetic.get_untracked()];
                load(state, ModelSource::Synthetic { shape: shape.into(), ty: ty.into() }, None);
            }>
                <label for="model-synthetic">"Synthetic: speed only"</label>
                <select id="model-synthetic" data-testid="model-synthetic"
                    title="random weights with a real model's shapes: the real file's bytes per token, made here without a download; its text is noise"
                    on:change=move |ev| synthetic.set(event_target_value(&ev).parse().unwrap_or(0))>
                    {SYNTHETIC_CHOICES.iter().enumerate().map(|(i, (shape, ty))| {
                        let spec = ShapeSpec::by_id(shape).expect("offered shapes exist");
                        let size = tokscope_core::quant::GgmlType::from_name(ty)
                            .and_then(|t| spec.weight_bytes(t).ok())
                            .map_or(String::new(), |b| format!(" ({:.0} MB of weights)", b as f64 / 1e6));
                        view! { <option value=i.to_string()>{format!("{} {ty}{size}", spec.name)}</option> }
                    }).collect_view()}
                </select>
                <button type="submit" data-testid="model-synthetic-load">"Make and load"</button>
            </form>
            <details class="cache">
                <summary>"Cached models"</summary>
                <ul data-testid="cache-list">
                    <For each=move || state.cache.get() key=|e| e.key.clone() let:entry>
                        <li>
                            <span>{entry.source.rsplit('/').next().unwrap_or("").to_string()}" · "{format!("{:.1} MB", entry.bytes as f64 / 1e6)}</span>
                            <button on:click={
                                let key = entry.key.clone();
                                move |_| send(&ToWorker::Forget { key: Some(key.clone()) }, None)
                            }>"Forget"</button>
                        </li>
                    </For>
                </ul>
                <p class="caption" data-testid="cache-note">{move || state.cache_note.get()}</p>
            </details>
            <button type="button" class="quiet" disabled=move || !state.model.get().is_some_and(|m| m.backend.gpu)
                on:click=move |_| send(&ToWorker::LoseDevice { gpu_after: true }, None)
                title="destroys the GPU device to show that the engine recovers">"Simulate a lost GPU device"</button>
            <button type="button" class="quiet" data-testid="lose-gpu-for-good" disabled=move || !state.model.get().is_some_and(|m| m.backend.gpu)
                on:click=move |_| send(&ToWorker::LoseDevice { gpu_after: false }, None)
                title="destroys the GPU device as if no GPU were left: the engine recovers on the CPU">"Simulate losing the GPU for good"</button>
        </section>
    }
}

/// The worker's memory as a reader sees it: "WebAssembly 245.4 MB, GPU buffers 109.8 MB".
fn memory_text(m: MemoryReport) -> String {
    let wasm = format!("WebAssembly {}", tokscope_core::human::bytes(m.wasm_bytes as f64));
    match m.gpu_buffer_bytes {
        Some(b) => format!("{wasm}, GPU buffers {}", tokscope_core::human::bytes(b as f64)),
        None => wasm,
    }
}
