//! What runs "inside" a simulated Pod: nothing, an HTTP echo server, a fake Ray head or a real one.

pub mod echo;
pub mod fake_ray;
pub mod process;
pub mod real_ray;

use std::time::Duration;

use self::{echo::EchoServers, fake_ray::FakeHead, process::ProcessPod, real_ray::RealRayHead};
use crate::network::{Sandbox, kill_namespace_processes, signal_namespace};

pub enum Workload {
    /// No process: the Pod has an address and its containers are reported running.
    Simulated,
    Echo(EchoServers),
    FakeRay(FakeHead),
    RealRay(RealRayHead),
    /// Containers of mapped images, running as processes.
    Processes(ProcessPod),
}

impl Workload {
    pub fn describe(&self) -> &'static str {
        match self {
            Self::Simulated => "simulated",
            Self::Echo(_) => "http-echo",
            Self::FakeRay(_) => "fake Ray head",
            Self::RealRay(_) => "real Ray head",
            Self::Processes(_) => "processes",
        }
    }

    /// Whether the workload passes its readiness check now.
    pub async fn healthy(&self) -> bool {
        match self {
            Self::Simulated | Self::Echo(_) | Self::FakeRay(_) => true,
            Self::RealRay(head) => head.healthy().await,
            Self::Processes(processes) => processes.ready(),
        }
    }

    /// The exit code if the workload's main process has ended on its own.
    pub fn exited(&mut self) -> Option<i32> {
        match self {
            Self::RealRay(head) => head.exited(),
            Self::Processes(processes) => processes.exited(),
            _ => None,
        }
    }

    /// Stops the workload and everything it started in the sandbox.
    pub async fn stop(&mut self, sandbox: Option<&Sandbox>) {
        match self {
            Self::Simulated => {}
            Self::Echo(servers) => servers.stop(),
            Self::FakeRay(head) => head.stop(),
            Self::RealRay(_) | Self::Processes(_) => {}
        }
        if let Some(sandbox) = sandbox {
            kill_namespace_processes(&sandbox.netns).await;
        }
        // Give the `ray start` child a moment to be reaped so its exit is not reported twice.
        if let Self::RealRay(head) = self {
            for _ in 0..20 {
                if head.exited().is_some() {
                    break;
                }
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
        }
    }

    pub async fn set_frozen(&self, sandbox: Option<&Sandbox>, frozen: bool) {
        match self {
            Self::FakeRay(head) => head.set_frozen(frozen),
            _ => {
                if let Some(sandbox) = sandbox {
                    let signal = if frozen {
                        nix::sys::signal::Signal::SIGSTOP
                    } else {
                        nix::sys::signal::Signal::SIGCONT
                    };
                    signal_namespace(&sandbox.netns, signal).await;
                }
            }
        }
    }
}

/// The exit code once the process has ended (128 + the signal when a signal ended it).
pub(crate) fn exit_code(child: &mut tokio::process::Child) -> Option<i32> {
    use std::os::unix::process::ExitStatusExt;
    match child.try_wait() {
        Ok(Some(status)) => Some(
            status
                .code()
                .unwrap_or_else(|| 128 + status.signal().unwrap_or(9)),
        ),
        Ok(None) => None,
        Err(_) => Some(255),
    }
}
