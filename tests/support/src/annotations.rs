//! Annotations that steer the simulated kubelet. Tests put them on a Pod (directly, or through the Pod
//! template of whatever creates it) or, for the workload choice, on a Namespace. They are read every time the
//! Pod changes, so adding one to a running Pod injects a fault.

/// `real`, `fake` or `none`: what runs in a Ray head Pod (label `ray.io/node-type=head`). On a Pod or its
/// Namespace; otherwise the environment's default (`--ray-head`).
pub const RAY_HEAD: &str = "testenv.kuberay-wasm.io/ray-head";

/// `"true"`: serve an HTTP echo server on every container port at the Pod's address.
pub const HTTP_ECHO: &str = "testenv.kuberay-wasm.io/http-echo";

/// Any value: the Pod fails (`phase: Failed`, its containers terminated with exit code 1); the value becomes
/// the status message.
pub const FAIL: &str = "testenv.kuberay-wasm.io/fail";

/// `"true"`: the containers keep running but are not Ready.
pub const NOT_READY: &str = "testenv.kuberay-wasm.io/not-ready";

/// A new value each time: kill the Pod's processes once; the containers restart as `restartPolicy` says.
pub const KILL: &str = "testenv.kuberay-wasm.io/kill";

/// `"true"`: freeze the Pod's processes (SIGSTOP; a fake head stops answering). Remove it to thaw them.
pub const FREEZE: &str = "testenv.kuberay-wasm.io/freeze";

/// Seconds the Pod spends in `ContainerCreating` before its containers start.
pub const START_DELAY: &str = "testenv.kuberay-wasm.io/start-delay";

/// For Pods that run to completion (those of a batch Job): how long they run (default 1) and the exit code
/// of their containers (default 0).
pub const RUN_SECONDS: &str = "testenv.kuberay-wasm.io/run-seconds";
pub const EXIT_CODE: &str = "testenv.kuberay-wasm.io/exit-code";

/// Seconds a fake Ray head waits before answering a job submission (it records the job first), so a test can
/// stop an operator between submitting and seeing the answer.
pub const FAKE_SUBMIT_DELAY: &str = "testenv.kuberay-wasm.io/fake-submit-delay";
