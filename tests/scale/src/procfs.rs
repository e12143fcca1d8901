//! CPU time and peak memory of a process from `/proc/PID/stat` and `/proc/PID/status`, and a sampler that
//! reads them every 250 ms while the process runs.

use std::{
    sync::{Arc, Mutex},
    time::Duration,
};

use tokio::task::JoinHandle;

/// One reading of a process.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct ProcSample {
    /// User plus system CPU time, in clock ticks.
    pub cpu_ticks: u64,
    /// Peak resident set size (`VmHWM`), in KiB.
    pub peak_rss_kib: u64,
}

/// utime + stime (fields 14 and 15) of a `/proc/PID/stat` line. The command name (field 2) is in parentheses
/// and may hold spaces or parentheses, so fields are counted from the last `)`.
pub fn parse_stat_cpu_ticks(stat: &str) -> Option<u64> {
    let after_comm = &stat[stat.rfind(')')? + 1..];
    let fields: Vec<&str> = after_comm.split_whitespace().collect();
    // after_comm starts at field 3 (state): utime is field 14, i.e. index 11 here.
    let utime: u64 = fields.get(11)?.parse().ok()?;
    let stime: u64 = fields.get(12)?.parse().ok()?;
    Some(utime + stime)
}

/// `VmHWM` of a `/proc/PID/status` text, in KiB.
pub fn parse_status_hwm_kib(status: &str) -> Option<u64> {
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

/// Reads the process now; `None` once it has exited.
pub fn sample(pid: u32) -> Option<ProcSample> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    Some(ProcSample {
        cpu_ticks: parse_stat_cpu_ticks(&stat)?,
        peak_rss_kib: parse_status_hwm_kib(&status)?,
    })
}

/// CPU ticks of several processes together (those that have exited count as zero).
pub fn cpu_ticks_of(pids: &[u32]) -> u64 {
    pids.iter()
        .filter_map(|pid| sample(*pid))
        .map(|s| s.cpu_ticks)
        .sum()
}

/// Clock ticks per second (`getconf CLK_TCK`), 100 on every Linux this runs on.
pub fn clock_ticks_per_second() -> f64 {
    std::process::Command::new("getconf")
        .arg("CLK_TCK")
        .output()
        .ok()
        .and_then(|o| String::from_utf8(o.stdout).ok())
        .and_then(|s| s.trim().parse().ok())
        .unwrap_or(100.0)
}

/// Samples a process every 250 ms; [`Sampler::latest`] is the last reading taken.
pub struct Sampler {
    latest: Arc<Mutex<ProcSample>>,
    task: JoinHandle<()>,
}

impl Sampler {
    pub fn start(pid: u32) -> Self {
        let latest = Arc::new(Mutex::new(sample(pid).unwrap_or_default()));
        let shared = latest.clone();
        let task = tokio::spawn(async move {
            let mut tick = tokio::time::interval(Duration::from_millis(250));
            loop {
                tick.tick().await;
                let Some(now) = sample(pid) else { break };
                *shared.lock().unwrap_or_else(std::sync::PoisonError::into_inner) = now;
            }
        });
        Self { latest, task }
    }

    /// The last reading, refreshed first if the process still runs.
    pub fn latest(&self, pid: u32) -> ProcSample {
        let mut latest = self
            .latest
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if let Some(now) = sample(pid) {
            *latest = now;
        }
        *latest
    }
}

impl Drop for Sampler {
    fn drop(&mut self) {
        self.task.abort();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cpu_ticks_are_utime_plus_stime_even_with_odd_command_names() {
        let stat = "4242 (kube (ray) x) S 1 4242 4242 0 -1 4194560 5000 0 0 0 1234 567 0 0 20 0 12 0 100 0 0";
        assert_eq!(parse_stat_cpu_ticks(stat), Some(1234 + 567));
        assert_eq!(parse_stat_cpu_ticks("garbage"), None);
    }

    #[test]
    fn peak_rss_is_vmhwm() {
        let status = "Name:\tkuberay\nVmPeak:\t  900 kB\nVmHWM:\t   51234 kB\nVmRSS:\t 40000 kB\n";
        assert_eq!(parse_status_hwm_kib(status), Some(51234));
        assert_eq!(parse_status_hwm_kib("Name: x\n"), None);
    }

    #[test]
    fn this_process_can_be_sampled() {
        let me = sample(std::process::id()).unwrap();
        assert!(me.peak_rss_kib > 0);
    }
}
