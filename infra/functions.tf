# One arm64 provided.al2023 function per Lambda binary, each with its own role and log group.
resource "aws_lambda_function" "function" {
  for_each = local.functions

  function_name    = "${var.name}-${each.key}"
  role             = aws_iam_role.function[each.key].arn
  filename         = "${var.lambda_dir}/${each.key}/bootstrap.zip"
  source_code_hash = filebase64sha256("${var.lambda_dir}/${each.key}/bootstrap.zip")
  handler          = "bootstrap"
  runtime          = "provided.al2023"
  architectures    = ["arm64"]
  memory_size      = each.value.memory
  timeout          = each.value.timeout
  kms_key_arn      = var.kms_key_arn != "" ? var.kms_key_arn : null

  reserved_concurrent_executions = var.reserved_concurrency

  ephemeral_storage {
    size = each.value.storage
  }

  environment {
    variables = local.environment[each.key]
  }

  logging_config {
    log_format            = "JSON"
    application_log_level = "INFO"
    system_log_level      = "WARN"
    log_group             = aws_cloudwatch_log_group.function[each.key].name
  }

  tracing_config {
    mode = "PassThrough"
  }

  dynamic "dead_letter_config" {
    # S3 invokes the indexer and the puller, CloudWatch Logs the usage function,
    # asynchronously: events they still fail on after Lambda's retries are kept for inspection
    # and replay.
    for_each = contains(keys(local.dead_letter_queues), each.key) ? [1] : []
    content {
      target_arn = local.dead_letter_queue_arns[each.key]
    }
  }

  tags = var.tags

  lifecycle {
    # The functions refuse to start with their own host as an upstream (config.rs): say so at
    # plan time instead. (A variable's validation cannot read domain_name before Terraform 1.9.)
    precondition {
      condition     = var.domain_name == "" || !contains(local.upstream_names, var.domain_name)
      error_message = "upstream_hosts holds domain_name, the registry's own host: it would be its own upstream, and every function would fail at start."
    }
  }

  # checkov:skip=CKV_AWS_117:The functions reach S3 and (mirror, puller) the allowed upstream registries over the internet; a VPC would add NAT cost.
  # checkov:skip=CKV_AWS_272:Code signing needs a signing profile the user must own; zips are built from this repository.
  # checkov:skip=CKV_AWS_116:Only the indexer, the puller and the usage function are invoked asynchronously and each has a dead-letter queue; API Gateway invokes the others synchronously.
  # checkov:skip=CKV_AWS_173:Environment variables hold no secrets (bucket name, limits); kms_key_arn encrypts them when set.
}

resource "aws_cloudwatch_log_group" "function" {
  for_each = local.functions

  name              = "/aws/lambda/${var.name}-${each.key}"
  retention_in_days = var.log_retention_days
  kms_key_id        = var.kms_key_arn != "" ? var.kms_key_arn : null
  tags              = var.tags

  # checkov:skip=CKV_AWS_338:Request logs are operational, not an audit record; a year of retention is the user's choice (log_retention_days).
  # checkov:skip=CKV_AWS_158:Logs hold no secrets (no tokens, no URL signatures); kms_key_arn encrypts them when set.
}

resource "aws_sqs_queue" "indexer_dlq" {
  name                      = "${var.name}-indexer-dlq"
  message_retention_seconds = 1209600
  sqs_managed_sse_enabled   = var.kms_key_arn == "" ? true : null
  kms_master_key_id         = var.kms_key_arn != "" ? var.kms_key_arn : null
  tags                      = var.tags
}

resource "aws_sqs_queue" "usage_dlq" {
  name                      = "${var.name}-usage-dlq"
  message_retention_seconds = 1209600
  sqs_managed_sse_enabled   = var.kms_key_arn == "" ? true : null
  kms_master_key_id         = var.kms_key_arn != "" ? var.kms_key_arn : null
  tags                      = var.tags
}

locals {
  dead_letter_queue_arns = {
    indexer = aws_sqs_queue.indexer_dlq.arn
    puller  = aws_sqs_queue.puller_dlq.arn
    usage   = aws_sqs_queue.usage_dlq.arn
  }
}

resource "aws_sqs_queue" "puller_dlq" {
  name                      = "${var.name}-puller-dlq"
  message_retention_seconds = 1209600
  sqs_managed_sse_enabled   = var.kms_key_arn == "" ? true : null
  kms_master_key_id         = var.kms_key_arn != "" ? var.kms_key_arn : null
  tags                      = var.tags
}
