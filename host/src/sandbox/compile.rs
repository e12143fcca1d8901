//! Compiling a plugin component with bounds on what it may cost. A hostile `.wasm` can be cheap to write and
//! expensive to compile (many large functions, code that makes the compiler's passes superlinear), and it is
//! compiled at start and at every swap, before the policy has seen its metadata.
//!
//! - **Static limits** ([`check_static`]), checked by one wasmparser pass before anything is compiled: the
//!   component's size, its core modules, their functions and the largest function body. Our plugins use a
//!   small fraction of each (a test checks it).
//! - **A child process** ([`ChildCompiler`]): the operator's own executable, re-run with the hidden
//!   `compile-plugin` subcommand ([`compile_child`]), compiles the component with the engine's settings (but
//!   no pooling allocator, which only matters for running) under setrlimit: its address space
//!   (`--plugin-compile-memory-mib`), CPU time (a backstop for the wall clock), no core dumps, and a
//!   parent-death signal. The parent kills it after `--plugin-compile-timeout` of wall time. The component
//!   goes in on its stdin and the precompiled artifact comes back on its stdout (no files: the operator's
//!   root filesystem may be read-only); the parent stores it in the compiled-plugin cache and maps it (or,
//!   without a cache, deserializes it).
//!
//! A breach refuses the file like any failed load (the running version keeps serving), with a fixed reason
//! counted in `plugin_refusals_total`: `component-too-large`, `compile-timeout` or `compile-memory`. Where no
//! executable is configured (the benchmarks, embedders of the library), components are compiled in process
//! with the static limits only.
//!
//! The artifact a child returns is trusted as the compiler's output is in process: a hostile component that
//! could subvert the compiler could do so in the operator's process as well.

use std::{
    path::PathBuf,
    process::{ExitStatus, Stdio},
    sync::Arc,
    time::Duration,
};

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use wasmparser::{Parser, Payload};
use wasmtime::{Engine, component::Component};

use super::{
    compile_cache::{CompileCache, Source},
    log_guard,
};

/// Largest component file.
pub const MAX_COMPONENT_BYTES: u64 = 32 << 20;
/// Core modules in a component (a Rust component has a handful: its module, the WASI adapter, shims).
pub const MAX_CORE_MODULES: u32 = 64;
/// Functions defined across all of its core modules.
pub const MAX_FUNCTIONS: u64 = 100_000;
/// Largest function body, in bytes. Compiling costs about the same per byte whatever the function's size,
/// but a function is compiled on one thread at once: its size bounds the memory each compiler thread needs
/// (straight-line arithmetic took 165 MiB resident for 256 KiB and 285 MiB for 512 KiB in a debug build,
/// about 1.6 s and 3.3 s). Our Rust plugins' largest is 17 KiB; a Python plugin built with componentize-py
/// embeds CPython, whose linker-generated `__wasm_apply_data_relocs` (libpython's data relocations, one
/// straight-line function) is 417 KiB. The bound is a cheap filter before any compiling: what a compile may
/// really take is bounded by the compile child's `RLIMIT_AS` and timeout, and only files the policy lists
/// are compiled at all.
pub const MAX_FUNCTION_BYTES: usize = 512 << 10;

/// How plugin components are compiled when no cached artifact exists: in a child process with OS-enforced
/// bounds (see the module documentation).
#[derive(Debug, Clone)]
pub struct ChildCompiler {
    /// The operator's executable (`/proc/self/exe` for the binary; the tests' `CARGO_BIN_EXE_kuberay-wasm`),
    /// which must be the same build: its engine settings are what the artifact is compiled for.
    pub executable: PathBuf,
    /// Wall time one compile may take; the child is killed after it.
    pub timeout: Duration,
    /// Address space the child may use (RLIMIT_AS).
    pub memory_bytes: u64,
}

