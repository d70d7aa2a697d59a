# Plan-level tests of the module with a mocked AWS provider: no credentials, no network.
# Run by `make infra-check` (terraform test), with the provider from /opt/tf-plugins.

mock_provider "aws" {
  mock_data "aws_caller_identity" {
    defaults = { account_id = "123456789012" }
  }
  mock_data "aws_region" {
    defaults = { name = "eu-west-1" }
  }
  mock_data "aws_partition" {
    defaults = { partition = "aws" }
  }
  mock_data "aws_iam_policy_document" {
    defaults = { json = "{}" }
  }
  mock_resource "aws_apigatewayv2_api" {
    defaults = {
      api_endpoint  = "https://abc123.execute-api.eu-west-1.amazonaws.com"
      execution_arn = "arn:aws:execute-api:eu-west-1:123456789012:abc123"
    }
  }
}

variables {
  lambda_dir = "./tests/lambda"
}

run "defaults" {
  command = plan

  assert {
    condition     = toset(keys(aws_apigatewayv2_route.route)) == toset(["ANY /.well-known/terraform.json", "ANY /v1/modules/{namespace}/{name}/{system}/versions", "ANY /v1/modules/{namespace}/{name}/{system}/{version}/download", "ANY /v1/modules/upstream/{hostname}/{namespace}/{name}/{system}/versions", "ANY /v1/modules/upstream/{hostname}/{namespace}/{name}/{system}/{version}/download", "ANY /v1/mirror/{hostname}/{namespace}/{type}/{file}", "ANY /v1/providers/{namespace}/{type}/versions", "ANY /v1/providers/{namespace}/{type}/{version}/download/{os}/{arch}", "ANY /v1/modules", "ANY /v1/modules/search", "ANY /v1/modules/{namespace}/{name}/{system}", "ANY /v1/modules/{namespace}/{name}/{system}/{version}", "ANY /", "ANY /ui/modules/{namespace}/{name}/{system}", "ANY /ui/modules/{namespace}/{name}/{system}/{version}", "ANY /ui/modules/{namespace}/{name}/{system}/{version}/from/{from}", "ANY /ui/providers/{hostname}/{namespace}/{type}", "ANY /ui/providers/{hostname}/{namespace}/{type}/{version}", "ANY /ui/upstream/{hostname}/{namespace}/{name}/{system}", "ANY /ui/sign-in", "ANY /ui/sign-out", "ANY /ui/assets/{file}", "ANY /v2", "ANY /v2/{proxy+}", "ANY /mcp", "ANY /.well-known/oauth-protected-resource/mcp", "$default"])
    error_message = "the API must have exactly the router's route keys, and $default"
  }
  assert {
    condition     = alltrue([for f in aws_lambda_function.function : f.architectures == tolist(["arm64"]) && f.runtime == "provided.al2023" && f.handler == "bootstrap"])
    error_message = "every function is arm64 provided.al2023"
  }
  assert {
    condition     = toset(keys(aws_lambda_function.function)) == toset(["discovery", "modules", "mirror", "providers", "web", "oci", "mcp", "indexer", "puller", "usage"])
    error_message = "one function per Lambda binary"
  }
  assert {
    condition     = aws_s3_bucket.registry[0].bucket == "tf-registry-123456789012-eu-west-1"
    error_message = "the default bucket name is NAME-ACCOUNT-REGION"
  }
  assert {
    condition     = aws_s3_bucket_public_access_block.registry[0].block_public_acls && aws_s3_bucket_public_access_block.registry[0].restrict_public_buckets
    error_message = "the bucket is private"
  }
  assert {
    condition     = aws_s3_bucket_ownership_controls.registry[0].rule[0].object_ownership == "BucketOwnerEnforced"
    error_message = "ACLs are disabled"
  }
  assert {
    condition     = aws_s3_bucket_versioning.registry[0].versioning_configuration[0].status == "Enabled"
    error_message = "the bucket is versioned"
  }
  assert {
    condition     = one([for r in aws_s3_bucket_server_side_encryption_configuration.registry[0].rule : one(r.apply_server_side_encryption_by_default).sse_algorithm]) == "AES256"
    error_message = "SSE-S3 without a KMS key"
  }
  assert {
    condition     = length([for n in aws_s3_bucket_notification.registry.lambda_function : n if !contains(["upstream-pulls", "upstream-modules-pull"], n.id)]) == 12 && alltrue([for n in aws_s3_bucket_notification.registry.lambda_function : (contains(["modules/", "providers/"], n.filter_prefix) && contains([".tar.gz", ".tgz", ".zip", "_SHA256SUMS", "_SHA256SUMS.sig", "_manifest.json", ".deprecation.json", "_deprecation.json", ".sigstore.json"], n.filter_suffix)) || (n.filter_prefix == "upstream-modules/" && contains([".pin.json", ".refused.json"], n.filter_suffix)) if !contains(["upstream-pulls", "upstream-modules-pull"], n.id)])
    error_message = "the indexer's notifications cover only archives, signed release files, deprecation files and Sigstore bundles under the publisher prefixes, and the modules pull-through's pins and refusals"
  }
  assert {
    condition     = !anytrue([for n in aws_s3_bucket_notification.registry.lambda_function : startswith(n.filter_prefix, "indexed/") || startswith(n.filter_prefix, "rejections/") || startswith(n.filter_prefix, "upstream/versions/")])
    error_message = "nothing the indexer writes (indexed/, rejections/) and no kept version list notifies anything"
  }
  assert {
    condition     = { for n in aws_s3_bucket_notification.registry.lambda_function : n.id => [n.filter_prefix, n.filter_suffix, n.events] if contains(["upstream-pulls", "upstream-modules-pull"], n.id) } == { "upstream-pulls" = ["upstream/pulls/", ".json", toset(["s3:ObjectCreated:*"])], "upstream-modules-pull" = ["upstream-modules/", ".pull.json", toset(["s3:ObjectCreated:*"])] }
    error_message = "pull records of providers and of modules (and only they) invoke the puller, when written"
  }
  assert {
    condition     = aws_s3_object.token_store[0].key == "access/tokens.json" && jsondecode(aws_s3_object.token_store[0].content) == { format = 1, tokens = [] }
    error_message = "a new bucket gets an empty token store"
  }
  assert {
    condition     = aws_apigatewayv2_api.registry.disable_execute_api_endpoint == false
    error_message = "without a custom domain, the execute-api endpoint is the registry's address"
  }
  assert {
    condition     = length(aws_iam_policy.publisher) == 0
    error_message = "no publisher policy unless asked for"
  }
  assert {
    condition     = aws_lambda_function.function["indexer"].environment[0].variables["REGISTRY_BUCKET"] == "tf-registry-123456789012-eu-west-1"
    error_message = "functions get the bucket name"
  }
  assert {
    condition     = aws_lambda_function.function["indexer"].ephemeral_storage[0].size >= 1024
    error_message = "the indexer's /tmp holds a 1 GiB zip"
  }
  assert {
    condition     = aws_apigatewayv2_stage.default.default_route_settings[0].throttling_rate_limit == 200
    error_message = "the stage is throttled"
  }
  assert {
    condition     = !strcontains(aws_apigatewayv2_stage.default.access_log_settings[0].format, "querystring") && !strcontains(lower(aws_apigatewayv2_stage.default.access_log_settings[0].format), "authorization")
    error_message = "access logs hold neither URL signatures nor tokens"
  }
}

