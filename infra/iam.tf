# Least privilege, per function. The read functions may GetObject only the manifests they
# serve (under indexed/), the archives of their protocol (by the extensions the indexer
# indexes), and the token store; without s3:ListBucket, S3 answers 403 for a missing key,
# which they treat as not found for a manifest. Presigned URLs carry the signer's rights, so a
# modules URL can never reach providers/, another protocol's indexed/ documents, rejections/
# or signing-keys/, and the reverse.
# The indexer reads the uploads but writes only indexed/ and rejections/. The mirror writes
# only what it keeps of upstreams (upstream/); the puller reads pull records and writes copies
# only under the upstream hosts' provider prefixes and, where the modules pull-through fetches
# (var.upstream_modules), under upstream-modules/ (archives too large to copy while the CLI
# waits), which the modules function writes too, and nothing else. The usage function reads
# and writes only the download counts (usage/), whose modules' and providers' the web function
# reads.
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
  # What each read function may GetObject: its manifests, its archives, the token store.
  read_objects = {
    discovery = []
    # And the modules pull-through's copies, pins and version lists (upstream-modules/).
    modules = concat(
      ["indexed/modules/*", "access/tokens.json", "upstream-modules/*"],
      [for suffix in local.module_archive_suffixes : "modules/*${suffix}"],
    )
    mirror = ["indexed/providers/*", "access/tokens.json", "providers/*.zip", "upstream/*"]
    # providers.v1 serves only the registry's own host: its documents, and the three files
    # of a release a download answer presigns.
    providers = [
      "indexed/providers/${local.hostname}/*", "access/tokens.json",
      "providers/${local.hostname}/*.zip", "providers/${local.hostname}/*_SHA256SUMS",
      "providers/${local.hostname}/*_SHA256SUMS.sig",
    ]
    # The catalog's parts, module manifests and docs, provider manifests (the provider pages),
    # the upstream modules' pins (their pages); no archive (it presigns nothing).
    # And modules' and providers' download counts (details and pages).
    web = [
      "indexed/catalog/index.json", "indexed/catalog/modules/*", "indexed/catalog/providers.json",
      "indexed/catalog/upstream-modules.json", "indexed/modules/*", "indexed/providers/*",
      "indexed/upstream-modules/*", "access/tokens.json", "usage/modules/*", "usage/providers/*",
    ]
    # The MCP server: what the list, details and provider pages read (the catalog's parts,
    # module manifests and docs, provider manifests, the namespaces' download totals: the
    # modules' own counts under them are denied, NoCallersForMcp); no archive (it presigns
    # nothing).
    mcp = [
      "indexed/catalog/index.json", "indexed/catalog/modules/*", "indexed/catalog/providers.json",
      "indexed/modules/*", "indexed/providers/*", "access/tokens.json", "usage/modules/*",
    ]
    # OCI: tags from the provider documents and module manifests, manifests and blob pointers
    # by digest (and the zips made of .tar.gz modules), and the zips a blob redirect presigns.
    oci = [
      "indexed/providers/*", "indexed/modules/*", "indexed/oci/*", "access/tokens.json", "providers/*.zip",
      "modules/*.zip",
    ]
  }
  # Of those, the archives whose download URLs name the object version the indexer hashed
  # (`versionId`, so an overwrite never changes what is served): GetObjectVersion on exactly
  # these, never on manifests or the token store.
  read_versions = {
    modules   = [for o in local.read_objects.modules : o if startswith(o, "modules/")]
    mirror    = ["providers/*.zip"]
    providers = ["providers/${local.hostname}/*.zip"]
    oci       = ["providers/*.zip", "modules/*.zip"]
  }
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
    for_each = length(lookup(local.read_versions, each.key, [])) > 0 ? [1] : []
    content {
      sid       = "ReadPublishedArchiveVersions"
      actions   = ["s3:GetObjectVersion"]
      resources = [for o in local.read_versions[each.key] : "${local.bucket_arn}/${o}"]
    }
  }

  dynamic "statement" {
    for_each = each.key == "indexer" ? [1] : []
    content {
      sid       = "IndexerReadsUploads"
      actions   = ["s3:GetObject"]
      resources = [for p in concat(local.publisher_prefixes, local.key_admin_prefixes) : "${local.bucket_arn}/${p}*"]
    }
  }

  dynamic "statement" {
    # The modules pull-through's pins and refusals, which it puts on the publish log.
    for_each = each.key == "indexer" ? [1] : []
    content {
      sid       = "IndexerReadsUpstreamModuleRecords"
      actions   = ["s3:GetObject"]
      resources = [for n in local.notifications : "${local.bucket_arn}/${n.prefix}*${n.suffix}" if contains(local.modules_prefixes, n.prefix)]
    }
  }

  dynamic "statement" {
    for_each = each.key == "indexer" ? [1] : []
    content {
      sid       = "IndexerWritesWhatItDerives"
      actions   = ["s3:GetObject", "s3:PutObject", "s3:DeleteObject"]
      resources = [for p in local.indexer_prefixes : "${local.bucket_arn}/${p}*"]
    }
  }

  # The publish log only grows (publish_log): the indexer never deletes an entry or a head,
  # and never writes the single chain of before the log had a chain per namespace. Denied
  # outright, so that a stolen indexer role cannot remove entries or extend that chain, whose
  # last hash may be older than the log retention.
  # The MCP function reads the namespaces' download totals (usage/modules/NAMESPACE.json) and
  # never a module's own counts, which name its callers: those are denied outright (IAM's
  # wildcard cannot say "one level" in the Allow).
  dynamic "statement" {
    for_each = each.key == "mcp" ? [1] : []
    content {
      sid       = "NoCallersForMcp"
      effect    = "Deny"
      actions   = ["s3:GetObject"]
      resources = ["${local.bucket_arn}/usage/modules/*/*"]
    }
  }

  dynamic "statement" {
    for_each = each.key == "indexer" ? [1] : []
    content {
      sid       = "PublishLogOnlyGrows"
      effect    = "Deny"
      actions   = ["s3:DeleteObject"]
      resources = ["${local.bucket_arn}/indexed/log/*"]
    }
  }

  dynamic "statement" {
    for_each = each.key == "indexer" ? [1] : []
    content {
      sid       = "ChainOfBeforeIsClosed"
      effect    = "Deny"
      actions   = ["s3:PutObject"]
      resources = ["${local.bucket_arn}/indexed/log/entries/*", "${local.bucket_arn}/indexed/log/head.json"]
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
        values   = [for p in concat(local.publisher_prefixes, local.key_admin_prefixes, local.indexer_prefixes) : "${p}*"]
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
    for_each = each.key == "mirror" ? [1] : []
    content {
      sid       = "MirrorKeepsUpstreamAnswers"
      actions   = ["s3:PutObject"]
      resources = [for p in local.mirror_prefixes : "${local.bucket_arn}/${p}*"]
    }
  }

  dynamic "statement" {
    # Only where the modules pull-through fetches: a bundle synced in needs no write.
    for_each = each.key == "modules" && length(var.upstream_modules) > 0 ? [1] : []
    content {
      sid       = "ModulesKeepUpstreamCopies"
      actions   = ["s3:PutObject"]
      resources = [for p in local.modules_prefixes : "${local.bucket_arn}/${p}*"]
    }
  }

  dynamic "statement" {
    for_each = each.key == "puller" ? [1] : []
    content {
      sid       = "PullerReadsPullRecords"
      actions   = ["s3:GetObject"]
      resources = [for n in local.pull_notifications : "${local.bucket_arn}/${n.prefix}*${n.suffix}"]
    }
  }

  dynamic "statement" {
    for_each = each.key == "puller" && length(local.upstream_names) > 0 ? [1] : []
    content {
      sid       = "PullerWritesCopies"
      actions   = ["s3:PutObject", "s3:AbortMultipartUpload"]
      resources = [for h in local.upstream_names : "${local.bucket_arn}/providers/${h}/*.zip"]
    }
  }

  dynamic "statement" {
    for_each = each.key == "puller" && length(local.upstream_names) > 0 ? [1] : []
    content {
      sid       = "PullerListsCopies"
      actions   = ["s3:ListBucket"]
      resources = [local.bucket_arn]
      condition {
        test     = "StringLike"
        variable = "s3:prefix"
        values   = [for h in local.upstream_names : "providers/${h}/*"]
      }
    }
  }

  dynamic "statement" {
    # The modules pull-through's large archives: the puller reads the pins and index it
    # updates and writes the copy, its pin, the index and a failure, all under upstream-modules/.
    for_each = each.key == "puller" && length(var.upstream_modules) > 0 ? [1] : []
    content {
      sid       = "PullerKeepsUpstreamModuleCopies"
      actions   = ["s3:GetObject", "s3:PutObject"]
      resources = [for p in local.modules_prefixes : "${local.bucket_arn}/${p}*"]
    }
  }

  dynamic "statement" {
    # Download counts: one document per module or provider, read and written conditionally.
    for_each = each.key == "usage" ? [1] : []
    content {
      sid       = "UsageKeepsCounts"
      actions   = ["s3:GetObject", "s3:PutObject"]
      resources = ["${local.bucket_arn}/${local.usage_prefix}*"]
    }
  }

  dynamic "statement" {
    # So that a document not written yet is a 404, not a 403.
    for_each = each.key == "usage" ? [1] : []
    content {
      sid       = "UsageList"
      actions   = ["s3:ListBucket"]
      resources = [local.bucket_arn]
      condition {
        test     = "StringLike"
        variable = "s3:prefix"
        values   = ["${local.usage_prefix}*"]
      }
    }
  }

  dynamic "statement" {
    for_each = each.key == "usage" ? [1] : []
    content {
      sid       = "UsageDeadLetters"
      actions   = ["sqs:SendMessage"]
      resources = [aws_sqs_queue.usage_dlq.arn]
    }
  }

  dynamic "statement" {
    for_each = each.key == "puller" ? [1] : []
    content {
      sid       = "PullerDeadLetters"
      actions   = ["sqs:SendMessage"]
      resources = [aws_sqs_queue.puller_dlq.arn]
    }
  }

  dynamic "statement" {
    for_each = var.kms_key_arn != "" ? [1] : []
    content {
      sid = "UseRegistryKey"
      # The writers encrypt too: the modules function where it copies upstream modules.
      actions   = contains(["indexer", "mirror", "puller", "usage"], each.key) || (each.key == "modules" && length(var.upstream_modules) > 0) ? ["kms:Decrypt", "kms:GenerateDataKey"] : ["kms:Decrypt"]
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

# Publishers: one managed policy per entry of var.publishers, to attach to a CI role or user.
# It lets them write only their own namespaces' upload prefixes, read back what they wrote, why
# an upload was rejected and their providers' namespaces' public keys, and list those prefixes
# (aws s3 sync, make publish-provider). Never indexed/, access/
# or another namespace: a publisher cannot plant a manifest or touch the token store.
locals {
  # Uploads the indexer may reject (and so explain under rejections/).
  publisher_archives = {
    for team, p in var.publishers : team => concat(
      [for ns in p.modules : "modules/${ns}/*"],
      [for hn in p.providers : "providers/${hn}/*"],
    )
  }
  # Everything a publisher writes: its archives. Never signing-keys/: whoever holds a CI
  # credential could otherwise install a key of their own and sign anything (key_admins below).
  publisher_objects = local.publisher_archives
  # What a publisher reads besides: its providers' namespaces' public signing keys.
  publisher_signing_keys = {
    for team, p in var.publishers : team => [for hn in p.providers : "signing-keys/${hn}/*"]
  }
  # The public signing keys each key admin may upload: signing-keys/HOSTNAME/NAMESPACE/.
  key_admin_objects = {
    for team, k in var.key_admins : team => concat(
      [for hn in k.providers : "signing-keys/${hn}/*"],
      k.trust_roots ? ["signing-keys/sigstore/*"] : [],
    )
  }
}

data "aws_iam_policy_document" "publisher" {
  for_each = var.publishers

  statement {
    sid       = "Publish"
    actions   = ["s3:PutObject", "s3:DeleteObject", "s3:AbortMultipartUpload"]
    resources = [for o in local.publisher_objects[each.key] : "${local.bucket_arn}/${o}"]
  }

  statement {
    sid       = "ReadOwnUploads"
    actions   = ["s3:GetObject"]
    resources = [for o in local.publisher_objects[each.key] : "${local.bucket_arn}/${o}"]
  }

  statement {
    sid       = "ReadRejections"
    actions   = ["s3:GetObject"]
    resources = [for o in local.publisher_archives[each.key] : "${local.bucket_arn}/rejections/${o}"]
  }

  # The public keys its providers' releases must verify with, read (never written) so that
  # make publish-provider checks the signature before anything is uploaded.
  dynamic "statement" {
    for_each = length(local.publisher_signing_keys[each.key]) > 0 ? [1] : []
    content {
      sid       = "ReadSigningKeys"
      actions   = ["s3:GetObject"]
      resources = [for o in local.publisher_signing_keys[each.key] : "${local.bucket_arn}/${o}"]
    }
  }

  statement {
    sid       = "ListOwnPrefixes"
    actions   = ["s3:ListBucket"]
    resources = [local.bucket_arn]
    condition {
      test     = "StringLike"
      variable = "s3:prefix"
      values = concat(local.publisher_objects[each.key], [for o in local.publisher_archives[each.key] : "rejections/${o}"],
      local.publisher_signing_keys[each.key])
    }
  }

  dynamic "statement" {
    for_each = var.kms_key_arn != "" ? [1] : []
    content {
      sid       = "UseRegistryKey"
      actions   = ["kms:GenerateDataKey", "kms:Decrypt"]
      resources = [var.kms_key_arn]
    }
  }
}

resource "aws_iam_policy" "publisher" {
  for_each = var.publishers

  name        = "${var.name}-publish-${each.key}"
  description = "Publish to the ${var.name} registry: modules ${join(", ", each.value.modules)}; providers ${join(", ", each.value.providers)}."
  policy      = data.aws_iam_policy_document.publisher[each.key].json
  tags        = var.tags
}

# Key admins: one managed policy per entry of var.key_admins, for the people (not the CI jobs)
# who decide which keys sign a namespace's providers. They write and read back only their
# namespaces' signing-keys/ prefixes; the indexer trusts nothing else there.
data "aws_iam_policy_document" "key_admin" {
  for_each = var.key_admins

  statement {
    sid       = "ManageSigningKeys"
    actions   = ["s3:PutObject", "s3:DeleteObject", "s3:GetObject"]
    resources = [for o in local.key_admin_objects[each.key] : "${local.bucket_arn}/${o}"]
  }

  statement {
    sid       = "ListOwnKeys"
    actions   = ["s3:ListBucket"]
    resources = [local.bucket_arn]
    condition {
      test     = "StringLike"
      variable = "s3:prefix"
      values   = local.key_admin_objects[each.key]
    }
  }

  dynamic "statement" {
    for_each = var.kms_key_arn != "" ? [1] : []
    content {
      sid       = "UseRegistryKey"
      actions   = ["kms:GenerateDataKey", "kms:Decrypt"]
      resources = [var.kms_key_arn]
    }
  }
}

resource "aws_iam_policy" "key_admin" {
  for_each = var.key_admins

  name        = "${var.name}-signing-keys-${each.key}"
  description = "Manage the ${var.name} registry's signing keys of providers ${join(", ", each.value.providers)}."
  policy      = data.aws_iam_policy_document.key_admin[each.key].json
  tags        = var.tags
}
