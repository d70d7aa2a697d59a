//! All registry logic, shared by the Lambda binaries and the local registry. Modules, from the
//! leaves up (dependencies point one way; `tests/module_graph.rs` fails on a cycle):
//!
//! - [`error`]: one error enum, mapped to HTTP status and a JSON body.
//! - [`clock`]: Unix time and the one timestamp format the registry writes.
//! - [`address`]: module and provider addresses and versions, validated by the protocol grammar.
//! - [`layout`]: the only module that knows S3 keys, who writes them, and what a key is.
//! - [`manifest`]: manifest formats, their protocol transforms, and how documents are stored.
//! - [`storage`]: the narrow storage interface (S3, in-memory, none).
//! - `retry`: the conflict-retry loop behind every conditional write.
//! - [`catalog`]: every module and provider served, for listing and search.
//! - `archive`: validation of uploaded archives and the `h1:` hash.
//! - [`signing`]: OpenPGP signing keys, release signatures and `SHA256SUMS` files.
//! - [`index`]: rebuilds manifests from the archives present, with conditional writes.
//! - [`router`]: (method, raw path) to a validated [`router::Route`], pure.
//! - [`access`]: tokens, scopes and the access decision.
//! - [`oidc`]: JWTs from OpenID Connect issuers: their configuration and claims-to-scopes
//!   mapping; verification and the key sets with feature `aws`.
//! - [`config`]: typed configuration, loaded once from the environment.
//! - `cache`: the warm container's manifest cache.
//! - `http_client` (feature `aws`): the one outbound HTTPS client (upstreams, issuers' keys).
//! - [`upstream`]: upstream registries for the pull-through mirror (records; the client and
//!   the puller with feature `aws`).
//! - [`query`]: the bounded query string grammar of the list and search routes.
//! - [`app`]: the handler every deployment runs; one storage read per request.
//! - `browse`: the module list, search and details API (the public registry's v1 shape).
//! - `pull_through` (feature `aws`): the mirror routes' answers for upstream providers.
//! - `events` (feature `aws`): S3 notifications and the indexer function's processing of them.
//! - `lambda` (feature `aws`): what the Lambda `main`s call.
//! - `testing`, `invariants` (feature `test-support`): archive builders and the routing
//!   invariants that the property tests and fuzz targets share.

#![warn(missing_docs)]

pub mod access;
pub mod address;
pub mod app;
mod browse;
// The fuzz targets reach the archive checks directly; nothing else outside the crate does.
#[cfg(feature = "test-support")]
pub mod archive;
#[cfg(not(feature = "test-support"))]
mod archive;
mod cache;
pub mod catalog;
pub mod clock;
pub mod config;
pub mod error;
#[cfg(feature = "aws")]
pub mod events;
#[cfg(feature = "aws")]
mod http_client;
pub mod index;
#[cfg(any(test, feature = "test-support"))]
pub mod invariants;
#[cfg(feature = "aws")]
pub mod lambda;
pub mod layout;
pub mod manifest;
pub mod module_docs;
pub mod oidc;
pub mod percent;
pub mod publish_log;
#[cfg(feature = "aws")]
mod pull_through;
pub mod query;
mod retry;
pub mod router;
pub mod signing;
pub mod storage;
#[cfg(any(test, feature = "test-support"))]
pub mod testing;
pub mod upstream;
pub mod web;

pub use app::{App, Reply};
pub use config::Config;
pub use error::Error;