run "published_versions_stay_downloadable" {
  command = plan

  assert {
    condition     = toset([for r in aws_s3_bucket_lifecycle_configuration.registry[0].rule : r.filter[0].prefix if length(r.noncurrent_version_expiration) > 0]) == toset(["indexed/", "rejections/", "upstream/", "upstream-modules/", "usage/"])
    error_message = "noncurrent versions expire only under the indexer's, the mirror's, the modules pull-through's and the usage function's prefixes (copies there are named by their SHA-256 and pins written once): an upload's version named by a manifest must never expire"
  }
  assert {
    condition     = aws_lambda_function.function["indexer"].environment[0].variables["REGISTRY_ALLOW_OVERWRITE"] == "false"
    error_message = "published versions are immutable by default"
  }
}

run "least_privilege" {
  command = plan

  assert {
    condition     = length([for s in data.aws_iam_policy_document.function["discovery"].statement : s if anytrue([for a in s.actions : startswith(a, "s3:")])]) == 0
    error_message = "discovery may not touch S3"
  }
  assert {
    condition     = flatten([for s in data.aws_iam_policy_document.function["modules"].statement : s.actions if anytrue([for a in s.actions : startswith(a, "s3:")])]) == ["s3:GetObject", "s3:GetObjectVersion"]
    error_message = "modules may only GetObject (and GetObjectVersion of archives)"
  }
  assert {
    condition     = toset(flatten([for s in data.aws_iam_policy_document.function["modules"].statement : s.resources if contains(s.actions, "s3:GetObjectVersion")])) == toset([for o in ["modules/*.tar.gz", "modules/*.tgz", "modules/*.zip"] : "arn:aws:s3:::tf-registry-123456789012-eu-west-1/${o}"])
    error_message = "modules reads object versions of module archives only, never of manifests or the token store"
  }
  assert {
    condition     = toset(flatten([for s in data.aws_iam_policy_document.function["mirror"].statement : s.resources if contains(s.actions, "s3:GetObjectVersion")])) == toset(["arn:aws:s3:::tf-registry-123456789012-eu-west-1/providers/*.zip"])
    error_message = "mirror reads object versions of provider zips only"
  }
  assert {
    condition     = toset(flatten([for s in data.aws_iam_policy_document.function["modules"].statement : s.resources if contains(s.actions, "s3:GetObject")])) == toset([for o in ["indexed/modules/*", "access/tokens.json", "upstream-modules/*", "modules/*.tar.gz", "modules/*.tgz", "modules/*.zip"] : "arn:aws:s3:::tf-registry-123456789012-eu-west-1/${o}"])
    error_message = "modules reads only its manifests, module archives, the modules pull-through's copies and the token store"
  }
  assert {
    condition     = toset(flatten([for s in data.aws_iam_policy_document.function["mirror"].statement : s.resources if contains(s.actions, "s3:GetObject")])) == toset([for o in ["indexed/providers/*", "access/tokens.json", "providers/*.zip", "upstream/*"] : "arn:aws:s3:::tf-registry-123456789012-eu-west-1/${o}"])
    error_message = "mirror reads only its documents, provider zips, the token store and what it keeps of upstreams"
  }
  assert {
    condition     = flatten([for s in data.aws_iam_policy_document.function["web"].statement : s.actions if anytrue([for a in s.actions : startswith(a, "s3:")])]) == ["s3:GetObject"] && toset(flatten([for s in data.aws_iam_policy_document.function["web"].statement : s.resources if contains(s.actions, "s3:GetObject")])) == toset([for o in ["indexed/catalog/index.json", "indexed/catalog/modules/*", "indexed/catalog/providers.json", "indexed/catalog/upstream-modules.json", "indexed/modules/*", "indexed/providers/*", "indexed/upstream-modules/*", "access/tokens.json", "usage/modules/*", "usage/providers/*"] : "arn:aws:s3:::tf-registry-123456789012-eu-west-1/${o}"])
    error_message = "web only reads the catalog, module and provider manifests, module docs, upstream modules' pins, and the token store: no archive, no publish log, no write"
  }
  assert {
    condition     = flatten([for s in data.aws_iam_policy_document.function["mcp"].statement : s.actions if s.effect != "Deny" && anytrue([for a in s.actions : startswith(a, "s3:")])]) == ["s3:GetObject"] && toset(flatten([for s in data.aws_iam_policy_document.function["mcp"].statement : s.resources if s.effect != "Deny" && contains(s.actions, "s3:GetObject")])) == toset([for o in ["indexed/catalog/index.json", "indexed/catalog/modules/*", "indexed/catalog/providers.json", "indexed/modules/*", "indexed/providers/*", "access/tokens.json", "usage/modules/*"] : "arn:aws:s3:::tf-registry-123456789012-eu-west-1/${o}"]) && toset(flatten([for s in data.aws_iam_policy_document.function["mcp"].statement : s.resources if s.effect == "Deny"])) == toset(["arn:aws:s3:::tf-registry-123456789012-eu-west-1/usage/modules/*/*"])
    error_message = "mcp only reads the catalog, module and provider manifests, module docs, the namespaces' download totals (never a module's counts, which name callers) and the token store: no archive, no write"
  }
  assert {
    condition     = flatten([for s in data.aws_iam_policy_document.function["oci"].statement : s.actions if anytrue([for a in s.actions : startswith(a, "s3:")])]) == ["s3:GetObject", "s3:GetObjectVersion"] && toset(flatten([for s in data.aws_iam_policy_document.function["oci"].statement : s.resources if contains(s.actions, "s3:GetObject")])) == toset([for o in ["indexed/providers/*", "indexed/modules/*", "indexed/oci/*", "access/tokens.json", "providers/*.zip", "modules/*.zip"] : "arn:aws:s3:::tf-registry-123456789012-eu-west-1/${o}"])
    error_message = "oci only reads provider documents, module manifests, its artifacts, the token store and provider and module zips: no write"
  }
  assert {
    condition     = toset(flatten([for s in data.aws_iam_policy_document.function["mirror"].statement : s.resources if contains(s.actions, "s3:PutObject")])) == toset(["arn:aws:s3:::tf-registry-123456789012-eu-west-1/upstream/*"])
    error_message = "mirror writes only what it keeps of upstreams (version lists, pull records)"
  }
  assert {
    condition     = toset(flatten([for s in data.aws_iam_policy_document.function["puller"].statement : s.resources if contains(s.actions, "s3:PutObject")])) == toset(["arn:aws:s3:::tf-registry-123456789012-eu-west-1/providers/registry.terraform.io/*.zip"])
    error_message = "puller writes only provider zips of the upstream hosts"
  }
  assert {
    condition     = toset(flatten([for s in data.aws_iam_policy_document.function["puller"].statement : s.resources if contains(s.actions, "s3:GetObject")])) == toset(["arn:aws:s3:::tf-registry-123456789012-eu-west-1/upstream/pulls/*.json", "arn:aws:s3:::tf-registry-123456789012-eu-west-1/upstream-modules/*.pull.json"])
    error_message = "puller reads only pull records (the modules pull-through off)"
  }
  assert {
    condition     = toset(flatten([for s in data.aws_iam_policy_document.function["usage"].statement : s.resources if contains(s.actions, "s3:PutObject") || contains(s.actions, "s3:GetObject")])) == toset(["arn:aws:s3:::tf-registry-123456789012-eu-west-1/usage/*"])
    error_message = "the usage function reads and writes only the download counts"
  }
  assert {
    condition     = { for k, f in aws_cloudwatch_log_subscription_filter.usage : k => [f.log_group_name, f.filter_pattern] } == { for k in ["modules", "mirror", "providers", "oci"] : k => ["/aws/lambda/tf-registry-${k}", "{ $.usage.v = 1 }"] }
    error_message = "the log groups of the functions that answer downloads (and only they) deliver their download records to the usage function"
  }
  assert {
    condition     = alltrue([for k, p in aws_lambda_permission.logs_invoke_usage : p.principal == "logs.amazonaws.com" && p.function_name == "tf-registry-usage"])
    error_message = "only CloudWatch Logs invokes the usage function"
  }
  assert {
    condition     = !contains(flatten([for s in data.aws_iam_policy_document.function["indexer"].statement : s.actions]), "s3:*")
    error_message = "the indexer has no wildcard S3 rights"
  }
  assert {
    condition     = toset(flatten([for s in data.aws_iam_policy_document.function["indexer"].statement : s.resources if s.effect != "Deny" && (contains(s.actions, "s3:PutObject") || contains(s.actions, "s3:DeleteObject"))])) == toset(["arn:aws:s3:::tf-registry-123456789012-eu-west-1/indexed/*", "arn:aws:s3:::tf-registry-123456789012-eu-west-1/rejections/*"])
    error_message = "the indexer writes only what it derives: indexed/ and rejections/, never an upload"
  }
  assert {
    condition = [for s in data.aws_iam_policy_document.function["indexer"].statement : { actions = s.actions, resources = s.resources } if s.effect == "Deny"] == [
      { actions = toset(["s3:DeleteObject"]), resources = toset(["arn:aws:s3:::tf-registry-123456789012-eu-west-1/indexed/log/*"]) },
      { actions = toset(["s3:PutObject"]), resources = toset(["arn:aws:s3:::tf-registry-123456789012-eu-west-1/indexed/log/entries/*", "arn:aws:s3:::tf-registry-123456789012-eu-west-1/indexed/log/head.json"]) },
    ]
    error_message = "the indexer may never delete from the publish log, nor write the chain of before"
  }
}

