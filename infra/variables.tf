variable "name" {
  description = "Prefix for every resource name (functions, roles, API, log groups)."
  type        = string
  default     = "tf-registry"

  validation {
    condition     = can(regex("^[a-z][a-z0-9-]{1,40}$", var.name))
    error_message = "name must be 2-41 lower-case letters, digits or '-', starting with a letter."
  }
}

variable "lambda_dir" {
  description = "Directory holding NAME/bootstrap.zip for each function, as `make build` writes it (target/lambda)."
  type        = string
}

variable "create_bucket" {
  description = "Create the registry bucket. Set false to use an existing bucket named bucket_name (you then own its settings)."
  type        = bool
  default     = true
}

variable "bucket_name" {
  description = "Name of the registry bucket (created, or existing when create_bucket is false). Empty: NAME-ACCOUNT_ID-REGION."
  type        = string
  default     = ""
}

variable "presign_ttl_seconds" {
  description = "Lifetime of presigned archive URLs, 1 to 3600 seconds."
  type        = number
  default     = 300

  validation {
    condition     = floor(var.presign_ttl_seconds) == var.presign_ttl_seconds && var.presign_ttl_seconds >= 1 && var.presign_ttl_seconds <= 3600
    error_message = "presign_ttl_seconds must be between 1 and 3600."
  }
}

variable "read_memory_mb" {
  description = "Memory of the read functions: discovery, modules, mirror, providers, web and oci."
  type        = number
  default     = 256
}

variable "read_timeout_seconds" {
  description = "Timeout of the read functions (discovery, modules, mirror, providers, web, oci): at least 12 s (they answer 503 themselves after 10 s of storage trouble), at most 29 s (API Gateway gives up then)."
  type        = number
  default     = 15

  validation {
    condition     = var.read_timeout_seconds >= 12 && var.read_timeout_seconds <= 29
    error_message = "read_timeout_seconds must be between 12 and 29: the functions answer 503 after 10 s of storage trouble, and API Gateway gives up at 29 s."
  }
}

variable "indexer_memory_mb" {
  description = "Memory of the indexer function."
  type        = number
  default     = 512
}

variable "indexer_timeout_seconds" {
  description = "Timeout of the indexer function."
  type        = number
  default     = 300
}

variable "indexer_ephemeral_storage_mb" {
  description = "The indexer's /tmp, where it spools provider zips: at least max_provider_zip_bytes."
  type        = number
  default     = 2048
}

variable "puller_memory_mb" {
  description = "Memory of the puller function (pull-through copies; also its network bandwidth)."
  type        = number
  default     = 1024
}

variable "puller_timeout_seconds" {
  description = "Timeout of the puller function: copying every platform of one upstream release (12 zips of 200 MB take about 2 minutes)."
  type        = number
  default     = 900
}

variable "puller_ephemeral_storage_mb" {
  description = "The puller's /tmp, where each copied zip waits until its SHA-256 is checked: at least max_provider_zip_bytes."
  type        = number
  default     = 2048
}

variable "upstream_hosts" {
  description = "Provider hosts the mirror pulls through (REGISTRY_UPSTREAM_HOSTS): a provider of one of them that the bucket lacks is fetched from its providers.v1, verified and copied. An entry NAME=https://ADDRESS:PORT reaches NAME at another address. Empty turns the pull-through off."
  type        = list(string)
  default     = ["registry.terraform.io"]
  validation {
    condition     = alltrue([for h in var.upstream_hosts : can(regex("^[a-z0-9.-]+(:[0-9]+)?(=https://[^/?#@]+/?)?$", h))])
    error_message = "Each upstream is a lower-case host name, or NAME=https://ADDRESS[:PORT]."
  }
}

variable "upstream_modules" {
  description = "Module registries the modules pull-through fetches from (REGISTRY_UPSTREAM_MODULES): HOST, HOST/NAMESPACE (a glob) or either with =https://ADDRESS[:PORT]. A version's first download copies its archive into the bucket and pins its SHA-256. Empty (the default) fetches nothing; copies already in the bucket (an air-gap bundle) are served either way. Suggested: [\"registry.terraform.io\", \"registry.opentofu.org\"]. See docs/UPSTREAM-MODULES.md."
  type        = list(string)
  default     = []
  validation {
    condition     = alltrue([for h in var.upstream_modules : can(regex("^[a-z0-9.-]+(:[0-9]+)?(/[A-Za-z0-9_*?-]+)?(=https://[^/?#@]+/?)?$", h))])
    error_message = "Each module upstream is HOST or HOST/NAMESPACE_GLOB, optionally =https://ADDRESS[:PORT]."
  }
}

