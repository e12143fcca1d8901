//! iproute2, driven in batches: one `ip -batch -` process per change keeps creating hundreds of pod
//! sandboxes cheap.

use std::process::Stdio;

use tokio::{io::AsyncWriteExt, process::Command};

use crate::error::{Error, Result};

/// Runs the commands (without the leading `ip`) in one `ip -batch` process. With `force`, later commands still
/// run after one fails, which teardown wants.
pub async fn batch(commands: &[String], force: bool) -> Result<()> {
    batch_in(None, commands, force).await
}

/// Like [`batch`], inside a network namespace (`ip -n <netns> -batch -`).
pub async fn batch_in(netns: Option<&str>, commands: &[String], force: bool) -> Result<()> {
    if commands.is_empty() {
        return Ok(());
    }
    let mut command = Command::new("ip");
    if let Some(netns) = netns {
        command.args(["-n", netns]);
    }
    if force {
        command.arg("-force");
    }
    let mut child = command
        .args(["-batch", "-"])
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(Error::io("running `ip` (iproute2 is required)"))?;
    let script = commands.join("\n") + "\n";
    if let Some(mut stdin) = child.stdin.take() {
        stdin
            .write_all(script.as_bytes())
            .await
            .map_err(Error::io("writing to `ip -batch`"))?;
    }
    let output = child
        .wait_with_output()
        .await
        .map_err(Error::io("waiting for `ip -batch`"))?;
    if output.status.success() || force {
        Ok(())
    } else {
        Err(Error::Command {
            command: format!("ip -batch ({})", commands.join("; ")),
            detail: String::from_utf8_lossy(&output.stderr).trim().to_string(),
        })
    }
}

/// Runs one `ip` command and returns its standard output.
pub async fn output(args: &[&str]) -> Result<String> {
    let output = Command::new("ip")
        .args(args)
        .output()
        .await
        .map_err(Error::io("running `ip` (iproute2 is required)"))?;
    if output.status.success() {
        Ok(String::from_utf8_lossy(&output.stdout).into_owned())
    } else {
        Err(Error::Command {
            command: format!("ip {}", args.join(" ")),
            detail: String::from_utf8_lossy(&output.stderr).trim().to_string(),
        })
    }
}