run "existing_bucket" {
  command = plan

  variables {
    create_bucket = false
    bucket_name   = "acme-existing-registry"
  }

  assert {
    condition     = length(aws_s3_bucket.registry) == 0 && aws_s3_bucket_notification.registry.bucket == "acme-existing-registry"
    error_message = "an existing bucket is used, not created"
  }
  assert {
    condition     = output.bucket_name == "acme-existing-registry"
    error_message = "the output names the existing bucket"
  }
}

run "custom_domain" {
  command = plan

  variables {
    domain_name     = "registry.example.com"
    certificate_arn = "arn:aws:acm:eu-west-1:123456789012:certificate/00000000-0000-0000-0000-000000000000"
  }

  assert {
    condition     = output.registry_hostname == "registry.example.com" && output.mirror_url == "https://registry.example.com/v1/mirror/"
    error_message = "outputs use the custom domain"
  }
  assert {
    condition     = aws_apigatewayv2_api.registry.disable_execute_api_endpoint == true
    error_message = "with a custom domain, the execute-api endpoint is off by default"
  }
}

run "publisher_policies_stay_in_their_namespaces" {
  command = plan

  variables {
    publishers = {
      acme     = { modules = ["acme", "acme-net"], providers = ["registry.example.com/acme"] }
      platform = { providers = ["registry.terraform.io/*"] }
    }
  }

  assert {
    condition     = toset(keys(aws_iam_policy.publisher)) == toset(["acme", "platform"])
    error_message = "one policy per publisher"
  }
  assert {
    condition     = toset(flatten([for s in data.aws_iam_policy_document.publisher["acme"].statement : s.resources if contains(s.actions, "s3:PutObject")])) == toset([for o in ["modules/acme/*", "modules/acme-net/*", "providers/registry.example.com/acme/*"] : "arn:aws:s3:::tf-registry-123456789012-eu-west-1/${o}"])
    error_message = "acme writes exactly its own upload prefixes, and no signing key"
  }
  assert {
    condition     = toset(flatten([for s in data.aws_iam_policy_document.publisher["platform"].statement : s.resources if contains(s.actions, "s3:DeleteObject")])) == toset(["arn:aws:s3:::tf-registry-123456789012-eu-west-1/providers/registry.terraform.io/*/*"])
    error_message = "a mirror-sync publisher writes one origin host's providers"
  }
  # The layout's trust boundary: no publisher may write where the indexer or the token command
  # writes, whatever the input.
  assert {
    condition = !anytrue([for team, doc in data.aws_iam_policy_document.publisher : anytrue([
      for s in doc.statement : anytrue([
        for r in s.resources : anytrue([for p in ["indexed/", "rejections/", "access/", "signing-keys/"] : startswith(r, "arn:aws:s3:::tf-registry-123456789012-eu-west-1/${p}")])
      ]) if contains(s.actions, "s3:PutObject") || contains(s.actions, "s3:DeleteObject")
    ])])
    error_message = "publishers never write indexed/, rejections/, access/ or signing-keys/"
  }
  assert {
    condition     = toset(flatten([for s in data.aws_iam_policy_document.publisher["acme"].statement : s.resources if s.sid == "ReadRejections"])) == toset([for o in ["modules/acme/*", "modules/acme-net/*", "providers/registry.example.com/acme/*"] : "arn:aws:s3:::tf-registry-123456789012-eu-west-1/rejections/${o}"])
    error_message = "publishers read why their own uploads were rejected"
  }
  assert {
    condition     = toset(flatten([for s in data.aws_iam_policy_document.publisher["acme"].statement : s.resources if s.sid == "ReadSigningKeys"])) == toset(["arn:aws:s3:::tf-registry-123456789012-eu-west-1/signing-keys/registry.example.com/acme/*"])
    error_message = "publishers read (never write) their providers' namespaces' public keys"
  }
  assert {
    condition     = toset(flatten([for s in data.aws_iam_policy_document.publisher["platform"].statement : s.resources if s.sid == "ReadSigningKeys"])) == toset(["arn:aws:s3:::tf-registry-123456789012-eu-west-1/signing-keys/registry.terraform.io/*/*"])
    error_message = "a mirror-sync publisher reads its origin host's keys only"
  }
}