variable "upstream_git_hosts" {
  description = "Git hosts whose archives an upstream module's location may name (REGISTRY_UPSTREAM_GIT_HOSTS): git::https://HOST/OWNER/REPO?ref=REF is fetched as https://HOST/OWNER/REPO/archive/REF.tar.gz. HOST=https://ADDRESS reaches HOST elsewhere (GitHub Enterprise)."
  type        = list(string)
  default     = ["github.com"]
  validation {
    condition     = alltrue([for h in var.upstream_git_hosts : can(regex("^[a-z0-9.-]+(:[0-9]+)?(=https://[^/?#@]+/?)?$", h))])
    error_message = "Each git host is a lower-case host name, or NAME=https://ADDRESS[:PORT]."
  }
}

variable "upstream_module_max_bytes" {
  description = "Largest upstream module archive copied while the CLI waits (REGISTRY_UPSTREAM_MODULE_MAX_BYTES, at most 64 MiB); a larger one is copied by the puller, up to 256 MiB, while downloads answer 503 with Retry-After."
  type        = number
  default     = 33554432
  validation {
    condition     = floor(var.upstream_module_max_bytes) == var.upstream_module_max_bytes && var.upstream_module_max_bytes >= 1 && var.upstream_module_max_bytes <= 67108864
    error_message = "upstream_module_max_bytes must be 1 to 67108864 (64 MiB)."
  }
}

variable "upstream_versions_ttl_seconds" {
  description = "How long an upstream provider's version list kept in the bucket is used without asking the upstream (new upstream releases appear after this)."
  type        = number
  default     = 600
  validation {
    condition     = floor(var.upstream_versions_ttl_seconds) == var.upstream_versions_ttl_seconds && var.upstream_versions_ttl_seconds >= 0 && var.upstream_versions_ttl_seconds <= 86400
    error_message = "upstream_versions_ttl_seconds must be a whole number from 0 to 86400 (a day)."
  }
}

variable "upstream_timeout_seconds" {
  description = "Longest wait for one upstream request on the request path (1 to 8; a request's whole budget is 10 s)."
  type        = number
  default     = 4
  validation {
    condition     = floor(var.upstream_timeout_seconds) == var.upstream_timeout_seconds && var.upstream_timeout_seconds >= 1 && var.upstream_timeout_seconds <= 8
    error_message = "upstream_timeout_seconds must be 1 to 8."
  }
}

variable "oidc_issuers" {
  description = "OpenID Connect issuers whose JWTs are accepted as bearer tokens next to the registry's own (REGISTRY_OIDC_ISSUERS): each with its URL exactly as tokens carry it in iss, the audience they must carry in aud (or, without aud, in client_id), and rules mapping a claim's value (a glob) to module namespaces and providers ({value}: the matched value, when it is a plain name). One issuer may carry the OAuth client terraform login uses (discovery then offers login.v1). Empty: static tokens only. See docs/DEPLOY.md."
  type = list(object({
    issuer   = string
    audience = string
    rules = list(object({
      claim     = string
      equals    = string
      modules   = optional(list(string), [])
      providers = optional(list(string), [])
    }))
    login = optional(object({
      client = string
      authz  = string
      token  = string
      ports  = optional(list(number), [10000, 10010])
      scopes = optional(list(string), [])
    }))
  }))
  default = []
  validation {
    condition     = alltrue([for i in var.oidc_issuers : can(regex("^https://[^?#]+$", i.issuer)) && length(i.rules) > 0])
    error_message = "Each issuer is an https:// URL without query or fragment, with at least one rule."
  }
  validation {
    condition     = length([for i in var.oidc_issuers : i if i.login != null]) <= 1
    error_message = "Only one issuer may carry the terraform login client."
  }
  validation {
    condition     = alltrue([for i in var.oidc_issuers : i.login == null || try(length(i.login.ports) == 2 && i.login.ports[0] >= 1024 && i.login.ports[0] <= i.login.ports[1], false)])
    error_message = "login.ports is [FIRST, LAST], from 1024 up, FIRST not above LAST."
  }
}

