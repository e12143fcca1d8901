//! The one wasmtime engine of the operator, and the clock that interrupts guests.
//!
//! Every Store runs with an epoch deadline of one tick and yields to the async runtime when it is reached,
//! so a guest in a tight loop gives up its thread every tick and the timeout around the call (which also
//! covers slow host calls, which epochs cannot interrupt) can drop it.

use std::{
    sync::{
        Arc,
        atomic::{AtomicBool, AtomicUsize, Ordering},
    },
    thread::JoinHandle,
    time::Duration,
};

use wasmtime::{
    Config, Engine, InstanceAllocationStrategy, OptLevel, PoolingAllocationConfig, ProfilingStrategy,
};

use super::limits;

fn as_u32(n: usize) -> u32 {
    u32::try_from(n).unwrap_or(u32::MAX)
}

/// How often the epoch advances: the longest a guest runs before it yields.
pub const EPOCH_TICK: Duration = Duration::from_millis(10);

/// How the engine allocates instances.
#[derive(Debug, Clone, Copy)]
pub(crate) struct EngineConfig {
    /// Linear memory one call may grow to.
    pub(crate) memory_bytes: usize,
    /// Calls that may run at once (reconciles plus plugin loads); sizes the instance pool.
    pub(crate) max_concurrent_calls: u32,
}

/// Memory kept mapped per pool slot between calls, so a fresh instance does not fault in its heap again; a
/// reconcile's heap of a few hundred kilobytes fits.
const KEEP_RESIDENT: usize = 2 << 20;

pub(super) fn base_config() -> Config {
    let mut config = Config::new();
    // `perf record` can name the plugins' compiled functions (`/tmp/perf-<pid>.map`) when asked for.
    if std::env::var_os("KUBERAY_WASM_PERFMAP").is_some_and(|v| v == "1") {
        config.profiler(ProfilingStrategy::PerfMap);
    }
    config
        .wasm_component_model(true)
        .epoch_interruption(true)
        .cranelift_opt_level(OptLevel::Speed)
        // Plenty for a reconcile; a runaway recursion traps instead of exhausting the host's stack.
        .max_wasm_stack(1 << 20)
        .async_stack_size(2 << 20);
    config
}

/// The engine every plugin is compiled and run with. Precompiled plugins in the on-disk cache are only
/// valid for exactly this configuration (the cache key includes its hash).
///
/// Instances come from a pooling allocator, which makes a fresh instance per reconcile cheap (about a third
/// less per call in `benches/plugin_call.rs`). Pooling reserves address space up front, which some hosts
/// refuse; then, or with `KUBERAY_WASM_POOLING=0`, instances are allocated on demand.
pub(crate) fn engine(settings: EngineConfig) -> wasmtime::Result<Engine> {
    let pooling_wanted = std::env::var("KUBERAY_WASM_POOLING").map_or(true, |v| v != "0");
    if pooling_wanted {
        let slots = settings.max_concurrent_calls.max(1);
        let mut pool = PoolingAllocationConfig::default();
        // Every call's share of the pool is bounded by the Store's limits (`limits.rs`), so that no plugin
        // can take the slots the others' calls need.
        pool.total_component_instances(slots)
            .max_core_instances_per_component(as_u32(limits::MAX_INSTANCES))
            .max_memories_per_component(as_u32(limits::MAX_MEMORIES))
            .max_tables_per_component(as_u32(limits::MAX_TABLES))
            .total_core_instances(slots.saturating_mul(as_u32(limits::MAX_INSTANCES)))
            .total_memories(slots.saturating_mul(as_u32(limits::MAX_MEMORIES)))
            .total_tables(slots.saturating_mul(as_u32(limits::MAX_TABLES)))
            .total_stacks(slots)
            .max_memory_size(settings.memory_bytes)
            .linear_memory_keep_resident(KEEP_RESIDENT)
            .table_keep_resident(64 << 10);
        let mut config = base_config();
        config
            .allocation_strategy(InstanceAllocationStrategy::Pooling(pool))
            .memory_init_cow(true);
        match Engine::new(&config) {
            Ok(engine) => return Ok(engine),
            Err(e) => {
                tracing::warn!(error = %e, "pooling allocator unavailable; allocating instances on demand")
            }
        }
    }
    Engine::new(&base_config())
}

/// Advances the engine's epoch every [`EPOCH_TICK`] on a dedicated thread until dropped, while a guest may
/// be running: between calls the thread sleeps without a timer, so an idle operator does not wake a
/// hundred times a second.
pub(crate) struct EpochTicker {
    shared: Arc<TickerState>,
    thread: Option<JoinHandle<()>>,
}

#[derive(Default)]
struct TickerState {
    stop: AtomicBool,
    /// Calls under way ([`Running`] guards).
    running: AtomicUsize,
}

/// Held while a guest may run (a call, a plugin's metadata at load); the clock ticks while any is held.
pub(crate) struct Running {
    shared: Arc<TickerState>,
}

impl EpochTicker {
    pub(crate) fn start(engine: &Engine) -> Self {
        let weak = engine.weak();
        Self::start_with(move || weak.upgrade().map(|engine| engine.increment_epoch()).is_some())
    }

    /// Calls `tick` every [`EPOCH_TICK`] while a guest runs, until dropped or `tick` returns false.
    fn start_with(tick: impl Fn() -> bool + Send + 'static) -> Self {
        let shared = Arc::new(TickerState::default());
        let state = shared.clone();
        let thread = std::thread::Builder::new()
            .name("wasm-epoch".into())
            .spawn(move || {
                while !state.stop.load(Ordering::Acquire) {
                    if state.running.load(Ordering::Acquire) == 0 {
                        // Woken by the next call (an unpark before this park makes it return at once).
                        std::thread::park();
                        continue;
                    }
                    std::thread::sleep(EPOCH_TICK);
                    if !tick() {
                        return;
                    }
                }
            })
            .ok();
        Self { shared, thread }
    }

    /// Marks a guest as running until the guard is dropped.
    pub(crate) fn running(&self) -> Running {
        if self.shared.running.fetch_add(1, Ordering::AcqRel) == 0
            && let Some(thread) = &self.thread
        {
            thread.thread().unpark();
        }
        Running {
            shared: self.shared.clone(),
        }
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        self.shared.running.fetch_sub(1, Ordering::AcqRel);
    }
}

impl Drop for EpochTicker {
    fn drop(&mut self) {
        self.shared.stop.store(true, Ordering::Release);
        if let Some(thread) = self.thread.take() {
            thread.thread().unpark();
            let _ = thread.join();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_clock_ticks_only_while_a_guest_runs() {
        let ticks = Arc::new(AtomicUsize::new(0));
        let counted = ticks.clone();
        let ticker = EpochTicker::start_with(move || {
            counted.fetch_add(1, Ordering::Relaxed);
            true
        });
        std::thread::sleep(EPOCH_TICK * 10);
        assert_eq!(ticks.load(Ordering::Relaxed), 0, "ticked while idle");
        let running = ticker.running();
        std::thread::sleep(EPOCH_TICK * 10);
        assert!(
            ticks.load(Ordering::Relaxed) >= 2,
            "did not tick while a guest ran"
        );
        drop(running);
        std::thread::sleep(EPOCH_TICK * 3);
        let settled = ticks.load(Ordering::Relaxed);
        std::thread::sleep(EPOCH_TICK * 10);
        assert_eq!(
            ticks.load(Ordering::Relaxed),
            settled,
            "kept ticking after the call"
        );
        drop(ticker);
    }
}
