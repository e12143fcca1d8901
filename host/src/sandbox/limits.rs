//! Per-call resource limits: a cap on the guest's linear memory (and tables), recorded so that a plugin
//! that asks for more is reported as exceeding its memory rather than as a generic trap.

use wasmtime::ResourceLimiter;

/// Linear memory and table caps for one Store.
pub struct MemoryCap {
    limit: usize,
    /// Set when the guest tried to grow past the cap.
    pub exceeded: Option<usize>,
}

impl MemoryCap {
    pub fn new(limit: usize) -> Self {
        Self {
            limit,
            exceeded: None,
        }
    }
}

/// Tables hold function references; 100k entries is far above what a Rust guest needs.
const MAX_TABLE_ELEMENTS: usize = 100_000;

impl ResourceLimiter for MemoryCap {
    fn memory_growing(
        &mut self,
        _current: usize,
        desired: usize,
        _maximum: Option<usize>,
    ) -> wasmtime::Result<bool> {
        if desired > self.limit {
            self.exceeded = Some(desired);
            return Err(wasmtime::Error::msg(format!(
                "plugin memory limit exceeded: asked for {desired} bytes, the limit is {} bytes",
                self.limit
            )));
        }
        Ok(true)
    }

    fn table_growing(
        &mut self,
        _current: usize,
        desired: usize,
        _maximum: Option<usize>,
    ) -> wasmtime::Result<bool> {
        Ok(desired <= MAX_TABLE_ELEMENTS)
    }

    // A component made by a Rust toolchain has a handful of core instances; a bound keeps a hostile
    // component from exhausting host memory through instantiation.
    fn instances(&self) -> usize {
        64
    }

    fn tables(&self) -> usize {
        64
    }

    fn memories(&self) -> usize {
        16
    }
}
