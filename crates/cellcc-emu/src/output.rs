//! Output files (`--stats`, the mm-link logs, `cellcc-flow`'s logs and summaries) written
//! so that a path given on the command line can never be used to overwrite some other
//! file, and a failed run leaves nothing behind.
//!
//! * The data goes to a fresh temporary file in the destination's directory, created with
//!   `O_CREAT | O_EXCL | O_NOFOLLOW` (an existing file or symlink of that name is an
//!   error, never opened).
//! * [`PendingOutput::commit`] renames it over the destination at the end of the run.
//!   `rename` replaces a directory entry: if the destination is a symlink, the link itself
//!   is replaced and the file it pointed to is left untouched; a hard link to another file
//!   is unlinked from this name, not written through.
//! * A [`PendingOutput`] dropped without commit (an error or a panic) removes its
//!   temporary file, so a failed run leaves no empty or partial output. Only a SIGKILL of
//!   the writer leaves the temporary file (named `.NAME.tmp-PID-N`).
//! * A destination that is a directory is refused when the file is created, not at the
//!   end.
//! * A destination that is a character device or a FIFO (`/dev/null`, `/dev/stdout`, a
//!   named pipe; through symlinks, as `/dev/stdout` is one) is written in place and never
//!   replaced: renaming over it would put a regular file where the device was (as root,
//!   `/dev/null` itself). Writing into a device or a pipe overwrites no file. A block
//!   device or a socket is refused.
//!
//! Directories along the path are resolved as usual (only the last component is
//! protected): the directory is the caller's choice.

use std::fs::{File, OpenOptions};
use std::io;
use std::os::unix::fs::{FileTypeExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

/// Distinguishes the temporary files of one process.
static SEQUENCE: AtomicU64 = AtomicU64::new(0);

/// Mode of a new output file before the umask, as `File::create` uses.
const MODE: u32 = 0o666;

/// An output file being written: the temporary file until [`PendingOutput::commit`], or
/// (`tmp` = `None`) a device or pipe written in place.
#[derive(Debug)]
pub struct PendingOutput {
    dest: PathBuf,
    tmp: Option<PathBuf>,
    committed: bool,
}

/// Creates the temporary file for `dest` and returns it, open for writing, with the
/// handle that renames it into place. `owner`, if given, is the (uid, gid) the file is
/// given to (the invoking user of a run under `sudo`).
pub fn create(dest: &Path, owner: Option<(u32, u32)>) -> io::Result<(File, PendingOutput)> {
    let Some(name) = dest.file_name() else {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            "not a file name (ends in `/` or `..`)",
        ));
    };
    if std::fs::symlink_metadata(dest).is_ok_and(|m| m.is_dir()) {
        return Err(io::Error::new(
            io::ErrorKind::IsADirectory,
            "is a directory; give a file name",
        ));
    }
    if let Ok(kind) = std::fs::metadata(dest).map(|m| m.file_type()) {
        if kind.is_char_device() || kind.is_fifo() {
            let file = OpenOptions::new()
                .write(true)
                .custom_flags(libc::O_CLOEXEC)
                .open(dest)?;
            let pending = PendingOutput {
                dest: dest.to_path_buf(),
                tmp: None,
                committed: false,
            };
            return Ok((file, pending));
        }
        if kind.is_block_device() || kind.is_socket() {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                "is a block device or a socket; give a file name, a character device or a FIFO",
            ));
        }
    }
    let dir = match dest.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    };
    let n = SEQUENCE.fetch_add(1, Ordering::Relaxed);
    let mut tmp_name = std::ffi::OsString::from(".");
    tmp_name.push(name);
    tmp_name.push(format!(".tmp-{}-{n}", std::process::id()));
    let tmp = dir.join(tmp_name);
    let file = OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(MODE)
        .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC)
        .open(&tmp)?;
    let pending = PendingOutput {
        dest: dest.to_path_buf(),
        tmp: Some(tmp),
        committed: false,
    };
    if let Some((uid, gid)) = owner {
        std::os::unix::fs::fchown(&file, Some(uid), Some(gid))?;
    }
    Ok((file, pending))
}

impl PendingOutput {
    /// The destination, as given.
    pub fn dest(&self) -> &Path {
        &self.dest
    }

    /// Renames the temporary file over the destination (nothing to do for a device or a
    /// pipe). Call it once everything has been written and flushed.
    pub fn commit(mut self) -> io::Result<()> {
        if let Some(tmp) = &self.tmp {
            std::fs::rename(tmp, &self.dest)?;
        }
        self.committed = true;
        Ok(())
    }
}

impl Drop for PendingOutput {
    fn drop(&mut self) {
        if let (false, Some(tmp)) = (self.committed, &self.tmp) {
            let _ = std::fs::remove_file(tmp);
        }
    }
}

