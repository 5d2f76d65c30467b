//! A writer that moves file writes off the event loop.
//!
//! A `write(2)` to a file can sleep: when the machine has many dirty pages the kernel
//! throttles writers (`balance_dirty_pages`), and a writer may wait for a page under
//! writeback. On the event loop that sleep makes every packet due meanwhile late. The
//! [`OffThreadWriter`] collects the log's bytes in memory and hands each full chunk to a
//! writer thread through a channel, so the loop only ever copies bytes.
//!
//! The writer thread runs with the normal scheduling policy (the event loop's
//! `SCHED_FIFO` is reset for children, see `sys::set_realtime`). A write error stops the
//! thread's writing and is returned by the next [`Write::flush`].

use std::io::{self, Write};
use std::sync::mpsc::{self, Receiver, Sender};
use std::thread::{self, JoinHandle};

/// Bytes collected before a chunk goes to the writer thread.
const CHUNK_BYTES: usize = 64 * 1024;

enum Message {
    Data(Vec<u8>),
    /// Flush the file and report the first error so far.
    Flush(Sender<io::Result<()>>),
}

/// Collects bytes and writes them to its inner writer on a thread of its own.
pub struct OffThreadWriter {
    buf: Vec<u8>,
    to_thread: Option<Sender<Message>>,
    thread: Option<JoinHandle<()>>,
}

impl OffThreadWriter {
    /// Starts the writer thread, named `name`, that owns `inner`.
    pub fn spawn<W: Write + Send + 'static>(inner: W, name: &str) -> io::Result<Self> {
        let (to_thread, from_loop) = mpsc::channel();
        let thread = thread::Builder::new()
            .name(name.to_string())
            .spawn(move || write_chunks(inner, from_loop))?;
        Ok(OffThreadWriter {
            buf: Vec::with_capacity(CHUNK_BYTES),
            to_thread: Some(to_thread),
            thread: Some(thread),
        })
    }

    fn send(&mut self, message: Message) -> io::Result<()> {
        let gone = || io::Error::other("the log writer thread has stopped");
        self.to_thread
            .as_ref()
            .ok_or_else(gone)?
            .send(message)
            .map_err(|_| gone())
    }

    fn send_buffered(&mut self) -> io::Result<()> {
        if self.buf.is_empty() {
            return Ok(());
        }
        let chunk = std::mem::replace(&mut self.buf, Vec::with_capacity(CHUNK_BYTES));
        self.send(Message::Data(chunk))
    }
}

/// The writer thread: writes chunks until the channel closes; remembers the first error.
fn write_chunks<W: Write>(mut inner: W, from_loop: Receiver<Message>) {
    let mut first_error: Option<io::Error> = None;
    for message in from_loop {
        match message {
            Message::Data(chunk) => {
                if first_error.is_none() {
                    first_error = inner.write_all(&chunk).err();
                }
            }
            Message::Flush(reply) => {
                let result = match first_error.take() {
                    Some(e) => Err(e),
                    None => inner.flush(),
                };
                // The loop waits for the reply; if it has gone, nobody needs it.
                let _ = reply.send(result);
            }
        }
    }
    if first_error.is_none() {
        // Dropped without a final flush (an error path): write what there is.
        let _ = inner.flush();
    }
}

impl Write for OffThreadWriter {
    fn write(&mut self, bytes: &[u8]) -> io::Result<usize> {
        self.buf.extend_from_slice(bytes);
        if self.buf.len() >= CHUNK_BYTES {
            self.send_buffered()?;
        }
        Ok(bytes.len())
    }

    /// Sends what is buffered and waits until the thread has written and flushed it.
    fn flush(&mut self) -> io::Result<()> {
        self.send_buffered()?;
        let (reply, answer) = mpsc::channel();
        self.send(Message::Flush(reply))?;
        answer
            .recv()
            .map_err(|_| io::Error::other("the log writer thread has stopped"))?
    }
}

impl Drop for OffThreadWriter {
    fn drop(&mut self) {
        let _ = self.send_buffered();
        // Closing the channel ends the thread once it has written everything.
        self.to_thread = None;
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::{Arc, Mutex};

    /// A writer into shared memory, to look at what the thread wrote.
    #[derive(Clone, Default)]
    struct Shared(Arc<Mutex<Vec<u8>>>);

    impl Write for Shared {
        fn write(&mut self, bytes: &[u8]) -> io::Result<usize> {
            self.0.lock().unwrap().extend_from_slice(bytes);
            Ok(bytes.len())
        }
        fn flush(&mut self) -> io::Result<()> {
            Ok(())
        }
    }

    #[test]
    fn bytes_arrive_in_order_by_flush_and_by_drop() {
        let shared = Shared::default();
        let mut w = OffThreadWriter::spawn(shared.clone(), "test-log").unwrap();
        let mut expected = Vec::new();
        for i in 0..50_000u32 {
            let line = format!("{i} + 1504\n");
            w.write_all(line.as_bytes()).unwrap();
            expected.extend_from_slice(line.as_bytes());
        }
        assert!(expected.len() > 4 * CHUNK_BYTES);
        w.flush().unwrap();
        assert_eq!(*shared.0.lock().unwrap(), expected);

        w.write_all(b"tail\n").unwrap();
        drop(w);
        expected.extend_from_slice(b"tail\n");
        assert_eq!(*shared.0.lock().unwrap(), expected);
    }

    struct Failing;

    impl Write for Failing {
        fn write(&mut self, _: &[u8]) -> io::Result<usize> {
            Err(io::Error::other("disk full"))
        }
        fn flush(&mut self) -> io::Result<()> {
            Ok(())
        }
    }

    #[test]
    fn a_write_error_of_the_thread_is_returned_by_flush() {
        let mut w = OffThreadWriter::spawn(Failing, "test-log").unwrap();
        w.write_all(&vec![b'x'; CHUNK_BYTES + 1]).unwrap();
        let err = w.flush().unwrap_err();
        assert_eq!(err.to_string(), "disk full");
    }
}
