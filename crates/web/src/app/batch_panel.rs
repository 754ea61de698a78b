//! The batch dial: B = 1, 2, 4, 8, 16 sequences decoded together, one sequence's rate beside all
//! of them together — latency against throughput, on the engine the page loaded (WebGPU or the
//! CPU engine), whose name the panel shows.

use super::state::State;
use leptos::prelude::*;

#[component]
pub fn BatchPanel(state: State) -> impl IntoView {
    let ready = move || state.busy().is_none();
    let top = move || {
        state
            .batch
            .with(|b| b.points.iter().filter_map(|p| p.aggregate_tok_s()).fold(1e-9, f64::max))
    };
    view! {
        <div class="dial" data-testid="batch">
            <h3>"Batch dial"</h3>
            <p class="explain">"Several sequences decoded together share one read of the weights per step. Where decoding is "
                "bandwidth-bound, the total rate grows almost with the batch while one user's rate barely moves; where arithmetic "
                "binds, both move less. This runs on the engine the page loaded: "
                <span data-testid="batch-backend">{move || state.model.get().map(|m| m.backend.label).unwrap_or_default()}</span>"."</p>
            <button data-testid="batch-run" disabled=move || !ready() on:click=move |_| state.start_batch()>"Run the batch dial"</button>
            <super::Why state testid="batch-why"/>
            <div class="table-wrap" tabindex="0" role="region" aria-label="batch dial results"><table class="dial-table">
                <thead><tr><th>"Batch"</th><th>"Per user tok/s"</th><th>"Aggregate tok/s"</th><th class="bars-h">"(bars: aggregate, per user)"</th></tr></thead>
                <tbody>{move || state.batch.get().points.into_iter().map(|p| (p.batch(), p.tok_s.unwrap_or(0.0), p.aggregate_tok_s().unwrap_or(0.0))).map(|(b, user, all)| view! {
                    <tr data-testid=format!("batch-row-{b}")>
                        <td>{b}</td>
                        <td data-testid=format!("batch-user-{b}")>{format!("{user:.1}")}</td>
                        <td data-testid=format!("batch-all-{b}")>{format!("{all:.1}")}</td>
                        <td class="bars">
                            <div class="bar all" style:width=format!("{:.1}%", 100.0 * all / top())></div>
                            <div class="bar user" style:width=format!("{:.1}%", 100.0 * user / top())></div>
                        </td>
                    </tr>
                }).collect_view()}</tbody>
            </table></div>
        </div>
    }
}