variable "max_module_archive_bytes" {
  description = "Largest module archive the indexer accepts."
  type        = number
  default     = 104857600
  validation {
    condition     = floor(var.max_module_archive_bytes) == var.max_module_archive_bytes && var.max_module_archive_bytes >= 1
    error_message = "max_module_archive_bytes must be a whole number of bytes, at least 1."
  }
}

variable "max_provider_zip_bytes" {
  description = "Largest provider zip the indexer accepts."
  type        = number
  default     = 1073741824
  validation {
    condition     = floor(var.max_provider_zip_bytes) == var.max_provider_zip_bytes && var.max_provider_zip_bytes >= 1
    error_message = "max_provider_zip_bytes must be a whole number of bytes, at least 1."
  }
}

variable "allow_overwrite" {
  description = "Let an upload of other bytes to a published module or provider version replace it. Default false: published versions are immutable (the upload is rejected with a record, and the bytes first published stay served)."
  type        = bool
  default     = false
}

variable "semver_policy" {
  description = "What a module version that breaks its major line's interface does: off, warn (published, the breaks recorded and shown) or enforce (rejected with a record naming each break and the major version to use), then NAMESPACE=POLICY exceptions, comma-separated (\"warn, platform=enforce\")."
  type        = string
  default     = "warn"

  validation {
    condition = alltrue([
      for part in compact([for p in split(",", var.semver_policy) : trimspace(p)]) :
      can(regex("^([A-Za-z0-9][A-Za-z0-9_-]*=)?(off|warn|enforce)$", replace(part, " ", "")))
    ])
    error_message = "semver_policy is off, warn or enforce, then NAMESPACE=POLICY pairs, comma-separated."
  }
}

variable "provenance" {
  description = "Which Sigstore provenance each namespace's module versions need (REGISTRY_PROVENANCE; docs/PROVENANCE.md): rules, the first whose namespace glob matches deciding, each with a mode (off, recorded: verified when present and shown, required: a version without a valid bundle is not served) and the signers it admits (an OIDC issuer, repository URI globs, workflow paths, ref globs under refs/tags/, the trust roots that may vouch for it: public-good by default); a required rule names its signers. Empty: every namespace recorded, any signer the trust roots vouch for."
  type = list(object({
    namespaces = list(string)
    mode       = string
    signers = optional(list(object({
      issuer       = string
      repositories = list(string)
      workflows    = optional(list(string), [])
      refs         = optional(list(string), ["refs/tags/*"])
      trust_roots  = optional(list(string), ["public-good"])
    })), [])
  }))
  default = []

  validation {
    condition     = alltrue([for r in var.provenance : contains(["off", "recorded", "required"], r.mode) && length(r.namespaces) > 0 && (r.mode != "required" || length(r.signers) > 0)])
    error_message = "Each provenance rule names at least one namespace glob and a mode: off, recorded or required; a required rule names its signers (anyone can make a bundle public-good Fulcio certifies)."
  }

  validation {
    condition     = alltrue(flatten([for r in var.provenance : [for s in r.signers : startswith(s.issuer, "https://") && length(s.repositories) > 0 && alltrue([for ref in s.refs : startswith(ref, "refs/tags/")])]]))
    error_message = "Each provenance signer has an https issuer, at least one repository glob, and refs under refs/tags/ only."
  }
}

variable "reserved_concurrency" {
  description = "Reserved concurrent executions per function, 1 or more (caps cost and protects the account's other functions); -1 (the default) reserves none. Every function reserves it, and AWS keeps 100 of the account's concurrency quota unreserved: a new account's quota is often 10, so set it only where the quota allows (Service Quotas, \"Concurrent executions\")."
  type        = number
  default     = -1
  validation {
    condition     = floor(var.reserved_concurrency) == var.reserved_concurrency && (var.reserved_concurrency == -1 || var.reserved_concurrency >= 1)
    error_message = "reserved_concurrency must be -1 (none) or a whole number from 1."
  }
}

variable "usage_caller_days" {
  description = "Days the download counts keep who downloaded each version (REGISTRY_USAGE_CALLER_DAYS, 0 to 90); after that only the counts remain. The read functions' logs hold the same records for log_retention_days."
  type        = number
  default     = 30

  validation {
    condition     = floor(var.usage_caller_days) == var.usage_caller_days && var.usage_caller_days >= 0 && var.usage_caller_days <= 90
    error_message = "usage_caller_days must be a whole number of days from 0 to 90."
  }
}

