//! The CLI configuration a user gives `terraform` or `tofu`: one source for README's block,
//! docs/DEPLOY.md's, infra's `cli_config` output and the `terraform.rc` that `make dev`
//! writes (tests hold each of them to this text).
//!
//! The registry's own providers (`HOST/NAMESPACE/TYPE`) install directly through
//! providers.v1, where the CLI checks their release signatures against the namespace's keys;
//! through a network mirror it would check only the hashes the mirror hands it. Every other
//! provider goes through the mirror. (The CLI also cannot use a mirror for a host with a port:
//! "first path segment in URL cannot contain colon".)

/// The `provider_installation` block for a registry serving its own providers as `own_host`,
/// with its network mirror at `mirror_url`; mirror only when it serves none of its own.
pub fn provider_installation(own_host: Option<&str>, mirror_url: &str) -> String {
    match own_host {
        Some(own) => format!(
            "# Providers: {own}/NAMESPACE/TYPE (this registry's own, signed) directly through\n\
             # providers.v1, where the CLI checks their signatures; every other provider through\n\
             # the network mirror.\n\
             provider_installation {{\n  network_mirror {{\n    url     = \"{mirror_url}\"\n    \
             exclude = [\"{own}/*/*\"]\n  }}\n  direct {{\n    include = [\"{own}/*/*\"]\n  }}\n}}\n"
        ),
        None => format!(
            "# Providers: through the network mirror.\n\
             provider_installation {{\n  network_mirror {{\n    url = \"{mirror_url}\"\n  }}\n}}\n"
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_own_host_installs_directly_and_everything_else_through_the_mirror() {
        let block = provider_installation(Some("registry.example.com"), "https://registry.example.com/v1/mirror/");
        assert!(block.contains("exclude = [\"registry.example.com/*/*\"]"), "{block}");
        assert!(block.contains("direct {\n    include = [\"registry.example.com/*/*\"]"), "{block}");
        let mirror_only = provider_installation(None, "https://r.example/v1/mirror/");
        assert!(!mirror_only.contains("direct"), "{mirror_only}");
    }
}
