//! The hostile corpus against the real transports and the bucket. A binary of its own: it
//! captures every log line of the process at DEBUG (one global subscriber) to prove that no
//! secret is logged, which other tests' traffic must not mix into.

mod bucket_rights;
mod objects;
mod requests;
