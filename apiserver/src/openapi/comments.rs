//! The comments of the proto files (protox keeps the source info), looked up by descriptor.

use std::collections::HashMap;

use prost_reflect::DescriptorPool;

/// Leading (or else trailing) comments by file name and descriptor path.
#[derive(Debug, Default)]
pub(crate) struct Comments {
    by_location: HashMap<(String, Vec<i32>), String>,
}

impl Comments {
    pub(crate) fn new(pool: &DescriptorPool) -> Self {
        let mut by_location = HashMap::new();
        for file in pool.file_descriptor_protos() {
            let Some(info) = &file.source_code_info else {
                continue;
            };
            for location in &info.location {
                let text = location
                    .leading_comments
                    .as_deref()
                    .or(location.trailing_comments.as_deref())
                    .map(clean)
                    .unwrap_or_default();
                if !text.is_empty() {
                    by_location.insert((file.name().to_string(), location.path.clone()), text);
                }
            }
        }
        Self { by_location }
    }

    /// The comment of the descriptor at `path` in `file`, if it has one.
    pub(crate) fn get(&self, file: &str, path: &[i32]) -> Option<&str> {
        self.by_location
            .get(&(file.to_string(), path.to_vec()))
            .map(String::as_str)
    }
}

/// A comment without the space after `//` on each line and without surrounding blank lines.
fn clean(comment: &str) -> String {
    let lines: Vec<&str> = comment
        .lines()
        .map(|line| line.strip_prefix(' ').unwrap_or(line).trim_end())
        .collect();
    lines.join("\n").trim().to_string()
}

/// The first sentence (or line) of a comment, for an operation's summary.
pub(crate) fn summary(comment: &str) -> String {
    let first_line = comment.lines().next().unwrap_or_default();
    match first_line.find(". ") {
        Some(end) => first_line[..=end].to_string(),
        None => first_line.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cleaned_and_summarised() {
        assert_eq!(
            clean(" Reads one cluster.\n Second line.\n"),
            "Reads one cluster.\nSecond line."
        );
        assert_eq!(
            summary("Creates a RayCluster. Then more.\nDetails"),
            "Creates a RayCluster."
        );
        assert_eq!(summary("Lists clusters"), "Lists clusters");
    }
}