run "key_admins_write_only_their_namespaces_keys" {
  command = plan

  variables {
    publishers = { ci = { providers = ["registry.example.com/acme"] } }
    key_admins = { security = { providers = ["registry.example.com/acme"] } }
  }

  assert {
    condition     = toset(keys(aws_iam_policy.key_admin)) == toset(["security"])
    error_message = "one policy per key admin"
  }
  assert {
    condition     = toset(flatten([for s in data.aws_iam_policy_document.key_admin["security"].statement : s.resources if contains(s.actions, "s3:PutObject")])) == toset(["arn:aws:s3:::tf-registry-123456789012-eu-west-1/signing-keys/registry.example.com/acme/*"])
    error_message = "a key admin writes its namespaces' signing keys and nothing else"
  }
  assert {
    condition     = !anytrue([for s in data.aws_iam_policy_document.publisher["ci"].statement : anytrue([for r in s.resources : strcontains(r, "signing-keys/")]) if length(setsubtract(s.actions, ["s3:GetObject", "s3:ListBucket"])) > 0])
    error_message = "the publisher of the same namespace may only read its signing keys, never write them"
  }
}

run "ci_identities_get_a_role_that_only_their_tag_jobs_assume" {
  command = plan

  variables {
    publishers = {
      network = { modules = ["network"], github = ["acme/terraform-aws-network", "acme-infra/vpc"] }
      storage = { modules = ["storage"], gitlab = ["acme/platform/storage"] }
      both    = { modules = ["both"], github = ["acme/both"], gitlab = ["acme/both"] }
      manual  = { modules = ["manual"] }
    }
    ci_oidc = { gitlab_provider_arn = "arn:aws:iam::123456789012:oidc-provider/gitlab.com" }
  }

  assert {
    condition     = toset(keys(aws_iam_role.publisher_ci)) == toset(["network", "storage", "both"]) && toset(keys(aws_iam_role_policy_attachment.publisher_ci)) == toset(["network", "storage", "both"])
    error_message = "a role for each publisher with CI identities, none for the others"
  }
  assert {
    condition     = length(aws_iam_openid_connect_provider.github) == 1 && length(aws_iam_openid_connect_provider.gitlab) == 0
    error_message = "the GitHub provider is made; the GitLab one given by ARN is not made again"
  }
  assert {
    condition     = aws_iam_openid_connect_provider.github[0].url == "https://token.actions.githubusercontent.com" && aws_iam_openid_connect_provider.github[0].client_id_list == toset(["sts.amazonaws.com"])
    error_message = "GitHub's issuer, with the audience configure-aws-credentials asks for"
  }
  assert {
    condition     = toset(flatten([for s in data.aws_iam_policy_document.publisher_trust["network"].statement : [for c in s.condition : c.values if c.test == "StringLike"]])) == toset(["repo:acme/terraform-aws-network:ref:refs/tags/*", "repo:acme-infra/vpc:ref:refs/tags/*"])
    error_message = "only the listed repositories' tags"
  }
  assert {
    condition     = toset(flatten([for s in data.aws_iam_policy_document.publisher_trust["network"].statement : [for c in s.condition : c.values if c.test == "StringNotLike"]])) == toset(["*:environment:*"])
    error_message = "an environment's subject is refused"
  }
  assert {
    condition     = [for s in data.aws_iam_policy_document.publisher_trust["storage"].statement : s.principals] == [toset([{ type = "Federated", identifiers = toset(["arn:aws:iam::123456789012:oidc-provider/gitlab.com"]) }])]
    error_message = "the GitLab statement trusts the given provider"
  }
  assert {
    condition     = [for s in data.aws_iam_policy_document.publisher_trust["storage"].statement : [for c in s.condition : "${c.test} ${c.variable} ${join(",", c.values)}"]] == [["StringEquals gitlab.com:aud sts.amazonaws.com", "StringLike gitlab.com:sub project_path:acme/platform/storage:ref_type:tag:ref:*"]]
    error_message = "GitLab tag pipelines of the listed project only"
  }
  assert {
    condition     = [for s in data.aws_iam_policy_document.publisher_trust["both"].statement : s.sid] == ["GitHubActionsTags", "GitLabCITags"]
    error_message = "both CIs for one publisher"
  }
  assert {
    condition     = aws_iam_role_policy_attachment.publisher_ci["storage"].role == "tf-registry-publish-storage" && aws_iam_policy.publisher["storage"].name == "tf-registry-publish-storage"
    error_message = "the role holds its publisher's policy (the attachment's ARN is known only after apply: tests/deploy)"
  }
}

