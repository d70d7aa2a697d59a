# Least privilege, per function. The read functions may only GetObject under their own prefix
# (so S3 answers 403 instead of 404 for a missing key, which they treat as not found); the
# indexer reads, lists and writes what it owns. Presigned URLs carry the signer's rights, so a
# modules URL can never reach providers/ or rejections/, and the reverse.
data "aws_iam_policy_document" "assume_lambda" {
  statement {
    actions = ["sts:AssumeRole"]
    principals {
      type        = "Service"
      identifiers = ["lambda.amazonaws.com"]
    }
  }
}

resource "aws_iam_role" "function" {
  for_each = local.functions

  name               = "${var.name}-${each.key}"
  assume_role_policy = data.aws_iam_policy_document.assume_lambda.json
  tags               = var.tags
}

locals {
  # What each read function may GetObject: its manifests and archives, and the token store.
  read_objects = {
    discovery = []
    modules   = ["modules/*", "access/tokens.json"]
    mirror    = ["providers/*", "access/tokens.json"]
  }
  indexer_prefixes = ["modules/", "providers/", "rejections/"]
}

data "aws_iam_policy_document" "function" {
  for_each = local.functions

  statement {
    sid       = "OwnLogs"
    actions   = ["logs:CreateLogStream", "logs:PutLogEvents"]
    resources = ["${aws_cloudwatch_log_group.function[each.key].arn}:*"]
  }

  dynamic "statement" {
    for_each = length(lookup(local.read_objects, each.key, [])) > 0 ? [1] : []
    content {
      sid       = "ReadOwnObjects"
      actions   = ["s3:GetObject"]
      resources = [for o in local.read_objects[each.key] : "${local.bucket_arn}/${o}"]
    }
  }

  dynamic "statement" {
    for_each = each.key == "indexer" ? [1] : []
    content {
      sid       = "IndexerObjects"
      actions   = ["s3:GetObject", "s3:PutObject", "s3:DeleteObject"]
      resources = [for p in local.indexer_prefixes : "${local.bucket_arn}/${p}*"]
    }
  }

  dynamic "statement" {
    for_each = each.key == "indexer" ? [1] : []
    content {
      sid       = "IndexerList"
      actions   = ["s3:ListBucket"]
      resources = [local.bucket_arn]
      condition {
        test     = "StringLike"
        variable = "s3:prefix"
        values   = [for p in local.indexer_prefixes : "${p}*"]
      }
    }
  }

  dynamic "statement" {
    for_each = each.key == "indexer" ? [1] : []
    content {
      sid       = "DeadLetters"
      actions   = ["sqs:SendMessage"]
      resources = [aws_sqs_queue.indexer_dlq.arn]
    }
  }

  dynamic "statement" {
    for_each = var.kms_key_arn != "" ? [1] : []
    content {
      sid       = "UseRegistryKey"
      actions   = each.key == "indexer" ? ["kms:Decrypt", "kms:GenerateDataKey"] : ["kms:Decrypt"]
      resources = [var.kms_key_arn]
    }
  }
}

resource "aws_iam_role_policy" "function" {
  for_each = local.functions

  name   = "${var.name}-${each.key}"
  role   = aws_iam_role.function[each.key].id
  policy = data.aws_iam_policy_document.function[each.key].json
}
