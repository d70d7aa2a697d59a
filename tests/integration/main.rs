//! In-process integration tests, in one binary: the local registry and its embedded S3 over
//! real HTTP, TLS and SigV4 in this process, without the terraform CLI or a browser (those are
//! `e2e` and `browser`). `make test`'s "integration" stage, with `hostile`.

mod ci_templates;
mod cli_blocks;
mod concurrent_publish;
mod docs;
mod docs_commands;
mod embedded_s3;
mod faults;
mod hints;
mod infra_consistency;
mod large_writes;
mod mcp_clients;
mod module_pull_through;
mod oci_clients;
mod oci_handshake;
mod oidc;
mod pass_faults;
mod provenance;
mod publish;
mod pull_through;
mod tokens;
mod versions;