run "ci_identities_are_validated" {
  command = plan

  variables {
    publishers = { acme = { modules = ["acme"], github = ["acme/*"], gitlab = ["acme"] } }
  }

  expect_failures = [var.publishers]
}

run "ci_identities_have_no_wildcards" {
  command = plan

  variables {
    publishers = { acme = { modules = ["acme"], gitlab = ["acme/*"] } }
  }

  expect_failures = [var.publishers]
}

run "ci_role_names_fit_iam" {
  command = plan

  variables {
    publishers = { "a-publisher-name-long-enough-to-push-the-role-past-64" = { modules = ["acme"], github = ["acme/x"] } }
  }

  expect_failures = [aws_iam_role.publisher_ci]
}

run "a_wildcard_hostname_cannot_name_a_namespace" {
  command = plan

  variables {
    publishers = { acme = { providers = ["*/acme"] } }
  }

  expect_failures = [var.publishers]
}

run "custom_domain_needs_a_certificate" {
  command = plan

  variables {
    domain_name = "registry.example.com"
  }

  expect_failures = [aws_apigatewayv2_domain_name.registry]
}

run "presign_ttl_is_bounded" {
  command = plan

  variables {
    presign_ttl_seconds = 86400
  }

  expect_failures = [var.presign_ttl_seconds]
}

