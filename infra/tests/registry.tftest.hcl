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
    condition     = toset(keys(aws_apigatewayv2_route.route)) == toset(["GET /.well-known/terraform.json", "GET /v1/modules/{namespace}/{name}/{system}/versions", "GET /v1/modules/{namespace}/{name}/{system}/{version}/download", "GET /v1/mirror/{hostname}/{namespace}/{type}/{file}"])
    error_message = "the API must have exactly the router's routes"
  }
  assert {
    condition     = alltrue([for f in aws_lambda_function.function : f.architectures == tolist(["arm64"]) && f.runtime == "provided.al2023" && f.handler == "bootstrap"])
    error_message = "every function is arm64 provided.al2023"
  }
  assert {
    condition     = toset(keys(aws_lambda_function.function)) == toset(["discovery", "modules", "mirror", "indexer"])
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
    condition     = length(aws_s3_bucket_notification.registry.lambda_function) == 5 && alltrue([for n in aws_s3_bucket_notification.registry.lambda_function : contains(["modules/", "providers/"], n.filter_prefix)])
    error_message = "notifications cover only the archive and mirror prefixes"
  }
  assert {
    condition     = !anytrue([for n in aws_s3_bucket_notification.registry.lambda_function : n.filter_prefix == "modules/" && n.filter_suffix == ".json"])
    error_message = "the indexer's own modules/**/manifest.json writes must not notify it"
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

run "least_privilege" {
  command = plan

  assert {
    condition     = length([for s in data.aws_iam_policy_document.function["discovery"].statement : s if anytrue([for a in s.actions : startswith(a, "s3:")])]) == 0
    error_message = "discovery may not touch S3"
  }
  assert {
    condition     = flatten([for s in data.aws_iam_policy_document.function["modules"].statement : s.actions if anytrue([for a in s.actions : startswith(a, "s3:")])]) == ["s3:GetObject"]
    error_message = "modules may only GetObject"
  }
  assert {
    condition     = toset(flatten([for s in data.aws_iam_policy_document.function["modules"].statement : s.resources if contains(s.actions, "s3:GetObject")])) == toset(["arn:aws:s3:::tf-registry-123456789012-eu-west-1/modules/*", "arn:aws:s3:::tf-registry-123456789012-eu-west-1/access/tokens.json"])
    error_message = "modules reads only modules/* and the token store"
  }
  assert {
    condition     = toset(flatten([for s in data.aws_iam_policy_document.function["mirror"].statement : s.resources if contains(s.actions, "s3:GetObject")])) == toset(["arn:aws:s3:::tf-registry-123456789012-eu-west-1/providers/*", "arn:aws:s3:::tf-registry-123456789012-eu-west-1/access/tokens.json"])
    error_message = "mirror reads only providers/* and the token store"
  }
  assert {
    condition     = !contains(flatten([for s in data.aws_iam_policy_document.function["indexer"].statement : s.actions]), "s3:*")
    error_message = "the indexer has no wildcard S3 rights"
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