/// Why a component was not compiled.
#[derive(Debug, thiserror::Error)]
pub(crate) enum CompileError {
    #[error("the component is too large to compile: {0}")]
    TooLarge(String),
    #[error("compiling the component took longer than {0}")]
    TimedOut(String),
    #[error("compiling the component needed more than {limit_mib} MiB of memory ({detail})")]
    Memory { limit_mib: u64, detail: String },
    #[error("{0}")]
    Failed(String),
}

impl CompileError {
    /// The refusal reason of a breached bound (a metric label); `None` for a component that does not compile.
    pub(crate) fn bound(&self) -> Option<&'static str> {
        match self {
            Self::TooLarge(_) => Some("component-too-large"),
            Self::TimedOut(_) => Some("compile-timeout"),
            Self::Memory { .. } => Some("compile-memory"),
            Self::Failed(_) => None,
        }
    }
}

/// What [`check_static`] counted.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Shape {
    pub(crate) core_modules: u32,
    pub(crate) functions: u64,
    pub(crate) largest_function: usize,
}

/// Counts the core modules, functions and largest function body of `wasm`, refusing it as soon as one is
/// over its limit (and a file over [`MAX_COMPONENT_BYTES`] at once). Malformed input is left to the compiler.
pub(crate) fn check_static(wasm: &[u8]) -> Result<Shape, CompileError> {
    let too_large = |what: String| Err(CompileError::TooLarge(what));
    if wasm.len() as u64 > MAX_COMPONENT_BYTES {
        return too_large(format!(
            "{} bytes, the limit is {MAX_COMPONENT_BYTES}",
            wasm.len()
        ));
    }
    let mut shape = Shape::default();
    for payload in Parser::new(0).parse_all(wasm) {
        let Ok(payload) = payload else { break };
        match payload {
            Payload::ModuleSection { .. } => {
                shape.core_modules += 1;
                if shape.core_modules > MAX_CORE_MODULES {
                    return too_large(format!("more than {MAX_CORE_MODULES} core modules"));
                }
            }
            Payload::CodeSectionEntry(body) => {
                shape.functions += 1;
                let size = body.range().len();
                shape.largest_function = shape.largest_function.max(size);
                if shape.functions > MAX_FUNCTIONS {
                    return too_large(format!("more than {MAX_FUNCTIONS} functions"));
                }
                if size > MAX_FUNCTION_BYTES {
                    return too_large(format!(
                        "a function of {size} bytes, the limit is {MAX_FUNCTION_BYTES}"
                    ));
                }
            }
            _ => {}
        }
    }
    Ok(shape)
}

/// The component for `wasm` (whose SHA-256 is `digest`): from the cache if a valid entry exists, otherwise
/// checked against the static limits and compiled (by `compiler`, else in process), and stored.
pub(crate) async fn component(
    engine: &Engine,
    cache: &Arc<CompileCache>,
    compiler: Option<&ChildCompiler>,
    wasm: Vec<u8>,
    digest: &str,
) -> Result<(Component, Source), CompileError> {
    let (engine, cache, digest) = (engine.clone(), cache.clone(), digest.to_string());
    let wasm = Arc::new(wasm);
    let cached = blocking({
        let (engine, cache, digest) = (engine.clone(), cache.clone(), digest.clone());
        move || cache.cached(&engine, &digest)
    })
    .await?;
    if let Some(component) = cached {
        return Ok((component, Source::Cache));
    }
    blocking({
        let wasm = wasm.clone();
        move || check_static(&wasm)
    })
    .await??;
    let component = match compiler {
        None => blocking(move || cache.compile(&engine, &wasm, &digest))
            .await?
            .map_err(|e| CompileError::Failed(e.to_string()))?,
        Some(child) => {
            let artifact = child.compile(&wasm).await?;
            blocking(move || cache.load_artifact(&engine, &digest, &artifact))
                .await?
                .map_err(|e| CompileError::Failed(e.to_string()))?
        }
    };
    Ok((component, Source::Compiled))
}

