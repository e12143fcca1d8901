//! Writes the generated CRDs into `crds/` (`make crds`), or with `--check` fails if they are stale.

use std::path::{Path, PathBuf};

use anyhow::{Context as _, Result, bail};

fn main() -> Result<()> {
    let check = match std::env::args().nth(1).as_deref() {
        None => false,
        Some("--check") => true,
        Some(other) => bail!("unexpected argument {other}; usage: crdgen [--check]"),
    };
    let dir: PathBuf = Path::new(env!("CARGO_MANIFEST_DIR")).to_path_buf();
    let mut stale = Vec::new();
    for file in kuberay_crds::crd::render()? {
        let path = dir.join(&file.file_name);
        let current = std::fs::read_to_string(&path).unwrap_or_default();
        if current == file.contents {
            continue;
        }
        if check {
            stale.push(path.display().to_string());
        } else {
            std::fs::write(&path, &file.contents).with_context(|| format!("writing {}", path.display()))?;
            println!("wrote {}", path.display());
        }
    }
    if !stale.is_empty() {
        bail!("stale, run `make crds`: {}", stale.join(", "));
    }
    Ok(())
}
