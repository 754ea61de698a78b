//! Device set-up: the adapter the platform offers, its limits raised to what it supports, and
//! the optional features used when present (never required: SwiftShader has no `shader-f16`).

use thiserror::Error;

#[derive(Debug, Error)]
pub enum GpuError {
    #[error("no GPU adapter: {0} (in a browser: WebGPU is missing, disabled, or blocked for this GPU)")]
    NoAdapter(String),
    #[error("the GPU device could not be created: {0}")]
    NoDevice(String),
    #[error(
        "the model does not fit this GPU: {tensor:?} needs a {size} byte buffer, above this device's limit of {limit} bytes ({which})"
    )]
    TooBig {
        tensor: String,
        size: u64,
        limit: u64,
        which: &'static str,
    },
    #[error(
        "the model does not fit this GPU: tensor {tensor:?} has rows of {cols} values; the GPU kernels stage at most {max} per row"
    )]
    TooWide { tensor: String, cols: usize, max: usize },
    /// The driver could not allocate a buffer: reported through an error scope, never a panic.
    #[error("the GPU ran out of memory for this model: {0}")]
    OutOfMemory(String),
    /// A pipeline or buffer the engine made was invalid on this device (a shader the driver
    /// could not compile, for instance): without this the engine would run and read zeros.
    #[error("this GPU rejected the engine: {0}")]
    Rejected(String),
    #[error("reading results back from the GPU failed: {0}")]
    Readback(String),
    #[error(transparent)]
    Unsupported(#[from] tokscope_core::quant::UnsupportedType),
}

/// What the page and the CLI show about the adapter.
#[derive(Debug, Clone, serde::Serialize)]
pub struct AdapterSummary {
    pub name: String,
    pub backend: String,
    pub device_type: String,
    pub driver: String,
    pub vendor: u32,
    pub max_buffer_size: u64,
    pub max_storage_buffer_binding_size: u64,
    pub timestamp_query: bool,
    pub subgroups: bool,
    pub shader_f16: bool,
}

pub struct GpuContext {
    pub device: wgpu::Device,
    pub queue: wgpu::Queue,
    pub info: wgpu::AdapterInfo,
    /// The kind of adapter the kernels are shaped for: `info.device_type` (a browser says only
    /// fallback, `Cpu`, or not, `Other`); tests set it to run the GPUs' shapes on lavapipe.
    pub kind: wgpu::DeviceType,
    pub limits: wgpu::Limits,
    pub features: wgpu::Features,
    /// Every buffer made through [`GpuContext::create_buffer`] and its `_init` twin.
    pub created: BufferTally,
    /// Whether read-backs nudge the queue while they wait (completion.rs).
    pub nudge: crate::completion::Nudge,
}

/// Buffers created on a device, counted as they are made: the soak measurements read it to
/// show that decoding allocates no GPU memory after warm-up (every buffer is made at load).
#[derive(Debug, Default)]
pub struct BufferTally {
    count: std::sync::atomic::AtomicU64,
    bytes: std::sync::atomic::AtomicU64,
}

impl BufferTally {
    fn add(&self, bytes: u64) {
        use std::sync::atomic::Ordering::Relaxed;
        self.count.fetch_add(1, Relaxed);
        self.bytes.fetch_add(bytes, Relaxed);
    }

    /// (buffers, bytes) created so far.
    pub fn get(&self) -> (u64, u64) {
        use std::sync::atomic::Ordering::Relaxed;
        (self.count.load(Relaxed), self.bytes.load(Relaxed))
    }
}

/// Used when the adapter has them; nothing depends on any of them.
const OPTIONAL_FEATURES: wgpu::Features = wgpu::Features::TIMESTAMP_QUERY
    .union(wgpu::Features::SUBGROUP)
    .union(wgpu::Features::SHADER_F16);

impl GpuContext {
    pub async fn new() -> Result<Self, GpuError> {
        let instance = wgpu::Instance::new(wgpu::InstanceDescriptor::new_without_display_handle_from_env());
        let adapter = instance
            .request_adapter(&wgpu::RequestAdapterOptions {
                power_preference: wgpu::PowerPreference::HighPerformance,
                ..Default::default()
            })
            .await
            .map_err(|e| {
                // In a browser wgpu's message lists every native backend it was built without;
                // the reader needs only the one fact.
                if cfg!(target_arch = "wasm32") {
                    GpuError::NoAdapter("this browser offers no WebGPU adapter".into())
                } else {
                    GpuError::NoAdapter(e.to_string())
                }
            })?;
        let features = adapter.features() & OPTIONAL_FEATURES;
        let limits = adapter.limits();
        let (device, queue) = adapter
            .request_device(&wgpu::DeviceDescriptor {
                label: Some("tokscope"),
                required_features: features,
                required_limits: limits.clone(),
                ..Default::default()
            })
            .await
            .map_err(|e| GpuError::NoDevice(e.to_string()))?;
        Ok(Self {
            device,
            queue,
            info: adapter.get_info(),
            kind: adapter.get_info().device_type,
            limits,
            features,
            created: BufferTally::default(),
            nudge: Default::default(),
        })
    }