# A new account's concurrency quota can be far below what 50 per function needs: no
# reservation unless asked for.
run "no_concurrency_reserved_by_default" {
  command = plan

  assert {
    condition     = alltrue([for f in aws_lambda_function.function : f.reserved_concurrent_executions == -1])
    error_message = "by default no function reserves concurrency"
  }
}

run "reserved_concurrency_is_none_or_positive" {
  command = plan

  variables {
    reserved_concurrency = 0
  }

  expect_failures = [var.reserved_concurrency]
}

# Over 300 the functions would refuse to start (REGISTRY_TOKENS_CACHE_SECONDS).
run "tokens_cache_is_bounded" {
  command = plan

  variables {
    tokens_cache_seconds = 301
  }

  expect_failures = [var.tokens_cache_seconds]
}

run "usage_caller_days_is_bounded" {
  command = plan

  variables {
    usage_caller_days = 91
  }

  expect_failures = [var.usage_caller_days]
}

run "usage_caller_days_reaches_the_usage_function" {
  command = plan

  variables {
    usage_caller_days = 0
  }

  assert {
    condition     = aws_lambda_function.function["usage"].environment[0].variables["REGISTRY_USAGE_CALLER_DAYS"] == "0" && aws_lambda_function.function["web"].environment[0].variables["REGISTRY_USAGE_CALLER_DAYS"] == "0"
    error_message = "usage_caller_days is REGISTRY_USAGE_CALLER_DAYS of the usage function (what it keeps) and of the web function (what it shows)"
  }
}

run "the_own_host_is_never_an_upstream" {
  command = plan

  variables {
    domain_name     = "registry.example.com"
    certificate_arn = "arn:aws:acm:eu-west-1:123456789012:certificate/00000000-0000-0000-0000-000000000000"
    upstream_hosts  = ["registry.terraform.io", "registry.example.com"]
  }

  expect_failures = [aws_lambda_function.function]
}