/// Runs CPU-bound or blocking work off the runtime's threads.
async fn blocking<T: Send + 'static>(work: impl FnOnce() -> T + Send + 'static) -> Result<T, CompileError> {
    tokio::task::spawn_blocking(work)
        .await
        .map_err(|e| CompileError::Failed(format!("the compile task failed: {e}")))
}

/// How much of the child's stderr is kept for the error message.
const STDERR_KEPT: u64 = 64 << 10;

impl ChildCompiler {
    /// Compiles `wasm` in a child process and returns the precompiled artifact.
    pub(crate) async fn compile(&self, wasm: &[u8]) -> Result<Vec<u8>, CompileError> {
        let failed = |what: &str, e: std::io::Error| {
            CompileError::Failed(format!("{what} {}: {e}", self.executable.display()))
        };
        let mut child = tokio::process::Command::new(&self.executable)
            .arg("compile-plugin")
            .arg("--memory-bytes")
            .arg(self.memory_bytes.to_string())
            .arg("--cpu-seconds")
            .arg(cpu_seconds(self.timeout).to_string())
            // Its stderr is for one line of error, not a backtrace.
            .env("RUST_BACKTRACE", "0")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .map_err(|e| failed("starting the plugin compiler", e))?;
        let (Some(mut stdin), Some(stdout), Some(stderr)) =
            (child.stdin.take(), child.stdout.take(), child.stderr.take())
        else {
            return Err(CompileError::Failed("the plugin compiler has no pipes".into()));
        };
        // The artifact cannot be larger than the memory the child had to build it in.
        let artifact_cap = self.memory_bytes;
        let exchange = async {
            let send = async {
                // A child that dies early closes its stdin: its exit status says why.
                let _ = stdin.write_all(wasm).await;
                drop(stdin);
            };
            let (mut artifact, mut messages) = (Vec::new(), Vec::new());
            let (mut stdout, mut stderr) = (stdout.take(artifact_cap), stderr.take(STDERR_KEPT));
            let receive = stdout.read_to_end(&mut artifact);
            let errors = stderr.read_to_end(&mut messages);
            let ((), received, _) = tokio::join!(send, receive, errors);
            let status = child.wait().await;
            (status, received.map(|_| artifact), messages)
        };
        let Ok((status, artifact, messages)) = tokio::time::timeout(self.timeout, exchange).await else {
            // Killed (SIGKILL) and reaped before the error is returned, so no compile outlives its load.
            let _ = child.kill().await;
            return Err(CompileError::TimedOut(format!("{:?}", self.timeout)));
        };
        let status = status.map_err(|e| failed("waiting for the plugin compiler", e))?;
        let messages = String::from_utf8_lossy(&messages);
        if !status.success() {
            return Err(self.classify(status, &messages));
        }
        artifact.map_err(|e| failed("reading the compiled plugin from", e))
    }

    /// Why a child that did not succeed failed.
    fn classify(&self, status: ExitStatus, messages: &str) -> CompileError {
        use std::os::unix::process::ExitStatusExt;
        let needles = [
            "memory allocation of",
            "Cannot allocate memory",
            "out of memory",
            "failed to spawn thread",
        ];
        let out_of_memory = needles.iter().any(|needle| messages.contains(needle));
        // The line that says why: the memory failure's, else the first (the child's error, or a panic's).
        let line = messages
            .lines()
            .find(|l| needles.iter().any(|needle| l.contains(needle)))
            .or_else(|| messages.lines().find(|l| !l.trim().is_empty()))
            .unwrap_or("");
        let detail = log_guard::escape(line, 500);
        let signal = status.signal();
        // RLIMIT_CPU ends it with SIGXCPU at the soft limit (the parent's own kill is a timeout above).
        if signal == Some(libc::SIGXCPU) {
            return CompileError::TimedOut(format!("its CPU time of {} seconds", cpu_seconds(self.timeout)));
        }
        // Nobody else here sends SIGKILL but the kernel's OOM killer (the operator's cgroup is full).
        if signal == Some(libc::SIGKILL) {
            return CompileError::Memory {
                limit_mib: self.memory_bytes >> 20,
                detail: "killed by SIGKILL, as the kernel's out-of-memory killer does".into(),
            };
        }
        // An allocation failure aborts (SIGABRT); so does a compiler thread's overflowing stack.
        if out_of_memory || signal == Some(libc::SIGABRT) || signal == Some(libc::SIGSEGV) {
            return CompileError::Memory {
                limit_mib: self.memory_bytes >> 20,
                detail: if detail.is_empty() {
                    format!("{status}")
                } else {
                    detail
                },
            };
        }
        CompileError::Failed(format!("the plugin compiler failed ({status}): {detail}"))
    }
}