/// The invoking user of a run under `sudo` (`SUDO_UID`, `SUDO_GID`), when this process is
/// root: outputs are given to them. `None` otherwise.
pub fn sudo_owner() -> Option<(u32, u32)> {
    // SAFETY: plain system call without arguments.
    if unsafe { libc::geteuid() } != 0 {
        return None;
    }
    let uid = std::env::var("SUDO_UID").ok()?.parse().ok()?;
    let gid = std::env::var("SUDO_GID").ok()?.parse().ok()?;
    Some((uid, gid))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    fn temp_dir(tag: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!(
            "cellcc-output-{tag}-{}-{}",
            std::process::id(),
            SEQUENCE.fetch_add(1, Ordering::Relaxed)
        ));
        std::fs::create_dir_all(&dir).unwrap();
        dir
    }

    fn entries(dir: &Path) -> Vec<String> {
        let mut v: Vec<String> = std::fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        v.sort();
        v
    }

    #[test]
    fn a_symlink_at_the_destination_is_replaced_and_its_target_untouched() {
        let dir = temp_dir("symlink");
        let victim = dir.join("victim");
        std::fs::write(&victim, "precious\n").unwrap();
        let dest = dir.join("stats.json");
        std::os::unix::fs::symlink(&victim, &dest).unwrap();
        let (mut file, pending) = create(&dest, None).unwrap();
        file.write_all(b"new\n").unwrap();
        drop(file);
        pending.commit().unwrap();
        assert_eq!(std::fs::read_to_string(&victim).unwrap(), "precious\n");
        assert!(!std::fs::symlink_metadata(&dest).unwrap().is_symlink());
        assert_eq!(std::fs::read_to_string(&dest).unwrap(), "new\n");
        assert_eq!(entries(&dir), ["stats.json", "victim"]);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn an_uncommitted_output_leaves_nothing_and_the_old_file_is_kept() {
        let dir = temp_dir("drop");
        let dest = dir.join("log");
        std::fs::write(&dest, "previous run\n").unwrap();
        let (mut file, pending) = create(&dest, None).unwrap();
        file.write_all(b"partial").unwrap();
        drop(pending);
        assert_eq!(entries(&dir), ["log"]);
        assert_eq!(std::fs::read_to_string(&dest).unwrap(), "previous run\n");
        let fresh = dir.join("fresh");
        drop(create(&fresh, None).unwrap());
        assert_eq!(entries(&dir), ["log"]);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn a_character_device_or_a_fifo_is_written_in_place_and_never_replaced() {
        let dir = temp_dir("device");
        // A symlink to /dev/null, as /dev/stdout is a symlink: writing must go to the
        // device and leave both the link and the device node as they were.
        let link = dir.join("null");
        std::os::unix::fs::symlink("/dev/null", &link).unwrap();
        let (mut file, pending) = create(&link, None).unwrap();
        file.write_all(b"discarded\n").unwrap();
        drop(file);
        pending.commit().unwrap();
        assert!(std::fs::symlink_metadata(&link).unwrap().is_symlink());
        assert!(std::fs::metadata("/dev/null")
            .unwrap()
            .file_type()
            .is_char_device());
        assert_eq!(entries(&dir), ["null"]);
        // A FIFO: the reader gets the bytes, and the FIFO stays a FIFO.
        let fifo = dir.join("fifo");
        let c = std::ffi::CString::new(fifo.as_os_str().as_encoded_bytes()).unwrap();
        // SAFETY: a valid NUL-terminated path.
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
        let reader = {
            let fifo = fifo.clone();
            std::thread::spawn(move || std::fs::read_to_string(fifo).unwrap())
        };
        let (mut file, pending) = create(&fifo, None).unwrap();
        file.write_all(b"through the pipe\n").unwrap();
        drop(file);
        pending.commit().unwrap();
        assert_eq!(reader.join().unwrap(), "through the pipe\n");
        assert!(std::fs::metadata(&fifo).unwrap().file_type().is_fifo());
        assert_eq!(entries(&dir), ["fifo", "null"]);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn a_socket_is_refused() {
        let dir = temp_dir("socket");
        let path = dir.join("sock");
        let _listener = std::os::unix::net::UnixListener::bind(&path).unwrap();
        let e = create(&path, None).unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::InvalidInput);
        assert!(std::fs::metadata(&path).unwrap().file_type().is_socket());
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn directories_and_missing_directories_are_refused_at_creation() {
        let dir = temp_dir("dir");
        let e = create(&dir, None).unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::IsADirectory);
        assert!(create(&dir.join("no/such/dir/file"), None).is_err());
        assert!(create(Path::new("/"), None).is_err());
        assert!(entries(&dir).is_empty());
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
