//! Reading a plugin's files without hanging on special files: reading a FIFO
//! waits for a writer forever and a device may never end, so only regular files
//! are read, and the error names the file and what it is.

use std::fs::{File, Metadata, OpenOptions};
use std::io::{self, Read as _};
use std::os::unix::fs::{FileTypeExt as _, OpenOptionsExt as _};
use std::path::Path;

/// An error unless `metadata` describes a regular file.
pub fn require_regular(metadata: &Metadata) -> io::Result<()> {
    if metadata.is_file() {
        return Ok(());
    }
    let kind = metadata.file_type();
    let what = if kind.is_fifo() {
        "a FIFO (named pipe)"
    } else if kind.is_dir() {
        "a directory"
    } else if kind.is_socket() {
        "a socket"
    } else if kind.is_char_device() {
        "a character device"
    } else if kind.is_block_device() {
        "a block device"
    } else {
        "a special file"
    };
    Err(io::Error::new(
        io::ErrorKind::InvalidInput,
        format!("not a regular file but {what}"),
    ))
}

/// Opens `path` for reading if it is a regular file. Checked before opening (a
/// device is never even opened) and again on the opened handle, since the path
/// may have been swapped in between; opened non-blocking so that a FIFO swapped
/// in cannot block the open itself (no effect on reading a regular file).
pub fn open_regular(path: &Path) -> io::Result<(File, Metadata)> {
    require_regular(&std::fs::metadata(path)?)?;
    let file = OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK)
        .open(path)?;
    let metadata = file.metadata()?;
    require_regular(&metadata)?;
    Ok((file, metadata))
}

/// The contents of the regular file at `path`, with the metadata of the handle
/// they were read through.
pub fn read_regular(path: &Path) -> io::Result<(Vec<u8>, Metadata)> {
    let (mut file, metadata) = open_regular(path)?;
    let mut bytes = Vec::with_capacity(usize::try_from(metadata.len()).unwrap_or(0));
    file.read_to_end(&mut bytes)?;
    Ok((bytes, metadata))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn special_files_are_refused_without_blocking() {
        let dir = tempfile::tempdir().unwrap();
        let fifo = dir.path().join("plugin.wasm");
        let status = std::process::Command::new("mkfifo")
            .arg(&fifo)
            .status()
            .unwrap();
        assert!(status.success());
        let error = read_regular(&fifo).unwrap_err();
        assert_eq!(error.kind(), io::ErrorKind::InvalidInput);
        assert_eq!(
            error.to_string(),
            "not a regular file but a FIFO (named pipe)"
        );
        assert!(read_regular(dir.path()).is_err(), "a directory");
        let file = dir.path().join("f");
        std::fs::write(&file, b"bytes").unwrap();
        assert_eq!(read_regular(&file).unwrap().0, b"bytes");
    }
}
