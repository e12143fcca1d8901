//! Per-call resource limits, for the whole Store: the sum of every linear memory and of every table's
//! elements is capped, and so is the number of core instances, memories and tables a component may create.
//! A component with many memories therefore gets the cap once, not once per memory. A guest that asks for
//! more is recorded, so that it is reported as exceeding its memory rather than as a generic trap.

use wasmtime::ResourceLimiter;

/// Core instances one Store may create. A component built by the Rust toolchain has a handful (its module,
/// the WASI adapter and a few shims); a bound keeps a hostile component from exhausting the host through
/// instantiation, and the instance pool from being drained by one call.
pub(crate) const MAX_INSTANCES: usize = 32;
/// Linear memories one Store may create (a Rust component has one; the WASI adapter shares it).
pub(crate) const MAX_MEMORIES: usize = 2;
/// Tables one Store may create (the component's shims use a few).
pub(crate) const MAX_TABLES: usize = 8;
/// Table elements across every table of a Store; tables hold function references, and a Rust guest needs
/// a few thousand.
pub(crate) const MAX_TABLE_ELEMENTS: usize = 100_000;

/// The limits of one Store, and what the guest has taken so far.
pub(crate) struct StoreLimits {
    memory_limit: usize,
    memory_used: usize,
    table_elements: usize,
    /// Set when the guest tried to grow past the memory cap: the total it asked for.
    pub(crate) exceeded: Option<usize>,
}

impl StoreLimits {
    /// Limits with `memory_limit` bytes of linear memory across all memories of the Store.
    pub(crate) fn new(memory_limit: usize) -> Self {
        Self {
            memory_limit,
            memory_used: 0,
            table_elements: 0,
            exceeded: None,
        }
    }
}

impl ResourceLimiter for StoreLimits {
    fn memory_growing(
        &mut self,
        current: usize,
        desired: usize,
        _maximum: Option<usize>,
    ) -> wasmtime::Result<bool> {
        let growth = desired.saturating_sub(current);
        let total = self.memory_used.saturating_add(growth);
        if total > self.memory_limit {
            self.exceeded = Some(total);
            return Err(wasmtime::Error::msg(format!(
                "plugin memory limit exceeded: its memories would take {total} bytes, the limit is {} bytes",
                self.memory_limit
            )));
        }
        self.memory_used = total;
        Ok(true)
    }

    fn memory_grow_failed(&mut self, _error: wasmtime::Error) -> wasmtime::Result<()> {
        // The growth was counted when it was allowed; keeping it counted only makes the cap stricter.
        Ok(())
    }

    fn table_growing(
        &mut self,
        current: usize,
        desired: usize,
        _maximum: Option<usize>,
    ) -> wasmtime::Result<bool> {
        let total = self
            .table_elements
            .saturating_add(desired.saturating_sub(current));
        if total > MAX_TABLE_ELEMENTS {
            return Ok(false);
        }
        self.table_elements = total;
        Ok(true)
    }

    fn instances(&self) -> usize {
        MAX_INSTANCES
    }

    fn tables(&self) -> usize {
        MAX_TABLES
    }

    fn memories(&self) -> usize {
        MAX_MEMORIES
    }
}

#[cfg(test)]
mod tests {
    //! Hand-written components that try to take more than one call's share: many memories, many tables,
    //! many instances. Each is run on the pooling engine the operator uses and on an engine that allocates
    //! on demand (where the limiter is the only bound).

    use wasmtime::{
        Engine, Store,
        component::{Component, Linker},
    };

    use super::*;
    use crate::sandbox::engine::{EngineConfig, base_config, engine};

    const CAP: usize = 16 << 20;

    fn engines() -> Vec<(&'static str, Engine)> {
        let pooling = engine(EngineConfig {
            memory_bytes: CAP,
            max_concurrent_calls: 2,
        })
        .expect("pooling engine");
        let on_demand = Engine::new(&base_config()).expect("on-demand engine");
        vec![("pooling", pooling), ("on-demand", on_demand)]
    }

    /// Instantiates `wat` in a fresh Store with the call limits; the Store is returned to be held.
    async fn instantiate(engine: &Engine, wat: &str) -> (wasmtime::Result<()>, Store<StoreLimits>) {
        let mut store = Store::new(engine, StoreLimits::new(CAP));
        store.limiter(|s| s);
        let result = async {
            let component = Component::new(engine, wat::parse_str(wat)?)?;
            Linker::new(engine)
                .instantiate_async(&mut store, &component)
                .await
                .map(|_| ())
        }
        .await;
        (result, store)
    }

    /// A component instantiating `module` `count` times.
    fn repeated(module: &str, count: usize) -> String {
        let instances: String = (0..count)
            .map(|i| format!("(core instance $i{i} (instantiate $m))\n"))
            .collect();
        format!("(component (core module $m {module})\n{instances})")
    }

    const WELL_BEHAVED: &str =
        "(component (core module $m (memory 1) (table 10 funcref)) (core instance (instantiate $m)))";

    #[tokio::test]
    async fn memories_count_against_one_cap_for_the_whole_store() {
        for (name, engine) in engines() {
            // Two memories of 12 MiB each: either alone fits the 16 MiB cap, together they do not.
            let (result, store) = instantiate(&engine, &repeated("(memory 192)", 2)).await;
            assert!(result.is_err(), "{name}: two 12 MiB memories fit a 16 MiB cap");
            assert_eq!(store.data().exceeded, Some(24 << 20), "{name}");
        }
    }

    #[test]
    fn growth_of_any_memory_counts_against_the_same_cap() {
        let mut limits = StoreLimits::new(10);
        assert!(limits.memory_growing(0, 6, None).unwrap_or(false));
        assert!(limits.memory_growing(6, 8, None).unwrap_or(false));
        // A second memory of 3 would make 11.
        assert!(limits.memory_growing(0, 3, None).is_err());
        assert_eq!(limits.exceeded, Some(11));
        let mut tables = StoreLimits::new(10);
        assert!(tables.table_growing(0, MAX_TABLE_ELEMENTS, None).unwrap_or(false));
        assert!(!tables.table_growing(0, 1, None).unwrap_or(true));
    }

    #[tokio::test]
    async fn many_memories_tables_or_instances_are_refused() {
        let hostile = [
            ("memories", repeated("(memory 1)", MAX_MEMORIES + 1)),
            ("multi-memory", "(component (core module $m (memory 1) (memory 1) (memory 1)) (core instance (instantiate $m)))".to_string()),
            ("tables", repeated("(table 1 funcref)", MAX_TABLES + 1)),
            ("table elements", repeated("(table 60000 funcref)", 2)),
            ("instances", repeated("", MAX_INSTANCES + 1)),
        ];
        for (name, engine) in engines() {
            for (what, wat) in &hostile {
                let (result, _) = instantiate(&engine, wat).await;
                assert!(result.is_err(), "{name}: too many {what} accepted");
            }
            // Nothing leaked: every slot of the pool still serves a well-behaved component at once.
            let mut held = Vec::new();
            for _ in 0..2 {
                let (result, store) = instantiate(&engine, WELL_BEHAVED).await;
                assert!(result.is_ok(), "{name}: {result:?}");
                held.push(store);
            }
        }
    }
}
