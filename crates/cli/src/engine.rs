//! The engine `--backend` chose: [`Runner`] (shared with the browser's worker) over the
//! memory-mapped model file, with errors as the CLI prints them.

use crate::args::Backend;
use crate::model_file::FileBytes;
use std::sync::Arc;
use tokscope_core::model::Model;
use tokscope_gpu::GpuContext;
use tokscope_gpu::runner::Runner;

pub type Engine = Runner<FileBytes>;

pub fn new(backend: Backend, model: Arc<Model<FileBytes>>, context: usize) -> Result<Engine, String> {
    match backend {
        Backend::Cpu => Runner::cpu(model, context),
        Backend::Gpu => {
            let ctx = Arc::new(GpuContext::new_blocking().map_err(|e| e.to_string())?);
            ctx.clone()
                .guarded_blocking(|| Runner::gpu(ctx, model, context, |_, _| {}))
        }
    }
    .map_err(|e| e.to_string())
}
