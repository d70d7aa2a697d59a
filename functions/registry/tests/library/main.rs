//! The library's integration tests, in one binary (one link instead of four): the Lambda
//! handlers fed real API Gateway and S3 event JSON, the module graph, and the request-path
//! properties. No sockets, no files but the crate's own: `make test`'s "unit" stage.

mod bounds;
mod hostile_modules;
mod infra_bounds;
mod lambda_events;
mod mcp;
mod module_graph;
mod properties;
mod provenance;
mod s3_events;
mod usage;
