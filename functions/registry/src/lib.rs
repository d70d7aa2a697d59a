//! All registry logic, shared by the Lambda binaries and the local registry. Its modules in
//! their layers (each imports only from lower ones; `tests/library/module_graph.rs` holds the
//! code to that table), which way data flows, and where a new protocol goes:
//! docs/CODE_MAP.md.

#![warn(missing_docs)]

pub mod address;
pub mod app;
pub mod auth;
pub mod bounded;
pub mod browse;
// The fuzz targets reach the archive checks directly; nothing else outside the crate does.
#[cfg(feature = "test-support")]
pub mod archive;
#[cfg(not(feature = "test-support"))]
mod archive;
mod cache;
pub mod catalog;
pub mod cli_config;
pub mod clock;
pub mod config;
pub mod context;
pub mod error;
#[cfg(feature = "aws")]
pub mod events;
pub mod exchange;
pub mod glob;
#[cfg(feature = "aws")]
mod http_client;
pub mod index;
#[cfg(any(test, feature = "test-support"))]
pub mod invariants;
#[cfg(feature = "aws")]
pub mod lambda;
pub mod layout;
// The indexer function's maintenance commands (`lambda::indexer` runs them).
#[cfg(feature = "aws")]
mod maintenance;
pub mod manifest;
pub mod mcp;
pub mod module_docs;
pub mod oci;
pub mod percent;
pub mod printed;
pub mod provenance;
pub mod publish_log;
pub mod publishing;
pub mod query;
pub mod reader;
mod retry;
pub mod router;
mod routes;
pub mod signing;
pub mod storage;
#[cfg(any(test, feature = "test-support"))]
pub mod testing;
pub mod upstream;
pub mod usage;
pub mod web;

pub use app::App;
pub use config::Config;
pub use error::Error;
pub use exchange::{Reply, Request};
