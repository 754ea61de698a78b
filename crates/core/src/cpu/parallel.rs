//! Data parallelism over disjoint output chunks: rayon natively, a plain loop in wasm (the
//! browser's CPU fallback runs in one worker thread).

/// Calls `f(chunk_index, chunk)` for each `chunk_len`-sized piece of `out`.
pub fn for_each_chunk<F>(out: &mut [f32], chunk_len: usize, f: F)
where
    F: Fn(usize, &mut [f32]) + Sync + Send,
{
    #[cfg(not(target_arch = "wasm32"))]
    {
        use rayon::prelude::*;
        if out.len() > chunk_len {
            out.par_chunks_mut(chunk_len).enumerate().for_each(|(i, c)| f(i, c));
            return;
        }
    }
    out.chunks_mut(chunk_len).enumerate().for_each(|(i, c)| f(i, c));
}

/// Worker threads available to [`for_each_chunk`].
pub fn threads() -> usize {
    #[cfg(not(target_arch = "wasm32"))]
    {
        rayon::current_num_threads()
    }
    #[cfg(target_arch = "wasm32")]
    {
        1
    }
}

/// Sets the number of native worker threads once, before the first parallel call.
/// Returns an error message if the pool was already started with another size.
pub fn set_threads(n: usize) -> Result<(), String> {
    #[cfg(not(target_arch = "wasm32"))]
    {
        rayon::ThreadPoolBuilder::new()
            .num_threads(n)
            .build_global()
            .map_err(|e| format!("cannot set {n} threads: {e}"))
    }
    #[cfg(target_arch = "wasm32")]
    {
        let _ = n;
        Ok(())
    }
}
