//! The Prometheus client libraries' standard process metrics, read from `/proc/self` at each scrape (Linux
//! only; elsewhere none are exported): `process_cpu_seconds_total`, `process_resident_memory_bytes`,
//! `process_virtual_memory_bytes`, `process_open_fds`, `process_max_fds` and `process_start_time_seconds`.

use std::fmt;

use prometheus_client::{
    collector::Collector,
    encoding::{DescriptorEncoder, EncodeMetric},
    metrics::{MetricType, counter::ConstCounter, gauge::ConstGauge},
};

/// The collector of the process metrics.
#[derive(Debug, Default)]
pub(crate) struct ProcessCollector;

/// One reading of `/proc/self`.
struct Reading {
    cpu_seconds: f64,
    resident_bytes: f64,
    virtual_bytes: f64,
    open_fds: f64,
    max_fds: Option<f64>,
    start_time_seconds: Option<f64>,
}

impl Reading {
    fn take() -> Option<Self> {
        let me = procfs::process::Process::myself().ok()?;
        let stat = me.stat().ok()?;
        let ticks = procfs::ticks_per_second().max(1) as f64;
        let max_fds = me.limits().ok().and_then(|l| match l.max_open_files.soft_limit {
            procfs::process::LimitValue::Value(n) => Some(n as f64),
            procfs::process::LimitValue::Unlimited => None,
        });
        let start_time_seconds = procfs::boot_time_secs()
            .ok()
            .map(|boot| boot as f64 + stat.starttime as f64 / ticks);
        Some(Self {
            cpu_seconds: (stat.utime + stat.stime) as f64 / ticks,
            resident_bytes: (stat.rss * procfs::page_size()) as f64,
            virtual_bytes: stat.vsize as f64,
            open_fds: me.fd_count().ok()? as f64,
            max_fds,
            start_time_seconds,
        })
    }
}

fn gauge(encoder: &mut DescriptorEncoder<'_>, name: &str, help: &str, value: f64) -> fmt::Result {
    let metric = ConstGauge::new(value);
    metric.encode(encoder.encode_descriptor(name, help, None, MetricType::Gauge)?)
}

impl Collector for ProcessCollector {
    fn encode(&self, mut encoder: DescriptorEncoder<'_>) -> fmt::Result {
        let Some(reading) = Reading::take() else {
            return Ok(());
        };
        let cpu = ConstCounter::new(reading.cpu_seconds);
        cpu.encode(encoder.encode_descriptor(
            "process_cpu_seconds",
            "Total user and system CPU time spent in seconds",
            None,
            MetricType::Counter,
        )?)?;
        let e = &mut encoder;
        gauge(
            e,
            "process_resident_memory_bytes",
            "Resident memory size in bytes",
            reading.resident_bytes,
        )?;
        gauge(
            e,
            "process_virtual_memory_bytes",
            "Virtual memory size in bytes",
            reading.virtual_bytes,
        )?;
        gauge(
            e,
            "process_open_fds",
            "Number of open file descriptors",
            reading.open_fds,
        )?;
        if let Some(max) = reading.max_fds {
            gauge(
                e,
                "process_max_fds",
                "Maximum number of open file descriptors",
                max,
            )?;
        }
        if let Some(start) = reading.start_time_seconds {
            let help = "Start time of the process since unix epoch in seconds";
            gauge(e, "process_start_time_seconds", help, start)?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use prometheus_client::registry::Registry;

    use super::*;

    fn value(text: &str, name: &str) -> f64 {
        text.lines()
            .find_map(|l| l.strip_prefix(name)?.strip_prefix(' ')?.parse().ok())
            .unwrap_or_else(|| panic!("{name} missing in {text}"))
    }

    #[test]
    fn the_process_is_described_from_proc() {
        let mut registry = Registry::default();
        registry.register_collector(Box::new(ProcessCollector));
        let files: Vec<std::fs::File> = (0..5)
            .filter_map(|_| std::fs::File::open("/proc/self/stat").ok())
            .collect();
        let encode = || {
            let mut text = String::new();
            prometheus_client::encoding::text::encode(&mut text, &registry).unwrap();
            text
        };
        let before = value(&encode(), "process_cpu_seconds_total");
        // Spin until the kernel has charged this process at least one more clock tick (10 ms at most).
        let spin = std::time::Instant::now();
        let mut x = 0u64;
        while spin.elapsed() < std::time::Duration::from_millis(100) {
            x = std::hint::black_box(x.wrapping_mul(31).wrapping_add(7));
        }
        let text = encode();
        assert!(
            value(&text, "process_cpu_seconds_total") > before,
            "{before} then {text}"
        );
        assert!(value(&text, "process_resident_memory_bytes") > 1e6, "{text}");
        assert!(
            value(&text, "process_virtual_memory_bytes") >= value(&text, "process_resident_memory_bytes")
        );
        assert!(value(&text, "process_open_fds") >= files.len() as f64, "{text}");
        assert!(
            value(&text, "process_max_fds") >= value(&text, "process_open_fds"),
            "{text}"
        );
        let started = value(&text, "process_start_time_seconds");
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_secs_f64();
        assert!(
            started <= now + 1.0 && started > now - 24.0 * 3600.0,
            "{started} vs {now}"
        );
    }
}
