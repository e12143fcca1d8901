//! The one wasmtime engine of the operator, and the clock that interrupts guests.
//!
//! Every Store runs with an epoch deadline of one tick and yields to the async runtime when it is reached,
//! so a guest in a tight loop gives up its thread every tick and the timeout around the call (which also
//! covers slow host calls, which epochs cannot interrupt) can drop it.

use std::{
    sync::{
        Arc,
        atomic::{AtomicBool, Ordering},
    },
    thread::JoinHandle,
    time::Duration,
};

use wasmtime::{Config, Engine, OptLevel};

/// How often the epoch advances: the longest a guest runs before it yields.
pub const EPOCH_TICK: Duration = Duration::from_millis(10);

/// The engine configuration every plugin is compiled and run with. Precompiled plugins in the on-disk
/// cache are only valid for exactly this configuration (the cache key includes its hash).
pub fn engine() -> wasmtime::Result<Engine> {
    let mut config = Config::new();
    config
        .wasm_component_model(true)
        .epoch_interruption(true)
        .cranelift_opt_level(OptLevel::Speed)
        // Plenty for a reconcile; a runaway recursion traps instead of exhausting the host's stack.
        .max_wasm_stack(1 << 20)
        .async_stack_size(2 << 20);
    Engine::new(&config)
}

/// Advances the engine's epoch every [`EPOCH_TICK`] on a dedicated thread until dropped.
pub struct EpochTicker {
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

impl EpochTicker {
    pub fn start(engine: &Engine) -> Self {
        let weak = engine.weak();
        let stop = Arc::new(AtomicBool::new(false));
        let flag = stop.clone();
        let thread = std::thread::Builder::new()
            .name("wasm-epoch".into())
            .spawn(move || {
                while !flag.load(Ordering::Relaxed) {
                    std::thread::sleep(EPOCH_TICK);
                    match weak.upgrade() {
                        Some(engine) => engine.increment_epoch(),
                        None => return,
                    }
                }
            })
            .ok();
        Self { stop, thread }
    }
}

impl Drop for EpochTicker {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}
