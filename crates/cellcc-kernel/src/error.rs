//! One error type for the whole tool: a message that says what is wrong and, where it
//! helps, how to fix it. `main` prints it and exits non-zero; nothing here panics on user
//! input or on the state of the machine.

use std::fmt;

/// A failure, as the message the user sees.
#[derive(Debug)]
pub(crate) struct Error(String);

impl Error {
    /// An error with this message.
    pub(crate) fn new(msg: impl Into<String>) -> Self {
        Error(msg.into())
    }

    /// The message, prefixed with what was being done (`loading c2tcp: ...`).
    pub(crate) fn context(self, what: impl fmt::Display) -> Self {
        Error(format!("{what}: {}", self.0))
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for Error {}

/// Result with [`Error`].
pub(crate) type Result<T> = std::result::Result<T, Error>;

/// Adds what was being done to any displayable error (libbpf, I/O).
pub(crate) trait Context<T> {
    /// Maps the error to an [`Error`] that starts with `what`.
    fn context(self, what: impl fmt::Display) -> Result<T>;
}

impl<T, E: fmt::Display> Context<T> for std::result::Result<T, E> {
    fn context(self, what: impl fmt::Display) -> Result<T> {
        self.map_err(|e| Error(format!("{what}: {e}")))
    }
}

/// Returns early with an [`Error`] built from a format string.
#[macro_export]
macro_rules! bail {
    ($($arg:tt)*) => {
        return Err($crate::error::Error::new(format!($($arg)*)))
    };
}
