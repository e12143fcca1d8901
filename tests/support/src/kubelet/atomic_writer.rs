//! Writes a volume's files the way a kubelet's atomic writer does, so a process that watches or re-reads
//! them sees the same layout as in a real cluster: the files live in a timestamped directory
//! `..<timestamp>`, the symlink `..data` points at the current one, and every top-level name is a symlink
//! into `..data`. An update builds a new timestamped directory and swaps `..data` with one rename.

use std::{
    collections::BTreeMap,
    os::unix::fs::{PermissionsExt, symlink},
    path::{Path, PathBuf},
};

/// One file of a volume: its contents and mode.
#[derive(Debug, Clone, PartialEq)]
pub struct VolumeFile {
    pub contents: Vec<u8>,
    pub mode: u32,
}

/// Who owns the files (a kubelet hands projected files to the Pod's user or fsGroup).
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Owner {
    pub uid: Option<u32>,
    pub gid: Option<u32>,
}

/// Replaces the contents of the volume directory `dir` with `files` (relative paths).
pub fn write(dir: &Path, files: &BTreeMap<String, VolumeFile>, owner: Owner) -> std::io::Result<()> {
    std::fs::create_dir_all(dir)?;
    std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o755))?;
    let stamp = format!("..{}", timestamp());
    let target = dir.join(&stamp);
    std::fs::create_dir(&target)?;
    std::fs::set_permissions(&target, std::fs::Permissions::from_mode(0o755))?;
    for (name, file) in files {
        let path = safe_join(&target, name)?;
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent)?;
        }
        std::fs::write(&path, &file.contents)?;
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(file.mode))?;
        std::os::unix::fs::chown(&path, owner.uid, owner.gid)?;
    }
    let previous = std::fs::read_link(dir.join("..data")).ok();
    let tmp = dir.join("..data_tmp");
    let _ = std::fs::remove_file(&tmp);
    symlink(&stamp, &tmp)?;
    std::fs::rename(&tmp, dir.join("..data"))?;
    let top: std::collections::BTreeSet<&str> = files.keys().filter_map(|k| k.split('/').next()).collect();
    for name in &top {
        let link = dir.join(name);
        if std::fs::symlink_metadata(&link).is_err() {
            symlink(Path::new("..data").join(name), &link)?;
        }
    }
    if let Some(old) = previous.filter(|p| p.as_os_str() != stamp.as_str()) {
        let _ = std::fs::remove_dir_all(dir.join(old));
    }
    Ok(())
}

/// `base/name`, refusing names that climb out of `base` (a key like `../x`).
fn safe_join(base: &Path, name: &str) -> std::io::Result<PathBuf> {
    let relative = Path::new(name);
    let ok = relative
        .components()
        .all(|c| matches!(c, std::path::Component::Normal(_)));
    if !ok || name.is_empty() {
        return Err(std::io::Error::new(
            std::io::ErrorKind::InvalidInput,
            format!("invalid volume file path {name:?}"),
        ));
    }
    Ok(base.join(relative))
}

/// `2026_12_02_12_30_00.123456789`, as a kubelet names its data directories.
fn timestamp() -> String {
    let now = k8s_openapi::jiff::Timestamp::now();
    let text = now.strftime("%Y_%m_%d_%H_%M_%S").to_string();
    format!("{text}.{:09}", now.subsec_nanosecond())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn files_are_published_through_data_symlinks() {
        let dir = std::env::temp_dir().join(format!("kwt-atomic-{}", std::process::id()));
        let file = |s: &str| VolumeFile {
            contents: s.as_bytes().to_vec(),
            mode: 0o644,
        };
        let mut files = BTreeMap::from([("token".to_string(), file("one"))]);
        assert!(write(&dir, &files, Owner::default()).is_ok());
        files.insert("token".into(), file("two"));
        assert!(write(&dir, &files, Owner::default()).is_ok());
        assert_eq!(
            std::fs::read_to_string(dir.join("token")).ok().as_deref(),
            Some("two")
        );
        assert_eq!(
            std::fs::read_link(dir.join("token")).ok(),
            Some(PathBuf::from("..data/token"))
        );
        let stamps = std::fs::read_dir(&dir)
            .map(|d| {
                d.flatten()
                    .filter(|e| e.file_name().to_string_lossy().starts_with("..2"))
                    .count()
            })
            .unwrap_or(0);
        assert_eq!(stamps, 1);
        let _ = std::fs::remove_dir_all(&dir);
    }
}