/// The child's CPU-time limit: the wall-clock limit on every core, and a second, so that only a child the
/// parent could not kill (the parent gone) ever reaches it.
fn cpu_seconds(timeout: Duration) -> u64 {
    let cores = std::thread::available_parallelism().map_or(1, std::num::NonZero::get) as u64;
    timeout
        .as_secs()
        .saturating_add(1)
        .saturating_mul(cores)
        .saturating_add(1)
}

/// What `kuberay-wasm compile-plugin` is told.
#[derive(Debug, Clone, Copy)]
pub struct CompileLimits {
    /// RLIMIT_AS.
    pub memory_bytes: u64,
    /// RLIMIT_CPU (soft; the hard limit is a second more).
    pub cpu_seconds: u64,
}

/// Why the child failed.
#[derive(Debug, thiserror::Error)]
pub enum ChildError {
    #[error("limiting the compiler's resources: {0}")]
    Limits(nix::Error),
    #[error("reading the component: {0}")]
    Read(std::io::Error),
    #[error("the component is larger than {MAX_COMPONENT_BYTES} bytes")]
    TooLarge,
    #[error("compiling: {0:#}")]
    Compile(wasmtime::Error),
    #[error("writing the compiled component: {0}")]
    Write(std::io::Error),
}

/// The child's side (`kuberay-wasm compile-plugin`, run by [`ChildCompiler`]): limits its own resources,
/// reads a component on stdin, compiles it with the engine's settings and writes the artifact on stdout.
/// Nothing else may be written on stdout.
pub fn compile_child(limits: CompileLimits) -> Result<(), ChildError> {
    use std::io::{Read, Write};
    limit_self(limits).map_err(ChildError::Limits)?;
    let mut wasm = Vec::new();
    std::io::stdin()
        .lock()
        .take(MAX_COMPONENT_BYTES + 1)
        .read_to_end(&mut wasm)
        .map_err(ChildError::Read)?;
    if wasm.len() as u64 > MAX_COMPONENT_BYTES {
        return Err(ChildError::TooLarge);
    }
    let engine = Engine::new(&super::engine::base_config()).map_err(ChildError::Compile)?;
    let artifact = engine.precompile_component(&wasm).map_err(ChildError::Compile)?;
    let mut stdout = std::io::stdout().lock();
    stdout.write_all(&artifact).map_err(ChildError::Write)?;
    stdout.flush().map_err(ChildError::Write)
}

