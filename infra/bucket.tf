# The bucket is the registry's only state: private, encrypted, versioned, TLS only.
resource "aws_s3_bucket" "registry" {
  count  = var.create_bucket ? 1 : 0
  bucket = local.bucket_name
  tags   = var.tags

  # checkov:skip=CKV_AWS_18:Server access logs need a second bucket; CloudTrail data events are the better audit trail and stay the user's choice.
  # checkov:skip=CKV_AWS_144:Cross-region replication doubles storage cost; the bucket is versioned and manifests can be rebuilt from archives.
  # checkov:skip=CKV_AWS_19:Encrypted by aws_s3_bucket_server_side_encryption_configuration.registry; checkov cannot evaluate its SSE-S3/KMS conditional (it passes with a literal AES256).
  # checkov:skip=CKV_AWS_145:SSE-S3 by default (a KMS key costs $1/month plus requests, against near-zero idle cost); set kms_key_arn for SSE-KMS.
}

resource "aws_s3_bucket_public_access_block" "registry" {
  count                   = var.create_bucket ? 1 : 0
  bucket                  = aws_s3_bucket.registry[0].id
  block_public_acls       = true
  block_public_policy     = true
  ignore_public_acls      = true
  restrict_public_buckets = true
}

resource "aws_s3_bucket_ownership_controls" "registry" {
  count  = var.create_bucket ? 1 : 0
  bucket = aws_s3_bucket.registry[0].id
  rule {
    object_ownership = "BucketOwnerEnforced"
  }
}

resource "aws_s3_bucket_server_side_encryption_configuration" "registry" {
  count  = var.create_bucket ? 1 : 0
  bucket = aws_s3_bucket.registry[0].id
  rule {
    apply_server_side_encryption_by_default {
      sse_algorithm     = var.kms_key_arn != "" ? "aws:kms" : "AES256"
      kms_master_key_id = var.kms_key_arn != "" ? var.kms_key_arn : null
    }
    bucket_key_enabled = var.kms_key_arn != ""
  }
}

resource "aws_s3_bucket_versioning" "registry" {
  count  = var.create_bucket ? 1 : 0
  bucket = aws_s3_bucket.registry[0].id
  versioning_configuration {
    status = "Enabled"
  }
}

resource "aws_s3_bucket_lifecycle_configuration" "registry" {
  count  = var.create_bucket ? 1 : 0
  bucket = aws_s3_bucket.registry[0].id

  # What the indexer derives (manifests rewritten at every publish, rejection records) stays
  # recoverable for 90 days after it is replaced, then goes. Uploads never expire: a published
  # version is served by the object version the indexer hashed (versionId), which becomes
  # noncurrent when someone uploads over it (the upload is rejected) and must stay.
  dynamic "rule" {
    # And what the mirror and the modules pull-through keep of upstreams (version lists
    # rewritten every TTL; pins are written once, copies named by their SHA-256).
    for_each = concat(local.indexer_prefixes, local.mirror_prefixes, local.modules_prefixes)
    content {
      id     = "noncurrent-${trimsuffix(rule.value, "/")}"
      status = "Enabled"
      filter {
        prefix = rule.value
      }
      noncurrent_version_expiration {
        noncurrent_days = 90
      }
      abort_incomplete_multipart_upload {
        days_after_initiation = 7
      }
    }
  }

  # Download counts are rewritten at every batch, and a replaced version still holds the
  # callers it had: it goes the next day, so that no caller outlives usage_caller_days by more.
  rule {
    id     = "noncurrent-usage"
    status = "Enabled"
    filter {
      prefix = local.usage_prefix
    }
    noncurrent_version_expiration {
      noncurrent_days = 1
    }
  }
  rule {
    id     = "incomplete-uploads"
    status = "Enabled"
    filter {}
    abort_incomplete_multipart_upload {
      days_after_initiation = 7
    }
  }
}

data "aws_iam_policy_document" "bucket" {
  statement {
    sid     = "DenyInsecureTransport"
    effect  = "Deny"
    actions = ["s3:*"]
    resources = [
      local.bucket_arn,
      "${local.bucket_arn}/*",
    ]
    principals {
      type        = "*"
      identifiers = ["*"]
    }
    condition {
      test     = "Bool"
      variable = "aws:SecureTransport"
      values   = ["false"]
    }
  }
}

resource "aws_s3_bucket_policy" "registry" {
  count  = var.create_bucket ? 1 : 0
  bucket = aws_s3_bucket.registry[0].id
  policy = data.aws_iam_policy_document.bucket.json

  depends_on = [aws_s3_bucket_public_access_block.registry]
}

# Uploads and deletes of archives wake the indexer (local.notifications). The indexer writes
# only under indexed/ and rejections/, which no filter covers, so it never wakes itself.
resource "aws_s3_bucket_notification" "registry" {
  bucket = local.bucket_name

  dynamic "lambda_function" {
    for_each = local.notifications
    content {
      id                  = lambda_function.key
      lambda_function_arn = aws_lambda_function.function["indexer"].arn
      events              = ["s3:ObjectCreated:*", "s3:ObjectRemoved:*"]
      filter_prefix       = lambda_function.value.prefix
      filter_suffix       = lambda_function.value.suffix
    }
  }

  # Pull records wake the puller (local.pull_notifications); its copies wake the indexer.
  dynamic "lambda_function" {
    for_each = local.pull_notifications
    content {
      id                  = lambda_function.key
      lambda_function_arn = aws_lambda_function.function["puller"].arn
      events              = ["s3:ObjectCreated:*"]
      filter_prefix       = lambda_function.value.prefix
      filter_suffix       = lambda_function.value.suffix
    }
  }

  depends_on = [aws_lambda_permission.s3_invokes_indexer, aws_lambda_permission.s3_invokes_puller, aws_s3_bucket.registry]
}

# An empty token store, so that a token presented before the first `make token-create` is
# answered 401 (unknown token) rather than 500: the read functions cannot tell a missing key
# from a denied one, and fail closed on the latter. Never touched after creation.
resource "aws_s3_object" "token_store" {
  count        = var.create_bucket ? 1 : 0
  bucket       = aws_s3_bucket.registry[0].id
  key          = "access/tokens.json"
  content      = jsonencode({ format = 1, tokens = [] })
  content_type = "application/json"
  kms_key_id   = var.kms_key_arn != "" ? var.kms_key_arn : null

  lifecycle {
    ignore_changes = all
  }

  depends_on = [aws_s3_bucket_server_side_encryption_configuration.registry]

  # checkov:skip=CKV_AWS_186:Encrypted with the bucket's default (SSE-S3, or kms_key_arn when set, as kms_key_id here).
}

resource "aws_lambda_permission" "s3_invokes_indexer" {
  statement_id   = "AllowS3Invoke"
  action         = "lambda:InvokeFunction"
  function_name  = aws_lambda_function.function["indexer"].function_name
  principal      = "s3.amazonaws.com"
  source_arn     = local.bucket_arn
  source_account = data.aws_caller_identity.current.account_id
}

resource "aws_lambda_permission" "s3_invokes_puller" {
  statement_id   = "AllowS3Invoke"
  action         = "lambda:InvokeFunction"
  function_name  = aws_lambda_function.function["puller"].function_name
  principal      = "s3.amazonaws.com"
  source_arn     = local.bucket_arn
  source_account = data.aws_caller_identity.current.account_id
}