run "read_timeout_leaves_room_for_the_functions_own_503" {
  command = plan

  variables {
    read_timeout_seconds = 5
  }

  expect_failures = [var.read_timeout_seconds]
}

run "pull_through_can_be_turned_off" {
  command = plan

  variables {
    upstream_hosts = []
  }

  assert {
    condition     = aws_lambda_function.function["mirror"].environment[0].variables["REGISTRY_UPSTREAM_HOSTS"] == ""
    error_message = "an empty upstream_hosts turns the pull-through off"
  }
  assert {
    condition     = length(flatten([for s in data.aws_iam_policy_document.function["puller"].statement : s.resources if contains(s.actions, "s3:PutObject")])) == 0
    error_message = "with no upstream the puller may write nothing"
  }
}

run "modules_pull_through_is_off_by_default_and_writes_only_its_prefix_when_on" {
  command = plan

  assert {
    condition     = aws_lambda_function.function["modules"].environment[0].variables["REGISTRY_UPSTREAM_MODULES"] == "" && aws_lambda_function.function["modules"].timeout == 15
    error_message = "off by default: nothing fetched, the read timeout as any read function's"
  }
  assert {
    condition     = length(flatten([for s in data.aws_iam_policy_document.function["modules"].statement : s.resources if contains(s.actions, "s3:PutObject")])) == 0
    error_message = "off, the modules function may write nothing"
  }
}

run "modules_pull_through_on" {
  command = plan

  variables {
    upstream_modules = ["registry.terraform.io", "registry.opentofu.org/terraform-aws-*"]
  }

  assert {
    condition     = aws_lambda_function.function["modules"].environment[0].variables["REGISTRY_UPSTREAM_MODULES"] == "registry.terraform.io,registry.opentofu.org/terraform-aws-*" && aws_lambda_function.function["modules"].timeout == 28
    error_message = "on: the hosts passed, and time for a copy while the CLI waits (25 s, inside API Gateway's 29 s)"
  }
  assert {
    condition     = toset(flatten([for s in data.aws_iam_policy_document.function["modules"].statement : s.resources if contains(s.actions, "s3:PutObject")])) == toset(["arn:aws:s3:::tf-registry-123456789012-eu-west-1/upstream-modules/*"])
    error_message = "on, the modules function writes only upstream-modules/"
  }
  assert {
    condition     = toset(flatten([for s in data.aws_iam_policy_document.function["puller"].statement : s.resources if contains(s.actions, "s3:PutObject")])) == toset(["arn:aws:s3:::tf-registry-123456789012-eu-west-1/providers/registry.terraform.io/*.zip", "arn:aws:s3:::tf-registry-123456789012-eu-west-1/upstream-modules/*"])
    error_message = "on, the puller also writes upstream-modules/ (archives too large to copy while the CLI waits), and nothing else more"
  }
}

run "upstream_modules_are_validated" {
  command = plan

  variables {
    upstream_modules = ["https://registry.terraform.io"]
  }

  expect_failures = [var.upstream_modules]
}

run "upstream_hosts_are_validated" {
  command = plan

  variables {
    upstream_hosts = ["https://registry.terraform.io"]
  }

  expect_failures = [var.upstream_hosts]
}

run "oidc_issuers_reach_every_read_function_as_json" {
  command = plan

  variables {
    oidc_issuers = [
      {
        issuer   = "https://token.actions.githubusercontent.com"
        audience = "https://registry.example.com"
        rules    = [{ claim = "repository_owner", equals = "acme", modules = ["acme"] }]
      },
      {
        issuer   = "https://cognito-idp.eu-west-1.amazonaws.com/eu-west-1_Example"
        audience = "example-client-id"
        rules    = [{ claim = "cognito:groups", equals = "team-*", modules = ["{value}"] }]
        login = {
          client = "example-client-id"
          authz  = "https://example.auth.eu-west-1.amazoncognito.com/oauth2/authorize"
          token  = "https://example.auth.eu-west-1.amazoncognito.com/oauth2/token"
        }
      },
    ]
  }

  assert {
    condition = alltrue([for f in ["discovery", "modules", "mirror", "providers", "web", "mcp"] :
    jsondecode(aws_lambda_function.function[f].environment[0].variables["REGISTRY_OIDC_ISSUERS"])[1].login.ports == [10000, 10010]])
    error_message = "every read function gets the issuers, with the login client's default ports"
  }
  assert {
    condition     = jsondecode(aws_lambda_function.function["modules"].environment[0].variables["REGISTRY_OIDC_ISSUERS"])[0].login == null
    error_message = "an issuer without login says so (null), which the registry reads as none"
  }
}