/// Applies the child's limits to itself: address space, CPU time, no core dumps, and death with its parent.
fn limit_self(limits: CompileLimits) -> Result<(), nix::Error> {
    use nix::sys::resource::{Resource, setrlimit};
    setrlimit(Resource::RLIMIT_CORE, 0, 0)?;
    setrlimit(
        Resource::RLIMIT_CPU,
        limits.cpu_seconds,
        limits.cpu_seconds.saturating_add(1),
    )?;
    setrlimit(Resource::RLIMIT_AS, limits.memory_bytes, limits.memory_bytes)?;
    nix::sys::prctl::set_pdeathsig(nix::sys::signal::Signal::SIGKILL)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A component holding one core module with `functions` functions of `body_ops` additions each.
    pub(crate) fn component_with(functions: usize, body_ops: usize) -> Vec<u8> {
        let body = "local.get 0 i32.const 1 i32.add local.set 0\n".repeat(body_ops);
        let funcs: String = (0..functions)
            .map(|_| format!("(func (param i32) {body})\n"))
            .collect();
        wat::parse_str(format!("(component (core module {funcs}))")).expect("a valid component")
    }

    #[test]
    fn components_over_a_static_limit_are_refused_before_compiling() {
        let small = check_static(&component_with(3, 10)).expect("within the limits");
        assert_eq!(small.core_modules, 1);
        assert_eq!(small.functions, 3);
        // About 7 bytes per addition: a body of a bit more than the limit.
        let big_body = component_with(1, MAX_FUNCTION_BYTES / 6);
        assert!(check_static(&component_with(1, MAX_FUNCTION_BYTES / 8)).is_ok());
        let refused = check_static(&big_body).unwrap_err();
        assert_eq!(refused.bound(), Some("component-too-large"));
        assert!(refused.to_string().contains("a function of"), "{refused}");
        let many = component_with(MAX_FUNCTIONS as usize + 1, 0);
        assert!(check_static(&many).unwrap_err().to_string().contains("functions"));
        let modules = format!(
            "(component {})",
            "(core module)".repeat(MAX_CORE_MODULES as usize + 1)
        );
        let modules = wat::parse_str(modules).expect("a valid component");
        assert!(
            check_static(&modules)
                .unwrap_err()
                .to_string()
                .contains("core modules")
        );
        let huge = vec![0u8; MAX_COMPONENT_BYTES as usize + 1];
        assert_eq!(
            check_static(&huge).unwrap_err().bound(),
            Some("component-too-large")
        );
    }

    #[test]
    fn our_plugins_are_well_within_the_static_limits() {
        for path in [
            kuberay_plugin_artifacts::RAYCLUSTER,
            kuberay_plugin_artifacts::RAYJOB,
            kuberay_plugin_artifacts::RAYSERVICE,
            kuberay_plugin_artifacts::RAYCRONJOB,
        ] {
            let wasm = std::fs::read(path).expect("a built plugin");
            let shape = check_static(&wasm).expect("within the limits");
            assert!(
                wasm.len() as u64 * 4 <= MAX_COMPONENT_BYTES,
                "{path}: {} bytes",
                wasm.len()
            );
            assert!(shape.functions * 4 <= MAX_FUNCTIONS, "{path}: {shape:?}");
            assert!(
                shape.largest_function * 4 <= MAX_FUNCTION_BYTES,
                "{path}: {shape:?}"
            );
            assert!(shape.core_modules * 4 <= MAX_CORE_MODULES, "{path}: {shape:?}");
        }
    }

    #[test]
    fn a_childs_failure_is_classified_by_how_it_ended() {
        use std::os::unix::process::ExitStatusExt;
        let compiler = ChildCompiler {
            executable: PathBuf::from("/nonexistent"),
            timeout: Duration::from_secs(5),
            memory_bytes: 256 << 20,
        };
        let by_signal = |signal: i32| ExitStatus::from_raw(signal);
        let by_code = |code: i32| ExitStatus::from_raw(code << 8);
        let reason = |status, messages| compiler.classify(status, messages).bound();
        assert_eq!(reason(by_signal(libc::SIGXCPU), ""), Some("compile-timeout"));
        assert_eq!(reason(by_signal(libc::SIGKILL), ""), Some("compile-memory"));
        assert_eq!(reason(by_signal(libc::SIGABRT), ""), Some("compile-memory"));
        assert_eq!(
            reason(by_code(1), "memory allocation of 123 bytes failed\n"),
            Some("compile-memory")
        );
        let invalid = compiler.classify(by_code(1), "compiling: invalid\n\u{1b}[2Kforged\n");
        assert_eq!(invalid.bound(), None);
        assert!(!invalid.to_string().contains('\u{1b}'), "{invalid}");
    }
}
