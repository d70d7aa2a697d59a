output "registry_hostname" {
  description = "The registry's hostname: module sources are HOSTNAME/NAMESPACE/NAME/SYSTEM."
  value       = local.hostname
}

output "modules_base_url" {
  description = "Base URL of the module registry protocol (announced by discovery)."
  value       = "https://${local.hostname}/v1/modules/"
}

output "mirror_url" {
  description = "Base URL of the provider network mirror, for provider_installation { network_mirror { url } }."
  value       = "https://${local.hostname}/v1/mirror/"
}

output "bucket_name" {
  description = "Where to publish: modules/NS/NAME/SYSTEM/VERSION.tar.gz and providers/HOSTNAME/NS/TYPE/*.zip."
  value       = local.bucket_name
}

output "publisher_policy_arns" {
  description = "The IAM policy of each entry of var.publishers, to attach to the role or user that publishes."
  value       = { for team, policy in aws_iam_policy.publisher : team => policy.arn }
}

output "publisher_role_arns" {
  description = "The role of each entry of var.publishers that lists github or gitlab identities: only those repositories' tag jobs can assume it (role-to-assume in the GitHub action, REGISTRY_ROLE_ARN in the GitLab template)."
  value       = { for team, role in aws_iam_role.publisher_ci : team => role.arn }
}

output "key_admin_policy_arns" {
  description = "The IAM policy of each entry of var.key_admins, to attach to whoever uploads the namespaces' public signing keys."
  value       = { for team, policy in aws_iam_policy.key_admin : team => policy.arn }
}

output "regional_hostname" {
  description = "Target for the custom domain's DNS record (CNAME or alias), when domain_name is set."
  value       = var.domain_name != "" ? aws_apigatewayv2_domain_name.registry[0].domain_name_configuration[0].target_domain_name : null
}

output "cli_config" {
  description = "The terraform/tofu CLI's provider_installation block: the registry's own providers directly (signatures checked by the CLI), every other provider through the mirror. The same text as README's (registry::cli_config, held equal by make deploy-check)."
  value       = <<-EOT
    # Providers: ${local.hostname}/NAMESPACE/TYPE (this registry's own, signed) directly through
    # providers.v1, where the CLI checks their signatures; every other provider through
    # the network mirror.
    provider_installation {
      network_mirror {
        url     = "https://${local.hostname}/v1/mirror/"
        exclude = ["${local.hostname}/*/*"]
      }
      direct {
        include = ["${local.hostname}/*/*"]
      }
    }
  EOT
}