run "oidc_issuers_are_validated" {
  command = plan

  variables {
    oidc_issuers = [{
      issuer   = "http://idp.example.com"
      audience = "registry"
      rules    = [{ claim = "groups", equals = "platform", modules = ["*"] }]
    }]
  }

  expect_failures = [var.oidc_issuers]
}


run "monitoring_watches_every_function_and_queue" {
  command = plan

  variables {
    alarm_topic_arn = "arn:aws:sns:eu-west-1:123456789012:ops"
  }

  assert {
    condition     = toset(keys(aws_cloudwatch_metric_alarm.function)) == toset(flatten([for f in keys(aws_lambda_function.function) : ["${f}-errors", "${f}-throttles"]]))
    error_message = "every function has an errors and a throttles alarm"
  }
  assert {
    condition     = toset(keys(aws_cloudwatch_metric_alarm.dead_letters)) == toset(["indexer", "puller", "usage"]) && length(aws_cloudwatch_metric_alarm.api_5xx) == 1 && length(aws_cloudwatch_dashboard.registry) == 1
    error_message = "both dead-letter queues, the API's 5xx rate and a dashboard"
  }
  assert {
    condition     = alltrue([for a in values(aws_cloudwatch_metric_alarm.function) : a.alarm_actions == toset(["arn:aws:sns:eu-west-1:123456789012:ops"])])
    error_message = "alarms notify alarm_topic_arn"
  }
}

run "monitoring_off" {
  command = plan

  variables {
    monitoring = false
  }

  assert {
    condition     = length(aws_cloudwatch_metric_alarm.function) + length(aws_cloudwatch_metric_alarm.dead_letters) + length(aws_cloudwatch_metric_alarm.api_5xx) + length(aws_cloudwatch_dashboard.registry) == 0
    error_message = "monitoring = false creates no alarm and no dashboard"
  }
}

# Provenance rules reach the indexer as REGISTRY_PROVENANCE (JSON the code parses), and a rule
# that could not mean anything is refused at plan.
run "provenance_rules_reach_the_indexer" {
  command = plan

  variables {
    provenance = [{
      namespaces = ["acme"]
      mode       = "required"
      signers    = [{ issuer = "https://token.actions.githubusercontent.com", repositories = ["https://github.com/acme/*"] }]
    }]
  }

  assert {
    condition     = jsondecode(aws_lambda_function.function["indexer"].environment[0].variables["REGISTRY_PROVENANCE"])[0].signers[0].refs == ["refs/tags/*"]
    error_message = "the indexer gets the rules as JSON, refs defaulting to every tag"
  }
  assert {
    condition     = jsondecode(aws_lambda_function.function["indexer"].environment[0].variables["REGISTRY_PROVENANCE"])[0].signers[0].trust_roots == ["public-good"]
    error_message = "a signer is vouched for by the public-good trust root unless its rule names another"
  }
  assert {
    condition     = !contains(keys(aws_lambda_function.function["web"].environment[0].variables), "REGISTRY_PROVENANCE")
    error_message = "only the indexer reads the provenance rules"
  }
}

run "a_required_rule_names_its_signers" {
  command = plan

  variables {
    provenance = [{ namespaces = ["acme"], mode = "required" }]
  }

  expect_failures = [var.provenance]
}

run "provenance_refs_are_tags_only" {
  command = plan

  variables {
    provenance = [{
      namespaces = ["acme"]
      mode       = "required"
      signers    = [{ issuer = "https://token.actions.githubusercontent.com", repositories = ["https://github.com/acme/*"], refs = ["refs/heads/main"] }]
    }]
  }

  expect_failures = [var.provenance]
}

# The Sigstore trust roots (signing-keys/sigstore/) are a key admin's only with trust_roots;
# "sigstore" as a provider host would reach them otherwise, and is refused.
run "trust_roots_are_granted_only_by_name" {
  command = plan

  variables {
    key_admins = {
      security = { providers = ["registry.example.com/acme"], trust_roots = true }
      keys     = { providers = ["registry.example.com/acme"] }
    }
  }

  assert {
    condition     = contains(flatten([for s in data.aws_iam_policy_document.key_admin["security"].statement : s.resources if contains(s.actions, "s3:PutObject")]), "arn:aws:s3:::tf-registry-123456789012-eu-west-1/signing-keys/sigstore/*")
    error_message = "trust_roots = true lets a key admin add Sigstore trust roots"
  }
  assert {
    condition     = !anytrue([for r in flatten([for s in data.aws_iam_policy_document.key_admin["keys"].statement : s.resources]) : strcontains(r, "sigstore")])
    error_message = "without trust_roots a key admin cannot add them"
  }
}

run "the_sigstore_prefix_is_no_provider_host" {
  command = plan

  variables {
    key_admins = { security = { providers = ["sigstore/*"] } }
  }

  expect_failures = [var.key_admins]
}