variable "log_retention_days" {
  description = "Retention of the functions' and the API's log groups."
  type        = number
  default     = 30
}

variable "throttling_rate_limit" {
  description = "API Gateway steady-state requests per second."
  type        = number
  default     = 200
}

variable "throttling_burst_limit" {
  description = "API Gateway burst of requests."
  type        = number
  default     = 400
}

variable "domain_name" {
  description = "Custom hostname for the registry (registry.example.com), so module addresses read registry.example.com/NS/NAME/SYSTEM. Empty: the API's execute-api hostname."
  type        = string
  default     = ""
}

variable "certificate_arn" {
  description = "ACM certificate (in this region) for domain_name. Required when domain_name is set."
  type        = string
  default     = ""
}

variable "anonymous_modules" {
  description = "Module namespaces anyone may read without a token (globs, e.g. [\"public\"]). Empty: every read needs a token."
  type        = list(string)
  default     = []
}

variable "anonymous_providers" {
  description = "Mirrored providers anyone may read without a token (HOSTNAME/NAMESPACE/TYPE globs)."
  type        = list(string)
  default     = []
}

variable "tokens_cache_seconds" {
  description = "How long a function keeps the token store before reading it again (0-300): a revoked token stops working within this."
  type        = number
  default     = 30
  validation {
    condition     = floor(var.tokens_cache_seconds) == var.tokens_cache_seconds && var.tokens_cache_seconds >= 0 && var.tokens_cache_seconds <= 300
    error_message = "tokens_cache_seconds must be a whole number from 0 to 300."
  }
}

variable "manifest_cache_seconds" {
  description = "How long a warm function serves a cached manifest without asking S3 (0-60). A new or removed version shows up to this much later; each request within it makes no S3 request (the trade-off measured: docs/PERFORMANCE.md). 0: one conditional GET per request, new versions show at once."
  type        = number
  default     = 5

  validation {
    condition     = floor(var.manifest_cache_seconds) == var.manifest_cache_seconds && var.manifest_cache_seconds >= 0 && var.manifest_cache_seconds <= 60
    error_message = "manifest_cache_seconds must be 0 to 60."
  }
}

variable "publishers" {
  description = "Who may publish what: one IAM policy per entry (output publisher_policy_arns) to attach to a CI role or user. modules: module namespaces (or \"*\"); providers: HOSTNAME/NAMESPACE pairs (or HOSTNAME/*, or \"*\"). github: OWNER/REPO repositories whose tag jobs in GitHub Actions may assume the entry's role (output publisher_role_arns); gitlab: GROUP/PROJECT paths whose tag pipelines' GitLab CI jobs may. No wildcards."
  type = map(object({
    modules   = optional(list(string), [])
    providers = optional(list(string), [])
    github    = optional(list(string), [])
    gitlab    = optional(list(string), [])
  }))
  default = {}

  validation {
    condition = alltrue([for team, p in var.publishers :
      can(regex("^[a-zA-Z0-9+=,.@_-]{1,64}$", team)) &&
      length(p.modules) + length(p.providers) > 0 &&
      alltrue([for ns in p.modules : ns == "*" || can(regex("^[0-9A-Za-z]([0-9A-Za-z_-]{0,62}[0-9A-Za-z])?$", ns))]) &&
      alltrue([for hn in p.providers : hn == "*" || !startswith(hn, "sigstore/") && can(regex("^[a-z0-9]([a-z0-9.-]*[a-z0-9])?(:[0-9]{1,5})?/(\\*|[0-9A-Za-z]([0-9A-Za-z-]{0,62}[0-9A-Za-z])?)$", hn))])
    ])
    error_message = "publishers: each entry names at least one module namespace (or \"*\") or provider HOSTNAME/NAMESPACE (or HOSTNAME/*, or \"*\"). A wildcard hostname with a named namespace (\"*/acme\") is refused: in IAM \"*\" also matches \"/\", so it would reach other namespaces' providers."
  }

  validation {
    condition = alltrue([for team, p in var.publishers :
      alltrue([for r in p.github : can(regex("^[A-Za-z0-9-]{1,39}/[A-Za-z0-9._-]{1,100}$", r))]) &&
      alltrue([for g in p.gitlab : can(regex("^[A-Za-z0-9][A-Za-z0-9_.-]*(/[A-Za-z0-9][A-Za-z0-9_.-]*)+$", g))])
    ])
    error_message = "publishers: github entries are OWNER/REPO and gitlab entries GROUP/PROJECT paths (subgroups spelt out), as the CI's token's sub spells them. No wildcard: in IAM \"*\" also matches \":\", so OWNER/* would admit subjects that are not tag jobs (a customised subject template's free-text claims), and every repository a member can create."
  }
}

