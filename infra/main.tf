data "aws_caller_identity" "current" {}
data "aws_region" "current" {}
data "aws_partition" "current" {}

locals {
  bucket_name = var.bucket_name != "" ? var.bucket_name : "${var.name}-${data.aws_caller_identity.current.account_id}-${data.aws_region.current.name}"
  bucket_arn  = "arn:${data.aws_partition.current.partition}:s3:::${local.bucket_name}"

  # One function per Lambda binary in functions/ (the consistency test checks this list).
  functions = {
    discovery = { memory = var.read_memory_mb, timeout = var.read_timeout_seconds, storage = 512 }
    # A first download of an upstream module copies it while the CLI waits (config.rs
    # COPY_BUDGET, 25 s): the modules function then needs 28 s, inside API Gateway's 29 s.
    modules   = { memory = var.read_memory_mb, timeout = length(var.upstream_modules) > 0 ? max(var.read_timeout_seconds, 28) : var.read_timeout_seconds, storage = 512 }
    mirror    = { memory = var.read_memory_mb, timeout = var.read_timeout_seconds, storage = 512 }
    providers = { memory = var.read_memory_mb, timeout = var.read_timeout_seconds, storage = 512 }
    # For people and tools: the module list, search and details API.
    web = { memory = var.read_memory_mb, timeout = var.read_timeout_seconds, storage = 512 }
    # OCI Distribution (/v2/): providers and module packages as OpenTofu installs them.
    oci = { memory = var.read_memory_mb, timeout = var.read_timeout_seconds, storage = 512 }
    # The MCP server for coding assistants (/mcp): the catalog and docs as tools.
    mcp     = { memory = var.read_memory_mb, timeout = var.read_timeout_seconds, storage = 512 }
    indexer = { memory = var.indexer_memory_mb, timeout = var.indexer_timeout_seconds, storage = var.indexer_ephemeral_storage_mb }
    # The pull-through mirror's copier: invoked by pull records, never by API Gateway.
    puller = { memory = var.puller_memory_mb, timeout = var.puller_timeout_seconds, storage = var.puller_ephemeral_storage_mb }
    # Download counts: folds the read functions' download records (their log lines, delivered
    # by a CloudWatch Logs subscription, usage.tf) into usage/. A batch is at most 1 MB of
    # log lines: one read and one write per module it names.
    usage = { memory = 256, timeout = 60, storage = 512 }
  }

  # The functions whose answers count as downloads and write a record line to their log
  # (registry::usage::COUNTING_FUNCTIONS; the consistency test compares): each log group's
  # subscription delivers those lines to the usage function.
  usage_sources = ["modules", "mirror", "providers", "oci"]

  # Exactly the route keys the router lists (router::route_templates), with the function that
  # answers each; the consistency test checks both directions. Every key takes ANY method, so
  # the function's router answers HEAD as GET and another method 405 (JSON), as locally; and
  # $default gives a path no key matches to the router too (404 or 400, JSON), never API
  # Gateway's own {"message":"Not Found"}.
  routes = {
    "ANY /.well-known/terraform.json"                                = "discovery"
    "ANY /v1/modules/{namespace}/{name}/{system}/versions"           = "modules"
    "ANY /v1/modules/{namespace}/{name}/{system}/{version}/download" = "modules"
    # The modules pull-through: an upstream registry's modules.v1 (the CLI's `host` block).
    "ANY /v1/modules/upstream/{hostname}/{namespace}/{name}/{system}/versions"           = "modules"
    "ANY /v1/modules/upstream/{hostname}/{namespace}/{name}/{system}/{version}/download" = "modules"
    "ANY /v1/mirror/{hostname}/{namespace}/{type}/{file}"                                = "mirror"
    "ANY /v1/providers/{namespace}/{type}/versions"                                      = "providers"
    "ANY /v1/providers/{namespace}/{type}/{version}/download/{os}/{arch}"                = "providers"
    # API Gateway prefers the literal `versions` and `search` over a {version} or {namespace}.
    "ANY /v1/modules"                                       = "web"
    "ANY /v1/modules/search"                                = "web"
    "ANY /v1/modules/{namespace}/{name}/{system}"           = "web"
    "ANY /v1/modules/{namespace}/{name}/{system}/{version}" = "web"
    # The web pages: the catalog at /, the rest under /ui/ (router::UI_PATH).
    "ANY /"                                                             = "web"
    "ANY /ui/modules/{namespace}/{name}/{system}"                       = "web"
    "ANY /ui/modules/{namespace}/{name}/{system}/{version}"             = "web"
    "ANY /ui/modules/{namespace}/{name}/{system}/{version}/from/{from}" = "web"
    "ANY /ui/providers/{hostname}/{namespace}/{type}"                   = "web"
    "ANY /ui/providers/{hostname}/{namespace}/{type}/{version}"         = "web"
    "ANY /ui/upstream/{hostname}/{namespace}/{name}/{system}"           = "web"
    "ANY /ui/sign-in"                                                   = "web"
    "ANY /ui/sign-out"                                                  = "web"
    "ANY /ui/assets/{file}"                                             = "web"
    # OCI Distribution: /v2/ (ANY /v2 takes the trailing slash) and everything under it.
    "ANY /v2"          = "oci"
    "ANY /v2/{proxy+}" = "oci"
    # The MCP server: one JSON-RPC message per POST; where an MCP client signs in (RFC 9728).
    "ANY /mcp"                                      = "mcp"
    "ANY /.well-known/oauth-protected-resource/mcp" = "mcp"
    # router::DEFAULT_ROUTE_SERVICE: the router refuses such a path before asking any service.
    "$default" = "discovery"
  }

  # The trust boundary (functions/registry/src/layout/mod.rs; the consistency test compares):
  # publishers write inputs under publisher_prefixes, only the indexer writes indexer_prefixes,
  # and the read functions serve only from what the indexer wrote.
  publisher_prefixes = ["modules/", "providers/"]
  # Namespaces' public signing keys: key admins write them, publishers may not (var.key_admins).
  key_admin_prefixes = ["signing-keys/"]
  indexer_prefixes   = ["indexed/", "rejections/"]
  # The mirror function keeps what it learned of upstream registries here (version lists, pull
  # records); nobody else writes it (layout::UPSTREAM_PREFIX).
  mirror_prefixes = ["upstream/"]
  # The modules function keeps upstream modules' copies, pins and version lists here
  # (layout::UPSTREAM_MODULES_PREFIX); an air-gap bundle is synced here too.
  modules_prefixes = ["upstream-modules/"]
  # The usage function keeps the download counts here (layout::USAGE_PREFIX); nobody else
  # writes it.
  usage_prefix = "usage/"

  # The uploads and deletes that invoke the indexer: exactly layout::NOTIFICATIONS, which the
  # local registry's embedded S3 follows too (the consistency test compares). None lies under
  # an indexer prefix, so the indexer's own writes never invoke it.
  # The extensions of module archives (layout::MODULE_ARCHIVE_EXTENSIONS): what the modules
  # function presigns.
  module_archive_suffixes = [".tar.gz", ".tgz", ".zip"]

  notifications = {
    modules-tar-gz = { prefix = "modules/", suffix = ".tar.gz" }
    modules-tgz    = { prefix = "modules/", suffix = ".tgz" }
    modules-zip    = { prefix = "modules/", suffix = ".zip" }
    providers-zip  = { prefix = "providers/", suffix = ".zip" }
    # A publisher deprecates a version by uploading its deprecation file, and undoes it by
    # deleting the file.
    modules-deprecation   = { prefix = "modules/", suffix = ".deprecation.json" }
    providers-deprecation = { prefix = "providers/", suffix = "_deprecation.json" }
    # A module version's Sigstore bundle: its provenance, uploaded before or after the archive.
    modules-bundle = { prefix = "modules/", suffix = ".sigstore.json" }
    # A signed release (providers.v1) is published when its last file arrives, whichever it is.
    providers-shasums   = { prefix = "providers/", suffix = "_SHA256SUMS" }
    providers-signature = { prefix = "providers/", suffix = "_SHA256SUMS.sig" }
    providers-manifest  = { prefix = "providers/", suffix = "_manifest.json" }
    # The modules pull-through's pins and refusals: the indexer puts them on the publish log.
    upstream-modules-pin     = { prefix = "upstream-modules/", suffix = ".pin.json" }
    upstream-modules-refusal = { prefix = "upstream-modules/", suffix = ".refused.json" }
  }

  # The writes that invoke the puller: exactly layout::PULL_NOTIFICATIONS (the consistency test
  # compares). Disjoint from the indexer's: the zips the puller copies invoke the indexer.
  pull_notifications = {
    upstream-pulls = { prefix = "upstream/pulls/", suffix = ".json" }
    # The modules pull-through's hand-off: a version too large to copy while the CLI waits.
    upstream-modules-pull = { prefix = "upstream-modules/", suffix = ".pull.json" }
  }

  # Provider hosts the mirror pulls through (REGISTRY_UPSTREAM_HOSTS), by name (an entry may be
  # NAME=https://ADDRESS:PORT): where the puller may write copies.
  upstream_names = [for h in var.upstream_hosts : split("=", h)[0]]

  common_environment = {
    REGISTRY_BUCKET                 = local.bucket_name
    REGISTRY_PRESIGN_TTL_SECONDS    = tostring(var.presign_ttl_seconds)
    REGISTRY_ANONYMOUS_MODULES      = join(",", var.anonymous_modules)
    REGISTRY_ANONYMOUS_PROVIDERS    = join(",", var.anonymous_providers)
    REGISTRY_TOKENS_CACHE_SECONDS   = tostring(var.tokens_cache_seconds)
    REGISTRY_MANIFEST_CACHE_SECONDS = tostring(var.manifest_cache_seconds)
    # Pull-through mirror: every function reads the same configuration; only the mirror and
    # the puller reach an upstream.
    REGISTRY_UPSTREAM_HOSTS                = join(",", var.upstream_hosts)
    REGISTRY_UPSTREAM_VERSIONS_TTL_SECONDS = tostring(var.upstream_versions_ttl_seconds)
    REGISTRY_UPSTREAM_TIMEOUT_SECONDS      = tostring(var.upstream_timeout_seconds)
    # Modules pull-through: only the modules function (and the puller, for large archives)
    # reaches these.
    REGISTRY_UPSTREAM_MODULES          = join(",", var.upstream_modules)
    REGISTRY_UPSTREAM_GIT_HOSTS        = join(",", var.upstream_git_hosts)
    REGISTRY_UPSTREAM_MODULE_MAX_BYTES = tostring(var.upstream_module_max_bytes)
    # The host the CLI knows the registry by: providers under it are served by providers.v1,
    # as signed releases only.
    REGISTRY_HOSTNAME = local.hostname
    # OpenID Connect sign-in: every read function checks JWTs of these issuers (fetching their
    # keys over HTTPS); discovery offers login.v1 from the issuer that has a login client.
    REGISTRY_OIDC_ISSUERS = jsonencode(var.oidc_issuers)
    # Download counts: the usage function forgets callers after these days, and the web
    # function shows callers of these days.
    REGISTRY_USAGE_CALLER_DAYS = tostring(var.usage_caller_days)
  }
  environment = {
    discovery = local.common_environment
    modules   = local.common_environment
    mirror    = local.common_environment
    providers = local.common_environment
    web       = local.common_environment
    oci       = local.common_environment
    mcp       = local.common_environment
    indexer = merge(local.common_environment, {
      REGISTRY_MAX_MODULE_ARCHIVE_BYTES = tostring(var.max_module_archive_bytes)
      REGISTRY_MAX_PROVIDER_ZIP_BYTES   = tostring(var.max_provider_zip_bytes)
      REGISTRY_ALLOW_OVERWRITE          = tostring(var.allow_overwrite)
      REGISTRY_SEMVER_POLICY            = var.semver_policy
      REGISTRY_PROVENANCE               = length(var.provenance) == 0 ? "" : jsonencode(var.provenance)
    })
    puller = merge(local.common_environment, {
      REGISTRY_MAX_PROVIDER_ZIP_BYTES = tostring(var.max_provider_zip_bytes)
    })
    usage = local.common_environment
  }

  hostname = var.domain_name != "" ? var.domain_name : replace(aws_apigatewayv2_api.registry.api_endpoint, "https://", "")
}
