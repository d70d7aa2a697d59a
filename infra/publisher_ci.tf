# CI with no stored secrets: a role per publisher that lists CI identities (var.publishers
# github, gitlab), which only those repositories' tag jobs can assume with their OpenID
# Connect token, holding exactly that publisher's policy. docs/PUBLISHING.md, CI.
locals {
  ci_github = { for team, p in var.publishers : team => p.github if length(p.github) > 0 }
  ci_gitlab = { for team, p in var.publishers : team => p.gitlab if length(p.gitlab) > 0 }
  ci_teams  = toset(concat(keys(local.ci_github), keys(local.ci_gitlab)))
  # The condition keys IAM gives an OIDC provider's claims: its URL without https://.
  github_issuer = trimprefix(var.ci_oidc.github_url, "https://")
  gitlab_issuer = trimprefix(var.ci_oidc.gitlab_url, "https://")
  github_provider_arn = (var.ci_oidc.github_provider_arn != "" ? var.ci_oidc.github_provider_arn :
  try(aws_iam_openid_connect_provider.github[0].arn, ""))
  gitlab_provider_arn = (var.ci_oidc.gitlab_provider_arn != "" ? var.ci_oidc.gitlab_provider_arn :
  try(aws_iam_openid_connect_provider.gitlab[0].arn, ""))
}

resource "aws_iam_openid_connect_provider" "github" {
  count          = length(local.ci_github) > 0 && var.ci_oidc.github_provider_arn == "" ? 1 : 0
  url            = var.ci_oidc.github_url
  client_id_list = [var.ci_oidc.audience]
  tags           = var.tags
}

resource "aws_iam_openid_connect_provider" "gitlab" {
  count          = length(local.ci_gitlab) > 0 && var.ci_oidc.gitlab_provider_arn == "" ? 1 : 0
  url            = var.ci_oidc.gitlab_url
  client_id_list = [var.ci_oidc.audience]
  tags           = var.tags
}

# Each CI's statement. A GitHub Actions job's sub is repo:OWNER/REPO:ref:refs/tags/TAG on a tag
# push (the default subject template); a GitLab CI job's project_path:GROUP/PROJECT:ref_type:tag:ref:TAG
# in a tag pipeline. Repositories are listed exactly (variables.tf: no wildcard), and a ref holds
# no ":", so each pattern's one "*" is a tag's name. A GitHub job with an environment has the
# subject repo:OWNER/REPO:environment:NAME, never matched, and refused outright besides.
locals {
  ci_statements = {
    github = {
      sid      = "GitHubActionsTags"
      provider = local.github_provider_arn
      issuer   = local.github_issuer
      subjects = { for team, repos in local.ci_github : team => [for r in repos : "repo:${r}:ref:refs/tags/*"] }
      refused  = ["*:environment:*"]
    }
    gitlab = {
      sid      = "GitLabCITags"
      provider = local.gitlab_provider_arn
      issuer   = local.gitlab_issuer
      subjects = { for team, paths in local.ci_gitlab : team => [for p in paths : "project_path:${p}:ref_type:tag:ref:*"] }
      refused  = []
    }
  }
}

data "aws_iam_policy_document" "publisher_trust" {
  for_each = local.ci_teams

  dynamic "statement" {
    for_each = { for ci, c in local.ci_statements : ci => c if contains(keys(c.subjects), each.key) }
    content {
      sid     = statement.value.sid
      actions = ["sts:AssumeRoleWithWebIdentity"]
      principals {
        type        = "Federated"
        identifiers = [statement.value.provider]
      }
      condition {
        test     = "StringEquals"
        variable = "${statement.value.issuer}:aud"
        values   = [var.ci_oidc.audience]
      }
      condition {
        test     = "StringLike"
        variable = "${statement.value.issuer}:sub"
        values   = statement.value.subjects[each.key]
      }
      dynamic "condition" {
        for_each = length(statement.value.refused) > 0 ? [statement.value.refused] : []
        content {
          test     = "StringNotLike"
          variable = "${statement.value.issuer}:sub"
          values   = condition.value
        }
      }
    }
  }
}

resource "aws_iam_role" "publisher_ci" {
  for_each = local.ci_teams

  lifecycle {
    precondition {
      condition     = length("${var.name}-publish-${each.key}") <= 64
      error_message = "The role ${var.name}-publish-${each.key} would be longer than IAM's 64 characters: a shorter publishers key or name."
    }
  }

  name                 = "${var.name}-publish-${each.key}"
  description          = "Assumed by the tag jobs of ${join(", ", concat(lookup(local.ci_github, each.key, []), lookup(local.ci_gitlab, each.key, [])))} to publish to the ${var.name} registry."
  assume_role_policy   = data.aws_iam_policy_document.publisher_trust[each.key].json
  max_session_duration = 3600
  tags                 = var.tags
}

resource "aws_iam_role_policy_attachment" "publisher_ci" {
  for_each = local.ci_teams

  role       = aws_iam_role.publisher_ci[each.key].name
  policy_arn = aws_iam_policy.publisher[each.key].arn
}