variable "key_admins" {
  description = "Who may upload the public signing keys of which provider namespaces: one IAM policy per entry (output key_admin_policy_arns), for the people who own the keys, not the CI jobs that publish. providers: HOSTNAME/NAMESPACE pairs (or HOSTNAME/*, or \"*\"). trust_roots: may also add Sigstore trust roots (signing-keys/sigstore/, docs/PROVENANCE.md); \"*\" covers them already."
  type = map(object({
    providers   = list(string)
    trust_roots = optional(bool, false)
  }))
  default = {}

  validation {
    condition = alltrue([for team, k in var.key_admins :
      can(regex("^[a-zA-Z0-9+=,.@_-]{1,64}$", team)) && length(k.providers) > 0 &&
      alltrue([for hn in k.providers : hn == "*" || !startswith(hn, "sigstore/") && can(regex("^[a-z0-9]([a-z0-9.-]*[a-z0-9])?(:[0-9]{1,5})?/(\\*|[0-9A-Za-z]([0-9A-Za-z-]{0,62}[0-9A-Za-z])?)$", hn))])
    ])
    error_message = "key_admins: each entry names at least one provider HOSTNAME/NAMESPACE (or HOSTNAME/*, or \"*\"); a wildcard hostname with a named namespace (\"*/acme\") is refused, as for publishers, and so is the host sigstore (its prefix holds the Sigstore trust roots: trust_roots = true grants it)."
  }
}

variable "disable_execute_api_endpoint" {
  description = "With domain_name set, turn off the API's default execute-api endpoint, so the registry answers only on the custom domain. Ignored without domain_name."
  type        = bool
  default     = true
}

variable "kms_key_arn" {
  description = "Customer-managed KMS key for the bucket, the log groups and the functions' environment. Empty: AWS-managed encryption."
  type        = string
  default     = ""
}

variable "tags" {
  description = "Tags for every resource."
  type        = map(string)
  default     = {}
}

variable "monitoring" {
  description = "CloudWatch alarms (API 5xx rate, each function's errors and throttles, the dead-letter queues) and a dashboard: a few dollars a month at list prices (docs/PERFORMANCE.md, What a month costs). false: neither."
  type        = bool
  default     = true
}

variable "alarm_topic_arn" {
  description = "SNS topic the alarms notify (when they fire and when they clear). Empty: the alarms exist in CloudWatch and notify no one."
  type        = string
  default     = ""
}

variable "alarm_5xx_percent" {
  description = "The API 5xx alarm fires when more than this percentage of answers in 5 minutes were 5xx (counted from 20 requests on)."
  type        = number
  default     = 1

  validation {
    condition     = var.alarm_5xx_percent > 0 && var.alarm_5xx_percent <= 100
    error_message = "alarm_5xx_percent must be above 0 and at most 100."
  }
}

variable "ci_oidc" {
  description = "The OpenID Connect providers the publishers' CI roles trust (var.publishers github and gitlab). An account holds one IAM OIDC provider per URL: give its ARN when it exists already (made by another stack), else this module makes it. audience: the aud the CI jobs ask for (aws-actions/configure-aws-credentials asks for sts.amazonaws.com; the GitLab template sets the same)."
  type = object({
    github_url          = optional(string, "https://token.actions.githubusercontent.com")
    github_provider_arn = optional(string, "")
    gitlab_url          = optional(string, "https://gitlab.com")
    gitlab_provider_arn = optional(string, "")
    audience            = optional(string, "sts.amazonaws.com")
  })
  default = {}

  validation {
    condition     = alltrue([for u in [var.ci_oidc.github_url, var.ci_oidc.gitlab_url] : can(regex("^https://[a-z0-9.-]+(:[0-9]{1,5})?(/[A-Za-z0-9._/-]*[A-Za-z0-9_-])?$", u))]) && length(var.ci_oidc.audience) > 0
    error_message = "ci_oidc: github_url and gitlab_url are https:// URLs without a trailing slash (as the tokens' iss spells them); audience is not empty."
  }
}
