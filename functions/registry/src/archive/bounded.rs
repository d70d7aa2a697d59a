//! What reading an archive may cost, counted as it is read: the decompressed stream and each
//! phase's bound (`Meter`, `Metered`), and the bytes every entry yields (`Budget`), both
//! against the unpacked-size limit.

use std::cell::Cell;
use std::io::{Read, Seek, SeekFrom};
use std::rc::Rc;

/// Counts what a reader hands out: every byte against the unpacked-size limit (when the
/// stream is the decompressed one), and within a phase (tar headers between two entries, the
/// zip central directory) against that phase's bound, so an oversized header is refused
/// before a library holds it in memory. Remembers why it stopped a read, so the caller can
/// say that rather than the library's generic I/O error.
pub(super) struct Meter {
    left: Cell<u64>,
    phase: Cell<Option<(u64, &'static str)>>,
    tripped: Cell<Option<&'static str>>,
}

impl Meter {
    pub(super) fn new(unpacked_bytes: u64) -> Rc<Meter> {
        Rc::new(Meter { left: Cell::new(unpacked_bytes), phase: Cell::new(None), tripped: Cell::new(None) })
    }

    pub(super) fn phase(&self, bound: Option<(u64, &'static str)>) {
        self.phase.set(bound);
    }

    pub(super) fn take(&self, n: u64, total: bool) -> std::io::Result<()> {
        let trip = |why: &'static str| {
            self.tripped.set(Some(why));
            Err(std::io::Error::other(why))
        };
        if total {
            match self.left.get().checked_sub(n) {
                Some(left) => self.left.set(left),
                None => return trip("unpacks to more than the size limit"),
            }
        }
        if let Some((left, why)) = self.phase.get() {
            match left.checked_sub(n) {
                Some(left) => self.phase.set(Some((left, why))),
                None => return trip(why),
            }
        }
        Ok(())
    }

    /// The reason to report for a library error: the meter's, if it stopped the read.
    pub(super) fn explain(&self, context: &str, e: impl std::fmt::Display) -> String {
        match self.tripped.get() {
            Some(why) => why.to_string(),
            None => format!("{context}: {e}"),
        }
    }
}

pub(super) struct Metered<R> {
    pub(super) inner: R,
    pub(super) meter: Rc<Meter>,
    /// Count every byte against the unpacked-size limit (a decompressed stream).
    pub(super) total: bool,
}

impl<R: Read> Read for Metered<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.meter.take(n as u64, self.total)?;
        Ok(n)
    }
}

impl<R: Seek> Seek for Metered<R> {
    fn seek(&mut self, pos: SeekFrom) -> std::io::Result<u64> {
        self.inner.seek(pos)
    }
}

/// The one place every entry's data is read: counts the bytes the entry *yields* (what
/// unpacking writes, which is not what the archive holds: a zip inflates, tar-rs fills sparse
/// holes with zeros it never read) against the unpacked-size limit, and hands each chunk to
/// the sink that hashes, keeps or writes it, so nothing is written that was not counted.
/// Reading every entry to its end also finds corrupt data now, not at `terraform init`.
pub(super) struct Budget {
    left: u64,
    buffer: Vec<u8>,
}

impl Budget {
    pub(super) fn new(max_unpacked: u64) -> Self {
        Budget { left: max_unpacked, buffer: vec![0u8; 64 * 1024] }
    }

    /// Read `reader` to its end into `sink`; the bytes it yielded.
    pub(super) fn drain(
        &mut self,
        mut reader: impl Read,
        unreadable: &dyn Fn(std::io::Error) -> String,
        mut sink: impl FnMut(&[u8]) -> Result<(), String>,
    ) -> Result<u64, String> {
        let mut yielded = 0u64;
        loop {
            let n = reader.read(&mut self.buffer).map_err(unreadable)?;
            if n == 0 {
                return Ok(yielded);
            }
            self.left =
                self.left.checked_sub(n as u64).ok_or_else(|| "unpacks to more than the size limit".to_string())?;
            yielded += n as u64;
            sink(&self.buffer[..n])?;
        }
    }
}
