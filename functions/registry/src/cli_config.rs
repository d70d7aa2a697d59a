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

/// The `host` and `credentials` blocks that send every module lookup of each upstream `host`
/// (`registry.terraform.io`) to this registry's modules pull-through under `modules_url` (the
/// modules.v1 base URL, `https://…/v1/modules/`), with `token`. A `host` block replaces the
/// host's service discovery with the services it lists, and the CLI sends the credentials of
/// the host a `source` names (not of the URL it is sent to), so the token goes only to this
/// registry: the block lists no other service. Providers of the host still need the network
/// mirror (`provider_installation`), which never asks the host.
pub fn upstream_modules(hosts: &[&str], modules_url: &str, token: &str) -> String {
    let mut text = String::from(
        "# Public modules through this registry, with no `source` line changed: each `host` block\n\
         # replaces that host's service discovery, and the CLI sends the host's credentials to it.\n",
    );
    for host in hosts {
        text.push_str(&format!(
            "host \"{host}\" {{\n  services = {{\n    \"modules.v1\" = \"{modules_url}upstream/{host}/\"\n  }}\n}}\n\
             credentials \"{host}\" {{\n  token = \"{token}\"\n}}\n"
        ));
    }
    text
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

    #[test]
    fn each_upstream_host_gets_its_modules_service_and_the_token() {
        let blocks = upstream_modules(&["registry.terraform.io"], "https://r.example/v1/modules/", "T");
        assert!(
            blocks.contains(
                "host \"registry.terraform.io\" {\n  services = {\n    \"modules.v1\" = \"https://r.example/v1/modules/upstream/registry.terraform.io/\"\n  }\n}"
            ),
            "{blocks}"
        );
        assert!(blocks.contains("credentials \"registry.terraform.io\" {\n  token = \"T\"\n}"), "{blocks}");
        assert!(!blocks.contains("providers.v1"), "only modules.v1 is sent here: {blocks}");
    }
}