    /// What the kernels are shaped for, and why, in words (the page's badge).
    pub fn kernels_words(&self) -> String {
        match self.kind {
            wgpu::DeviceType::Cpu => "kernels shaped for a CPU-backed adapter (a fallback adapter)".into(),
            wgpu::DeviceType::Other => {
                "kernels shaped for a GPU (the browser says it is not a fallback adapter)".into()
            }
            _ => "kernels shaped for a GPU".into(),
        }
    }

    /// Blocks on [`GpuContext::new`] (native only).
    #[cfg(not(target_arch = "wasm32"))]
    pub fn new_blocking() -> Result<Self, GpuError> {
        pollster::block_on(Self::new())
    }

    pub fn summary(&self) -> AdapterSummary {
        AdapterSummary {
            name: self.info.name.clone(),
            backend: format!("{:?}", self.info.backend),
            device_type: format!("{:?}", self.info.device_type),
            driver: format!("{} {}", self.info.driver, self.info.driver_info)
                .trim()
                .to_string(),
            vendor: self.info.vendor,
            max_buffer_size: self.limits.max_buffer_size,
            max_storage_buffer_binding_size: self.limits.max_storage_buffer_binding_size,
            timestamp_query: self.features.contains(wgpu::Features::TIMESTAMP_QUERY),
            subgroups: self.features.contains(wgpu::Features::SUBGROUP),
            shader_f16: self.features.contains(wgpu::Features::SHADER_F16),
        }
    }

    pub fn shader(&self, label: &str, source: &str) -> wgpu::ShaderModule {
        self.device.create_shader_module(wgpu::ShaderModuleDescriptor {
            label: Some(label),
            source: wgpu::ShaderSource::Wgsl(source.into()),
        })
    }

    /// A compute pipeline for one entry point, its bind group layout derived from the shader.
    pub fn pipeline(&self, module: &wgpu::ShaderModule, entry: &str) -> wgpu::ComputePipeline {
        self.pipeline_with(module, entry, &[])
    }

    /// [`GpuContext::pipeline`] with values for the shader's `override` constants.
    pub fn pipeline_with(
        &self,
        module: &wgpu::ShaderModule,
        entry: &str,
        constants: &[(&str, f64)],
    ) -> wgpu::ComputePipeline {
        self.pipeline_in(None, module, entry, constants, true)
    }

    /// [`GpuContext::pipeline_with`] under an explicit layout (`None`: derived from the shader),
    /// for entry points that share one bind group but not every binding.
    /// `zero_workgroup_memory: false` is only for shaders that write every workgroup variable
    /// before reading it: natively it skips the zeroing wgpu otherwise adds to every workgroup,
    /// which on SwiftShader cost more than a small matvec's own work (examples/mvbench.rs: a
    /// 3072×576 dispatch reading no weights took 1055 µs zeroed, 170 µs not). Browsers zero it
    /// regardless, as WebGPU requires.
    pub fn pipeline_in(
        &self,
        layout: Option<&wgpu::PipelineLayout>,
        module: &wgpu::ShaderModule,
        entry: &str,
        constants: &[(&str, f64)],
        zero_workgroup_memory: bool,
    ) -> wgpu::ComputePipeline {
        self.device.create_compute_pipeline(&wgpu::ComputePipelineDescriptor {
            label: Some(entry),
            layout,
            module,
            entry_point: Some(entry),
            compilation_options: wgpu::PipelineCompilationOptions {
                constants,
                zero_initialize_workgroup_memory: zero_workgroup_memory,
            },
            cache: None,
        })
    }

    /// A buffer, counted in [`GpuContext::created`].
    /// An unmapped buffer of `size` bytes, counted as [`GpuContext::create_buffer`] counts.
    pub fn buffer(&self, label: &str, size: u64, usage: wgpu::BufferUsages) -> wgpu::Buffer {
        self.create_buffer(&wgpu::BufferDescriptor {
            label: Some(label),
            size,
            usage,
            mapped_at_creation: false,
        })
    }

    pub fn create_buffer(&self, desc: &wgpu::BufferDescriptor) -> wgpu::Buffer {
        self.created.add(desc.size);
        self.device.create_buffer(desc)
    }

    /// A buffer holding `desc.contents`, counted in [`GpuContext::created`]: for the small ones
    /// (parameters, norm gains). Written through the queue, so a buffer that could not be made
    /// is an error for [`GpuContext::guarded`]'s scope, never a panic.
    pub fn create_buffer_init(&self, desc: &wgpu::util::BufferInitDescriptor) -> wgpu::Buffer {
        self.written(desc, desc.contents.len() as u64)
    }

