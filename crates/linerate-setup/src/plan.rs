//! The plan's files, made from the snapshot: an edit of a file that exists (keeping its mode)
//! or a new one. The plan's types are `linerate_facts`'s (`Plan`, `Step`, `FileChange`, ...),
//! shared with the renderers.

use linerate_facts::{FileAction, FileChange};

use crate::snapshot::Snapshot;

/// `content` for `path`: an edit of the file when the snapshot has it (keeping its mode),
/// else a new file with mode 0o644.
pub fn write_file(s: &Snapshot, path: &str, content: String) -> FileChange {
    FileChange {
        path: path.to_string(),
        mode: s.mode(path).unwrap_or(0o644),
        action: if s.file(path).is_some() {
            FileAction::Modify
        } else {
            FileAction::Create
        },
        content,
    }
}

/// [`write_file`], or `None` when the file already holds exactly `content`.
pub fn changed_file(s: &Snapshot, path: &str, content: String) -> Option<FileChange> {
    (s.file(path) != Some(content.as_str())).then(|| write_file(s, path, content))
}
