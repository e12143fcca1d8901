//! client-go's two work-queue gauges about work in progress, computed at each scrape from the reconciles that
//! are running: `workqueue_unfinished_work_seconds` (the seconds all running reconciles of a controller have
//! been at it) and `workqueue_longest_running_processor_seconds` (the longest of them), labelled `name` and
//! `controller` like the other work-queue families, at zero while none runs.

use std::{
    collections::{BTreeMap, HashMap},
    fmt,
    sync::{Arc, Mutex, MutexGuard, PoisonError},
    time::Instant,
};

use prometheus_client::{
    collector::Collector,
    encoding::{DescriptorEncoder, EncodeMetric},
    metrics::{MetricType, gauge::ConstGauge},
};

/// The running reconciles of each controller, by a number each gets when it starts.
#[derive(Clone, Default, Debug)]
pub(crate) struct InFlight(Arc<Mutex<Running>>);

#[derive(Default, Debug)]
struct Running {
    next: u64,
    by_controller: BTreeMap<String, HashMap<u64, Instant>>,
}

/// One running reconcile: it stops counting when dropped (ended, failed or cancelled alike).
#[derive(Debug)]
pub(crate) struct RunningToken {
    in_flight: InFlight,
    controller: String,
    id: u64,
}

impl Drop for RunningToken {
    fn drop(&mut self) {
        if let Some(running) = self.in_flight.lock().by_controller.get_mut(&self.controller) {
            running.remove(&self.id);
        }
    }
}

impl InFlight {
    fn lock(&self) -> MutexGuard<'_, Running> {
        self.0.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// `controller` exists: its gauges are exported (at zero) from now on.
    pub(crate) fn controller(&self, controller: &str) {
        self.lock()
            .by_controller
            .entry(controller.to_string())
            .or_default();
    }

    /// A reconcile of `controller` starts now.
    pub(crate) fn start(&self, controller: &str) -> RunningToken {
        let mut running = self.lock();
        let id = running.next;
        running.next += 1;
        running
            .by_controller
            .entry(controller.to_string())
            .or_default()
            .insert(id, Instant::now());
        RunningToken {
            in_flight: self.clone(),
            controller: controller.to_string(),
            id,
        }
    }

    /// Per controller: the seconds of all its running reconciles, and of the longest.
    fn seconds(&self, now: Instant) -> Vec<(String, f64, f64)> {
        self.lock()
            .by_controller
            .iter()
            .map(|(controller, running)| {
                let ages = running
                    .values()
                    .map(|at| now.saturating_duration_since(*at).as_secs_f64());
                let (sum, longest) = ages.fold((0.0, 0.0), |(sum, max): (f64, f64), age| {
                    (sum + age, max.max(age))
                });
                (controller.clone(), sum, longest)
            })
            .collect()
    }
}

impl Collector for InFlight {
    fn encode(&self, mut encoder: DescriptorEncoder<'_>) -> fmt::Result {
        let seconds = self.seconds(Instant::now());
        for (name, help, pick) in [
            (
                "workqueue_unfinished_work_seconds",
                "How many seconds of work has been done that is in progress and hasn't been observed by work_duration",
                (|(_, sum, _): &(String, f64, f64)| *sum) as fn(&(String, f64, f64)) -> f64,
            ),
            (
                "workqueue_longest_running_processor_seconds",
                "How many seconds has the longest running processor for workqueue been running",
                |(_, _, longest)| *longest,
            ),
        ] {
            let mut family = encoder.encode_descriptor(name, help, None, MetricType::Gauge)?;
            for row in &seconds {
                let labels = [("name", row.0.as_str()), ("controller", row.0.as_str())];
                ConstGauge::new(pick(row)).encode(family.encode_family(&labels)?)?;
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use prometheus_client::registry::Registry;

    use super::*;

    fn value(text: &str, series: &str) -> f64 {
        text.lines()
            .find_map(|l| l.strip_prefix(series)?.strip_prefix(' ')?.parse().ok())
            .unwrap_or_else(|| panic!("{series} missing in {text}"))
    }

    #[test]
    fn running_reconciles_are_summed_and_the_longest_reported_until_they_end() {
        let in_flight = InFlight::default();
        let mut registry = Registry::default();
        registry.register_collector(Box::new(in_flight.clone()));
        let scrape = || {
            let mut text = String::new();
            prometheus_client::encoding::text::encode(&mut text, &registry).unwrap();
            text
        };
        in_flight.controller("raycluster");
        let unfinished = r#"workqueue_unfinished_work_seconds{name="raycluster",controller="raycluster"}"#;
        let longest =
            r#"workqueue_longest_running_processor_seconds{name="raycluster",controller="raycluster"}"#;
        assert_eq!(value(&scrape(), unfinished), 0.0);
        let first = in_flight.start("raycluster");
        std::thread::sleep(Duration::from_millis(60));
        let second = in_flight.start("raycluster");
        std::thread::sleep(Duration::from_millis(20));
        let text = scrape();
        let (sum, max) = (value(&text, unfinished), value(&text, longest));
        assert!(max >= 0.08 && sum >= max + 0.02, "sum {sum}, longest {max}");
        drop(first);
        let text = scrape();
        assert!(value(&text, longest) < max, "the longest ended");
        drop(second);
        let text = scrape();
        assert_eq!((value(&text, unfinished), value(&text, longest)), (0.0, 0.0));
    }
}