    /// A weight matrix's buffer: `desc.contents` in at least `size` bytes (zeros after them).
    ///
    /// Out of memory is an error naming the tensor. Natively the buffer is mapped at creation
    /// (no staging copy: a load never holds the weights twice), so its allocation is checked in
    /// its own error scope, answered at once there, before it is mapped (wgpu's own
    /// `create_buffer_init` panics there; a mapping that fails anyway is an error too). In a
    /// browser a buffer mapped at creation would throw (WebGPU's `RangeError`), so it is written
    /// through the queue and a failed allocation is left to [`GpuContext::guarded`]'s scope.
    pub fn upload(&self, desc: &wgpu::util::BufferInitDescriptor, size: u64) -> Result<wgpu::Buffer, GpuError> {
        #[cfg(target_arch = "wasm32")]
        return Ok(self.written(desc, size));
        #[cfg(not(target_arch = "wasm32"))]
        {
            let contents = desc.contents;
            let size = Self::padded(size.max(contents.len() as u64));
            let out_of_memory = self.device.push_error_scope(wgpu::ErrorFilter::OutOfMemory);
            let buffer = self.create_buffer(&wgpu::BufferDescriptor {
                label: desc.label,
                size,
                usage: desc.usage,
                mapped_at_creation: true,
            });
            if let Some(e) = pollster::block_on(out_of_memory.pop()) {
                let tensor = desc.label.unwrap_or("a weight");
                return Err(GpuError::OutOfMemory(format!("{tensor:?} needed {size} bytes: {e}")));
            }
            let mut view = buffer
                .slice(..)
                .get_mapped_range_mut()
                .map_err(|e| GpuError::Rejected(format!("mapping {:?}: {e:?}", desc.label.unwrap_or("a weight"))))?;
            view.slice(..contents.len()).copy_from_slice(contents);
            drop(view);
            buffer.unmap();
            Ok(buffer)
        }
    }

    /// Whole words, at least one: what a buffer written by a copy must be.
    fn padded(size: u64) -> u64 {
        size.next_multiple_of(wgpu::COPY_BUFFER_ALIGNMENT)
            .max(wgpu::COPY_BUFFER_ALIGNMENT)
    }

    /// A buffer of at least `size` bytes written with `desc.contents` through the queue.
    fn written(&self, desc: &wgpu::util::BufferInitDescriptor, size: u64) -> wgpu::Buffer {
        let contents = desc.contents;
        let buffer = self.create_buffer(&wgpu::BufferDescriptor {
            label: desc.label,
            size: Self::padded(size.max(contents.len() as u64)),
            usage: desc.usage | wgpu::BufferUsages::COPY_DST,
            mapped_at_creation: false,
        });
        let aligned = contents.len() & !(wgpu::COPY_BUFFER_ALIGNMENT as usize - 1);
        if aligned > 0 {
            self.queue.write_buffer(&buffer, 0, &contents[..aligned]);
        }
        if aligned < contents.len() {
            let mut tail = [0u8; 4];
            tail[..contents.len() - aligned].copy_from_slice(&contents[aligned..]);
            self.queue.write_buffer(&buffer, aligned as u64, &tail);
        }
        buffer
    }

    /// Runs `build` (an engine's upload: its buffers, pipelines and bind groups) under
    /// out-of-memory and validation error scopes. WebGPU reports both only asynchronously, and
    /// wgpu natively panics on an error no scope catches, so an engine built without this
    /// would read back zeros in a browser and take the CLI down. Out of memory wins over the
    /// errors it causes downstream (a write to the buffer that was never made).
    pub async fn guarded<T, E: From<GpuError>>(&self, build: impl FnOnce() -> Result<T, E>) -> Result<T, E> {
        let out_of_memory = self.device.push_error_scope(wgpu::ErrorFilter::OutOfMemory);
        let invalid = self.device.push_error_scope(wgpu::ErrorFilter::Validation);
        let built = build();
        // Scopes are a stack: the inner one is popped first.
        let (invalid, out_of_memory) = (invalid.pop(), out_of_memory.pop());
        let (invalid, out_of_memory) = (invalid.await, out_of_memory.await);
        if let Some(e) = out_of_memory {
            return Err(GpuError::OutOfMemory(e.to_string()).into());
        }
        let built = built?;
        match invalid {
            Some(e) => Err(GpuError::Rejected(e.to_string()).into()),
            None => Ok(built),
        }
    }

    /// Blocks on [`GpuContext::guarded`] (native only: there the scopes answer at once).
    #[cfg(not(target_arch = "wasm32"))]
    pub fn guarded_blocking<T, E: From<GpuError>>(&self, build: impl FnOnce() -> Result<T, E>) -> Result<T, E> {
        pollster::block_on(self.guarded(build))
    }

    /// Fails with a message naming the tensor when `size` cannot be one storage binding.
    pub fn check_binding(&self, tensor: &str, size: u64) -> Result<(), GpuError> {
        let binding = self.limits.max_storage_buffer_binding_size;
        if size > binding {
            return Err(GpuError::TooBig {
                tensor: tensor.into(),
                size,
                limit: binding,
                which: "maxStorageBufferBindingSize",
            });
        }
        if size > self.limits.max_buffer_size {
            return Err(GpuError::TooBig {
                tensor: tensor.into(),
                size,
                limit: self.limits.max_buffer_size,
                which: "maxBufferSize",
            });
        }
        Ok(())
    }
}
