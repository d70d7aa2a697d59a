//! All registry logic, shared by the Lambda binaries and the local registry.
//!
//! - [`router`]: (method, raw path) to a validated [`router::Route`], pure.
//! - [`app`]: the handler every deployment runs; one storage read per request.
//! - [`layout`]: the only module that knows S3 keys.
//! - [`manifest`]: manifest formats and their protocol transforms.
//! - [`index`]: rebuilds manifests from the archives present, with conditional writes.
//! - [`archive`]: validation of uploaded archives and the `h1:` hash.
//! - [`storage`]: the narrow storage interface (S3, in-memory).
//! - [`events`]: S3 notifications and the indexer function's handling of a batch.
//! - [`lambda`]: what the Lambda `main`s call.

pub mod access;
pub mod address;
pub mod app;
pub mod archive;
pub mod cache;
pub mod config;
pub mod error;
pub mod events;
pub mod index;
pub mod invariants;
#[cfg(feature = "aws")]
pub mod lambda;
pub mod layout;
pub mod manifest;
pub mod router;
pub mod storage;
#[cfg(any(test, feature = "test-support"))]
pub mod testing;

pub use app::{App, Reply};
pub use config::Config;
pub use error::Error;
