//! The S3 key layout: the only place that knows where things live in the bucket, and who
//! writes them. `docs/BUCKET.md` draws the same tree.
//!
//! ```text
//! modules/NAMESPACE/NAME/SYSTEM/VERSION.tar.gz|.tgz|.zip    module archives          publishers
//! modules/NAMESPACE/NAME/SYSTEM/VERSION.EXT.sigstore.json    its Sigstore bundle      publishers
//! providers/HOSTNAME/NAMESPACE/TYPE/terraform-provider-TYPE_VERSION_OS_ARCH.zip       publishers
//! providers/HOSTNAME/NAMESPACE/TYPE/terraform-provider-TYPE_VERSION_SHA256SUMS        publishers
//!                              …_SHA256SUMS.sig, …_manifest.json   (a signed release, for the
//!                                                  registry's own HOSTNAME: providers.v1)
//! signing-keys/HOSTNAME/NAMESPACE/NAME.asc                  a namespace's public keys  key admins
//! signing-keys/sigstore/NAME.json                           a Sigstore trust root    key admins
//! providers/HOSTNAME/NAMESPACE/TYPE/index.json, VERSION.json  left by a synced
//!                                                  `terraform providers mirror` directory: never read
//! indexed/modules/NAMESPACE/NAME/SYSTEM/manifest.json       module manifest          indexer only
//! indexed/modules/NAMESPACE/NAME/SYSTEM/docs/VERSION.json   a version's docs         indexer only
//! indexed/providers/HOSTNAME/NAMESPACE/TYPE/index.json      mirror documents         indexer only
//! indexed/providers/HOSTNAME/NAMESPACE/TYPE/VERSION.json
//! rejections/KEY.json                                       why KEY was not indexed  indexer only
//! access/tokens.json                                        token hashes and scopes  token command
//! upstream/versions/HOSTNAME/NAMESPACE/TYPE/index.json      an upstream's version list  mirror function
//! upstream/pulls/HOSTNAME/NAMESPACE/TYPE/VERSION.json       a verified upstream release  mirror function
//!                                                  to copy (pull-through; the puller copies its zips
//!                                                  to providers/HOSTNAME/…, where the indexer finds them)
//! usage/modules/NAMESPACE/NAME/SYSTEM.json                 downloads by version, day, caller  usage function
//! usage/providers/HOSTNAME/NAMESPACE/TYPE.json              (likewise)
//! usage/upstream-modules/HOSTNAME/NAMESPACE/NAME/SYSTEM.json (likewise)
//! usage/modules/NAMESPACE.json                             its modules' totals (the list's)   usage function
//! ```
//!
//! The trust boundary is the prefix: publishers write inputs (`modules/`, `providers/`); what
//! the read functions serve from lives under `indexed/`, which only the indexer writes. A read
//! function presigns a key only after [`archive_key`] classified it as the very archive the
//! request named, so nothing in a manifest can point a download elsewhere.

use crate::address::{ModuleAddress, ProviderAddress, UpstreamModule};
use crate::error::Error;

mod classify;

pub use classify::{
    ObjectKind, Owner, Wanted, archive_key, classify, parse_provider_archive_name, parse_release_file_name,
};

/// Module archives, uploaded by publishers.
pub const MODULES_PREFIX: &str = "modules/";
/// Provider packages, uploaded by publishers.
pub const PROVIDERS_PREFIX: &str = "providers/";
/// Everything the registry derives and serves from; written by the indexer only.
pub const INDEXED_PREFIX: &str = "indexed/";
/// Why an upload was not indexed; written by the indexer only.
pub const REJECTIONS_PREFIX: &str = "rejections/";
/// Public signing keys of the namespaces that publish signed provider releases, uploaded by
/// key admins (never by publishers: a CI credential must not be able to install a key of its
/// own), read by the indexer only.
pub const SIGNING_KEYS_PREFIX: &str = "signing-keys/";
/// Token hashes and scopes (`auth::TokenStore`); read by the read functions, written by the
/// token command.
pub const TOKENS: &str = "access/tokens.json";
/// What the network mirror keeps of upstream registries (pull-through); written by the mirror
/// function only, read by it and by the puller.
pub const UPSTREAM_PREFIX: &str = "upstream/";
/// Upstream version lists, each with the time it was fetched.
pub const UPSTREAM_VERSIONS_PREFIX: &str = "upstream/versions/";
/// Pull records: upstream releases whose signature verified, to be copied into the bucket.
pub const UPSTREAM_PULLS_PREFIX: &str = "upstream/pulls/";
/// Modules copied from upstream registries (the modules pull-through): each module's kept
/// version list, each version's pin and its archive. Written by the modules function only (and
/// by `aws s3 sync` of an air-gap bundle, which lays them out the same way); read by it.
pub const UPSTREAM_MODULES_PREFIX: &str = "upstream-modules/";
/// The end of a pin's key (`…/1.2.0.pin.json`).
pub const UPSTREAM_MODULE_PIN_SUFFIX: &str = ".pin.json";
/// The end of a refusal record's key (`…/1.2.0/SHA256.refused.json`).
pub const UPSTREAM_MODULE_REFUSAL_SUFFIX: &str = ".refused.json";
/// The end of a module pull record's key (`…/1.2.0.pull.json`): a version too large to copy
/// while the CLI waits, handed to the puller.
pub const UPSTREAM_MODULE_PULL_SUFFIX: &str = ".pull.json";
/// The end of the puller's record of a module pull that failed (`…/1.2.0.pull-failed.json`).
/// No notification covers it: the puller's own write never invokes it again.
pub const UPSTREAM_MODULE_PULL_FAILURE_SUFFIX: &str = ".pull-failed.json";
/// The file name of a module manifest.
pub const MODULE_MANIFEST_FILE: &str = "manifest.json";
/// The file name of a provider's version list (the network mirror's).
pub const PROVIDER_INDEX_FILE: &str = "index.json";

/// The OCI artifacts the indexer derives (`oci`): manifests and blob pointers, by digest.
pub const OCI_PREFIX: &str = "indexed/oci/";

/// Download counts (`usage`): a document per module, provider or upstream module, written by
/// the usage function only (from the read functions' download records); the web function
/// reads modules' and providers' (their pages). No notification covers it.
pub const USAGE_PREFIX: &str = "usage/";

/// A module's download counts.
pub fn module_usage(m: &ModuleAddress) -> String {
    format!("{USAGE_PREFIX}modules/{m}.json")
}

/// A namespace's modules' download totals (`usage::NamespaceUsage`): beside the namespace's
/// folder of module documents, and never one of them (a namespace has no `.`).
pub fn namespace_usage(namespace: &str) -> String {
    format!("{USAGE_PREFIX}modules/{namespace}.json")
}

/// A provider's download counts (any host: its own, or a mirrored upstream's).
pub fn provider_usage(p: &ProviderAddress) -> String {
    format!("{USAGE_PREFIX}providers/{p}.json")
}

/// An upstream module's download counts (the modules pull-through).
pub fn upstream_module_usage(m: &UpstreamModule) -> String {
    format!("{USAGE_PREFIX}upstream-modules/{m}.json")
}

/// Where publishers write (their IAM policy in infra/, the local registry's publisher key).
pub const PUBLISHER_PREFIXES: [&str; 2] = [MODULES_PREFIX, PROVIDERS_PREFIX];
/// Where key admins write (their IAM policy in infra/, the local registry's key-admin key).
pub const KEY_ADMIN_PREFIXES: [&str; 1] = [SIGNING_KEYS_PREFIX];
/// Where the indexer writes. No notification filter covers these, so its own writes never
/// invoke it (`notifies`).
pub const INDEXER_PREFIXES: [&str; 2] = [INDEXED_PREFIX, REJECTIONS_PREFIX];

/// The uploads and deletes that invoke the indexer, as (prefix, suffix): exactly infra's S3
/// notification filters (`infra/main.tf`, `local.notifications`; a test compares the two), and
/// exactly what the local registry's embedded S3 indexes, so local runs see what AWS delivers.
/// A signed release's checksum file, signature and manifest invoke it too, so a release
/// whose signature arrives last (or is fixed later) is published when it does.
pub const NOTIFICATIONS: [(&str, &str); 12] = [
    (MODULES_PREFIX, ".tar.gz"),
    (MODULES_PREFIX, ".tgz"),
    (MODULES_PREFIX, ".zip"),
    (MODULES_PREFIX, MODULE_DEPRECATION_SUFFIX),
    // A bundle uploaded after its archive publishes the version (or its provenance) then.
    (MODULES_PREFIX, BUNDLE_SUFFIX),
    (PROVIDERS_PREFIX, ".zip"),
    (PROVIDERS_PREFIX, SHASUMS_SUFFIX),
    (PROVIDERS_PREFIX, SIGNATURE_SUFFIX),
    (PROVIDERS_PREFIX, RELEASE_MANIFEST_SUFFIX),
    (PROVIDERS_PREFIX, PROVIDER_DEPRECATION_SUFFIX),
    // The modules pull-through's pins and refusals: the indexer puts them on the publish log.
    (UPSTREAM_MODULES_PREFIX, UPSTREAM_MODULE_PIN_SUFFIX),
    (UPSTREAM_MODULES_PREFIX, UPSTREAM_MODULE_REFUSAL_SUFFIX),
];

/// The end of a module version's deprecation file (`modules/NS/NAME/SYSTEM/1.2.0.deprecation.json`).
pub const MODULE_DEPRECATION_SUFFIX: &str = ".deprecation.json";
/// The end of a provider version's (`…/terraform-provider-TYPE_1.2.0_deprecation.json`).
pub const PROVIDER_DEPRECATION_SUFFIX: &str = "_deprecation.json";

/// The end of a Sigstore bundle's key: the archive's own name, then this.
pub const BUNDLE_SUFFIX: &str = ".sigstore.json";

/// A module version's Sigstore bundle: beside the archive it signs, named after it
/// (`modules/acme/vpc/aws/1.2.0.tar.gz.sigstore.json`), uploaded by its publisher.
pub fn module_bundle(m: &ModuleAddress, version: &semver::Version, extension: &str) -> String {
    format!("{}{version}.{extension}{BUNDLE_SUFFIX}", module_prefix(m))
}

/// Trust roots an operator adds for provenance (GitHub's private instance, a private
/// Sigstore), one `trusted_root.json` per object: written by key admins, read by the indexer.
/// `sigstore` is no host name (it has no dot), so no namespace's signing keys live here.
pub const SIGSTORE_TRUST_ROOTS_PREFIX: &str = "signing-keys/sigstore/";

/// A module version's deprecation file, which a publisher uploads to deprecate it and deletes
/// to undo that: `{"reason": "…", "replacement": "…"}` (`manifest::Deprecation`).
pub fn module_deprecation(m: &ModuleAddress, version: &semver::Version) -> String {
    format!("{}{version}{MODULE_DEPRECATION_SUFFIX}", module_prefix(m))
}

/// A provider version's deprecation file, likewise.
pub fn provider_deprecation(p: &ProviderAddress, version: &semver::Version) -> String {
    format!("{}terraform-provider-{}_{version}{PROVIDER_DEPRECATION_SUFFIX}", provider_prefix(p), p.r#type)
}

/// The end of a release's checksum file name (`terraform-provider-TYPE_VERSION_SHA256SUMS`).
pub const SHASUMS_SUFFIX: &str = "_SHA256SUMS";
/// The end of its detached signature's name.
pub const SIGNATURE_SUFFIX: &str = "_SHA256SUMS.sig";
/// The end of its manifest's name (`{"metadata": {"protocol_versions": ["6.0"]}}`).
pub const RELEASE_MANIFEST_SUFFIX: &str = "_manifest.json";

/// The writes that invoke the puller (pull-through copies), as (prefix, suffix): infra's
/// second S3 notification (`local.pull_notifications`), and what the local registry's
/// embedded S3 hands to its puller. Disjoint from `NOTIFICATIONS`: the provider pull records
/// of the network mirror, and the module pull records of the modules pull-through.
pub const PULL_NOTIFICATIONS: [(&str, &str); 2] =
    [(UPSTREAM_PULLS_PREFIX, ".json"), (UPSTREAM_MODULES_PREFIX, UPSTREAM_MODULE_PULL_SUFFIX)];

/// Whether a write of `key` invokes the puller.
pub fn notifies_puller(key: &str) -> bool {
    PULL_NOTIFICATIONS.iter().any(|(prefix, suffix)| key.starts_with(prefix) && key.ends_with(suffix))
}

/// Where the mirror keeps an upstream provider's version list.
pub fn upstream_versions(p: &ProviderAddress) -> String {
    format!("{UPSTREAM_VERSIONS_PREFIX}{}/{}/{}/{PROVIDER_INDEX_FILE}", p.hostname, p.namespace, p.r#type)
}

/// Where the mirror records an upstream release to copy.
pub fn upstream_pull(p: &ProviderAddress, version: &semver::Version) -> String {
    format!("{UPSTREAM_PULLS_PREFIX}{}/{}/{}/{version}.json", p.hostname, p.namespace, p.r#type)
}

/// Where an upstream module's keys start: `upstream-modules/HOST/NS/NAME/SYSTEM/`.
pub fn upstream_module_prefix(m: &UpstreamModule) -> String {
    format!("{UPSTREAM_MODULES_PREFIX}{}/{}/", m.hostname, m.module)
}

/// An upstream module's versions: the upstream's list as last fetched, and every version
/// copied (`upstream::module_records::ModuleIndex`).
pub fn upstream_module_index(m: &UpstreamModule) -> String {
    format!("{}index.json", upstream_module_prefix(m))
}

/// A copied version's pin: the SHA-256 of the first copy, written once (`If-None-Match: *`).
pub fn upstream_module_pin(m: &UpstreamModule, version: &semver::Version) -> String {
    format!("{}{version}{UPSTREAM_MODULE_PIN_SUFFIX}", upstream_module_prefix(m))
}

/// A copied archive, named by its SHA-256, so two copies of different bytes never overwrite
/// each other: only the one the pin names is served.
pub fn upstream_module_archive(m: &UpstreamModule, version: &semver::Version, sha256: &str, extension: &str) -> String {
    format!("{}{version}/{sha256}.{extension}", upstream_module_prefix(m))
}

/// Bytes fetched for a pinned version that differ from the pin (a moved tag): the record of
/// the refusal, one per SHA-256 refused.
pub fn upstream_module_refusal(m: &UpstreamModule, version: &semver::Version, sha256: &str) -> String {
    format!("{}{version}/{sha256}{UPSTREAM_MODULE_REFUSAL_SUFFIX}", upstream_module_prefix(m))
}

/// A version too large to copy while the CLI waits, handed to the puller: its write invokes
/// the puller (`PULL_NOTIFICATIONS`).
pub fn upstream_module_pull(m: &UpstreamModule, version: &semver::Version) -> String {
    format!("{}{version}{UPSTREAM_MODULE_PULL_SUFFIX}", upstream_module_prefix(m))
}

/// The pins the indexer keeps of an upstream module for its page, as it logged them:
/// `indexed/upstream-modules/HOST/NS/NAME/SYSTEM/pins.json` (`upstream::module_records::ModulePins`).
pub fn upstream_module_pins(m: &UpstreamModule) -> String {
    format!("{INDEXED_PREFIX}{}pins.json", upstream_module_prefix(m))
}

/// Why the puller could not copy a version a pull record named.
pub fn upstream_module_pull_failure(m: &UpstreamModule, version: &semver::Version) -> String {
    format!("{}{version}{UPSTREAM_MODULE_PULL_FAILURE_SUFFIX}", upstream_module_prefix(m))
}

/// The module and version a module pull record's key names (`None` for any other key).
pub fn upstream_module_pull_release(key: &str) -> Option<(UpstreamModule, semver::Version)> {
    let [host, namespace, name, system, file] = split5(key.strip_prefix(UPSTREAM_MODULES_PREFIX)?)?;
    let module = UpstreamModule::parse(host, namespace, name, system).ok()?;
    let version = crate::address::parse_version(file.strip_suffix(UPSTREAM_MODULE_PULL_SUFFIX)?).ok()?;
    (upstream_module_pull(&module, &version) == key).then_some((module, version))
}

/// What a key of the modules pull-through that the indexer is told about records.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum UpstreamModuleRecord {
    /// A version's pin (`…/VERSION.pin.json`).
    Pin(UpstreamModule, semver::Version),
    /// Bytes refused for differing from the pin (`…/VERSION/SHA256.refused.json`).
    Refusal(UpstreamModule, semver::Version, String),
}

/// The pin or refusal record `key` names, by the layout's own names (`None` for any other key).
pub fn upstream_module_record(key: &str) -> Option<UpstreamModuleRecord> {
    let parts: Vec<&str> = key.strip_prefix(UPSTREAM_MODULES_PREFIX)?.split('/').collect();
    let module = |p: &[&str]| UpstreamModule::parse(p[0], p[1], p[2], p[3]).ok();
    match parts[..] {
        [_, _, _, _, file] => {
            let version = crate::address::parse_version(file.strip_suffix(UPSTREAM_MODULE_PIN_SUFFIX)?).ok()?;
            let m = module(&parts)?;
            (upstream_module_pin(&m, &version) == key).then_some(UpstreamModuleRecord::Pin(m, version))
        }
        [_, _, _, _, version, file] => {
            let sha256 = file.strip_suffix(UPSTREAM_MODULE_REFUSAL_SUFFIX)?;
            let version = crate::address::parse_version(version).ok()?;
            let m = module(&parts)?;
            let hex = sha256.len() == 64 && sha256.bytes().all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b));
            (hex && upstream_module_refusal(&m, &version, sha256) == key)
                .then(|| UpstreamModuleRecord::Refusal(m, version, sha256.to_string()))
        }
        _ => None,
    }
}

/// The module, version and SHA-256 of an upstream module archive's key (`None` for any other
/// key): what the presign check compares with the request.
pub fn upstream_module_archive_parts(key: &str) -> Option<(UpstreamModule, semver::Version, &str)> {
    let rest = key.strip_prefix(UPSTREAM_MODULES_PREFIX)?;
    let mut parts = rest.split('/');
    let (host, namespace, name, system, version, file) =
        (parts.next()?, parts.next()?, parts.next()?, parts.next()?, parts.next()?, parts.next()?);
    if parts.next().is_some() {
        return None;
    }
    let module = UpstreamModule::parse(host, namespace, name, system).ok()?;
    let version = crate::address::parse_version(version).ok()?;
    let sha256 = file.strip_suffix(".tar.gz").or_else(|| file.strip_suffix(".zip"))?;
    let hex = sha256.len() == 64 && sha256.bytes().all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b));
    hex.then_some((module, version, sha256))
}

/// The provider and version a pull record's key names (`None` for any other key).
pub fn upstream_pull_release(key: &str) -> Option<(ProviderAddress, semver::Version)> {
    let [hostname, namespace, r#type, file] = split4(key.strip_prefix(UPSTREAM_PULLS_PREFIX)?)?;
    let provider = ProviderAddress::parse(hostname, namespace, r#type).ok()?;
    let version = crate::address::parse_version(file.strip_suffix(".json")?).ok()?;
    Some((provider, version))
}

/// Whether a write or delete of `key` invokes the indexer (in AWS through S3 notifications,
/// locally through the embedded S3).
pub fn notifies(key: &str) -> bool {
    NOTIFICATIONS.iter().any(|(prefix, suffix)| key.starts_with(prefix) && key.ends_with(suffix))
}

/// Module archive formats, by the extension go-getter uses to pick its decompressor.
/// Longest first so `.tar.gz` is not mistaken for something ending in `.gz`.
pub const MODULE_ARCHIVE_EXTENSIONS: [&str; 3] = ["tar.gz", "tgz", "zip"];

/// Where a module's archives are uploaded.
pub fn module_prefix(m: &ModuleAddress) -> String {
    format!("{MODULES_PREFIX}{}/{}/{}/", m.namespace, m.name, m.system)
}

/// Where the indexer keeps a module's manifest.
pub fn module_manifest(m: &ModuleAddress) -> String {
    format!("{INDEXED_PREFIX}{}{MODULE_MANIFEST_FILE}", module_prefix(m))
}

/// The folder, beside a module's manifest, of its versions' docs (`VERSION.json` each).
pub const MODULE_DOCS_DIR: &str = "docs/";

/// Where the indexer keeps the documentation of one version of a module (`module_docs`).
pub fn module_docs(m: &ModuleAddress, version: &semver::Version) -> String {
    format!("{INDEXED_PREFIX}{}{MODULE_DOCS_DIR}{version}.json", module_prefix(m))
}

/// Where the catalog's parts are (`catalog`): every module and provider served, kept by the
/// indexer, listed and searched by the web function.
pub const CATALOG_PREFIX: &str = "indexed/catalog/";

/// The catalog's index: each namespace and how many modules of each system it holds.
pub const CATALOG_INDEX: &str = "indexed/catalog/index.json";

/// Where the catalog's module shards are, one per namespace.
pub const CATALOG_SHARDS_PREFIX: &str = "indexed/catalog/modules/";

/// One namespace's modules in the catalog.
pub fn catalog_shard(namespace: &str) -> String {
    format!("{CATALOG_SHARDS_PREFIX}{namespace}.json")
}

/// The namespace a catalog shard's key names (`None`: not a shard's key, or not a namespace
/// by the address grammar: a stray object there is not a shard).
pub fn catalog_shard_namespace(key: &str) -> Option<&str> {
    let namespace = key.strip_prefix(CATALOG_SHARDS_PREFIX)?.strip_suffix(".json")?;
    ModuleAddress::parse(namespace, "any", "any").is_ok().then_some(namespace)
}

/// Where a pass that changed a namespace's counts marks it, so that whichever pass next writes
/// the index counts it too (`index::catalog`: one index write serves many new modules).
pub const CATALOG_DIRTY_PREFIX: &str = "indexed/catalog/dirty/";

/// The mark of a namespace whose counts the index may not have yet.
pub fn catalog_dirty(namespace: &str) -> String {
    format!("{CATALOG_DIRTY_PREFIX}{namespace}")
}

/// The catalog's providers.
pub const CATALOG_PROVIDERS: &str = "indexed/catalog/providers.json";

/// The catalog's upstream modules copied here.
pub const CATALOG_UPSTREAM_MODULES: &str = "indexed/catalog/upstream-modules.json";

/// The catalog as one document (format 1, before it was sharded): read only for the upstream
/// modules it held, never written.
pub const LEGACY_CATALOG: &str = "indexed/catalog.json";

/// Where a provider's zips are uploaded.
pub fn provider_prefix(p: &ProviderAddress) -> String {
    format!("{PROVIDERS_PREFIX}{}/{}/{}/", p.hostname, p.namespace, p.r#type)
}

/// The common beginning of the keys of one version's zips of a provider
/// (`providers/H/NS/TYPE/terraform-provider-TYPE_VERSION_`): the version's `_` after it keeps
/// `1.0.0` from matching `1.0.0-rc.1`.
pub fn provider_version_prefix(p: &ProviderAddress, version: &semver::Version) -> String {
    format!("{}terraform-provider-{}_{version}_", provider_prefix(p), p.r#type)
}

/// Where a namespace's public signing keys are uploaded: `signing-keys/HOSTNAME/NAMESPACE/`.
pub fn signing_keys_prefix(p: &ProviderAddress) -> String {
    format!("{SIGNING_KEYS_PREFIX}{}/{}/", p.hostname, p.namespace)
}

/// The name of one of a release's files (`terraform-provider-TYPE_VERSION_SHA256SUMS`, …).
pub fn provider_release_file_name(p: &ProviderAddress, version: &semver::Version, file: ReleaseFile) -> String {
    format!("terraform-provider-{}_{version}{}", p.r#type, file.suffix())
}

/// Where the indexer keeps a provider's mirror documents.
pub fn provider_documents_prefix(p: &ProviderAddress) -> String {
    format!("{INDEXED_PREFIX}{}", provider_prefix(p))
}

/// Where the indexer keeps a provider's OCI artifacts (`indexed/oci/providers/H/NS/TYPE/`).
pub fn oci_provider_prefix(p: &ProviderAddress) -> String {
    format!("{OCI_PREFIX}{}", provider_prefix(p))
}

/// Where the indexer keeps a module's OCI artifacts (`indexed/oci/modules/NS/NAME/SYSTEM/`).
pub fn oci_module_prefix(m: &ModuleAddress) -> String {
    format!("{OCI_PREFIX}{}", module_prefix(m))
}

/// A module version's package manifest, under its tag (a version, `+` written `_`).
pub fn oci_module_tag(m: &ModuleAddress, tag: &str) -> String {
    format!("{}tags/{tag}", oci_module_prefix(m))
}

/// A module repository's manifest by its digest (`sha256:HEX`): its exact bytes.
pub fn oci_module_manifest(m: &ModuleAddress, digest: &str) -> String {
    format!("{}manifests/{}", oci_module_prefix(m), digest.replacen(':', "/", 1))
}

/// A module repository's blob by its digest: where its bytes are (`OciBlob`).
pub fn oci_module_blob(m: &ModuleAddress, digest: &str) -> String {
    format!("{}blobs/{}.json", oci_module_prefix(m), digest.replacen(':', "/", 1))
}

/// The zip the indexer made of a `.tar.gz` module archive, by its SHA-256 (hex).
pub fn oci_module_zip(m: &ModuleAddress, sha256: &str) -> String {
    format!("{}zips/{sha256}.zip", oci_module_prefix(m))
}

/// A manifest of a provider's OCI repository, by its digest (`sha256:HEX`): its exact bytes.
pub fn oci_manifest(p: &ProviderAddress, digest: &str) -> String {
    format!("{}manifests/{}", oci_provider_prefix(p), digest.replacen(':', "/", 1))
}

/// A blob of a provider's OCI repository, by its digest: where its bytes are (`OciBlob`).
pub fn oci_blob(p: &ProviderAddress, digest: &str) -> String {
    format!("{}blobs/{}.json", oci_provider_prefix(p), digest.replacen(':', "/", 1))
}

/// Where the indexer keeps a provider's `index.json`.
pub fn provider_index(p: &ProviderAddress) -> String {
    format!("{}{PROVIDER_INDEX_FILE}", provider_documents_prefix(p))
}

/// Where the indexer keeps a provider version's `VERSION.json`.
pub fn provider_version(p: &ProviderAddress, version: &semver::Version) -> String {
    format!("{}{version}.json", provider_documents_prefix(p))
}

/// Where the indexer explains why it did not index the upload at `key`.
pub fn rejection(key: &str) -> String {
    format!("{REJECTIONS_PREFIX}{key}.json")
}

/// The publish log (`publish_log`): hash-chained entries, one object each, under the
/// indexer's prefix (no notification, no read function and no publisher reaches it). One
/// chain per namespace of uploads (`publish_log_chain`), so that publishes in different
/// namespaces never contend for the next entry.
pub const PUBLISH_LOG_PREFIX: &str = "indexed/log/";
/// Where the chains are: `indexed/log/chains/CHAIN/entries/000000000001.json`, … and
/// `indexed/log/chains/CHAIN/head.json`.
pub const PUBLISH_LOG_CHAINS: &str = "indexed/log/chains/";
/// The chain of every change made before the log had one chain per namespace (chain `""`):
/// its entries (`indexed/log/entries/…`) and head, audited, never appended to.
pub const PUBLISH_LOG_ENTRIES: &str = "indexed/log/entries/";
/// The head of the chain of before (`PUBLISH_LOG_ENTRIES`).
pub const PUBLISH_LOG_HEAD: &str = "indexed/log/head.json";

/// The chain a change to the upload `key` is logged in: its namespace, as the uploads are
/// laid out (`modules/NAMESPACE`, `providers/HOSTNAME/NAMESPACE`,
/// `upstream-modules/HOSTNAME/NAMESPACE`); `other` for a key whose namespace or hostname is
/// not valid, so that no upload key can name a path of its own.
pub fn publish_log_chain(key: &str) -> String {
    let segments: Vec<&str> = key.split('/').collect();
    let chain = match segments.as_slice() {
        ["modules", namespace, _, ..] if ModuleAddress::parse(namespace, "any", "any").is_ok() => {
            Some(format!("modules/{namespace}"))
        }
        ["providers", hostname, namespace, _, ..] if ProviderAddress::parse(hostname, namespace, "any").is_ok() => {
            Some(format!("providers/{hostname}/{namespace}"))
        }
        ["upstream-modules", hostname, namespace, _, ..]
            if UpstreamModule::parse(hostname, namespace, "any", "any").is_ok() =>
        {
            Some(format!("upstream-modules/{hostname}/{namespace}"))
        }
        _ => None,
    };
    chain.unwrap_or_else(|| "other".to_string())
}

fn publish_log_chain_prefix(chain: &str) -> String {
    if chain.is_empty() { PUBLISH_LOG_PREFIX.to_string() } else { format!("{PUBLISH_LOG_CHAINS}{chain}/") }
}

/// The key of entry `seq` of `chain` (zero-padded, so keys list in sequence order; chain
/// `""`: the chain of before).
pub fn publish_log_entry(chain: &str, seq: u64) -> String {
    format!("{}entries/{seq:012}.json", publish_log_chain_prefix(chain))
}

/// The head of `chain`: the sequence number and hash of its last entry.
pub fn publish_log_head(chain: &str) -> String {
    format!("{}head.json", publish_log_chain_prefix(chain))
}

/// Whether `chain` is a name `publish_log_chain` gives (`""`, the chain of before, is not).
pub fn is_publish_log_chain(chain: &str) -> bool {
    chain == "other" || (chain.split('/').count() <= 3 && publish_log_chain(&format!("{chain}/x/y/z")) == chain)
}

/// The chain and sequence number a publish log entry key names: only a key that
/// `publish_log_entry` gives for a chain `publish_log_chain` gives (or the chain of before).
pub fn publish_log_seq(key: &str) -> Option<(String, u64)> {
    let rest = key.strip_prefix(PUBLISH_LOG_PREFIX)?;
    let (chain, file) = match rest.strip_prefix("chains/") {
        Some(chained) => chained.rsplit_once("/entries/")?,
        None => ("", rest.strip_prefix("entries/")?),
    };
    let digits = file.strip_suffix(".json")?;
    let seq: u64 =
        (digits.len() == 12 && digits.bytes().all(|b| b.is_ascii_digit())).then(|| digits.parse().ok())??;
    let named = chain.is_empty() || is_publish_log_chain(chain);
    (named && publish_log_entry(chain, seq) == key).then(|| (chain.to_string(), seq))
}

/// The chain whose head `key` is (`""`: the chain of before), if it is one.
pub fn publish_log_head_chain(key: &str) -> Option<&str> {
    if key == PUBLISH_LOG_HEAD {
        return Some("");
    }
    let chain = key.strip_prefix(PUBLISH_LOG_CHAINS)?.strip_suffix("/head.json")?;
    is_publish_log_chain(chain).then_some(chain)
}

/// The prefix of the rejection records for uploads under `prefix`.
pub fn rejections_under(prefix: &str) -> String {
    format!("{REJECTIONS_PREFIX}{prefix}")
}

/// The upload a rejection record is about.
pub fn rejected_key(rejection_key: &str) -> Option<&str> {
    rejection_key.strip_prefix(REJECTIONS_PREFIX)?.strip_suffix(".json")
}

/// For a key under `modules/` or `providers/` that the registry does not index, what it
/// expects there instead (the reason in its rejection record). `None` for other prefixes.
pub fn expected_name(key: &str) -> Option<String> {
    let key_text = crate::address::printable(key);
    if key.starts_with(MODULES_PREFIX) && key.ends_with(&format!("/{MODULE_MANIFEST_FILE}")) {
        Some(format!(
            "{key_text:?} is not read: module manifests live under {INDEXED_PREFIX} and only the indexer writes them \
             (a manifest.json left here by an older version of the registry can be deleted)"
        ))
    } else if key.starts_with(MODULES_PREFIX) {
        Some(format!(
            "{key_text:?} is not a module archive name: the registry indexes modules/NAMESPACE/NAME/SYSTEM/VERSION.tar.gz \
             (or .tgz, .zip), with VERSION in SemVer form such as 1.2.0 (no leading v), NAMESPACE and NAME of letters, \
             digits, '-' and '_', SYSTEM of lower-case letters and digits"
        ))
    } else if key.starts_with(PROVIDERS_PREFIX) {
        Some(format!(
            "{key_text:?} is not a provider package name: the registry indexes \
             providers/HOSTNAME/NAMESPACE/TYPE/terraform-provider-TYPE_VERSION_OS_ARCH.zip (and, for a signed release, \
             terraform-provider-TYPE_VERSION_SHA256SUMS, _SHA256SUMS.sig and _manifest.json), with VERSION in SemVer \
             form (no leading v) and HOSTNAME the provider's lower-case origin host"
        ))
    } else {
        None
    }
}

/// The file name `terraform providers mirror` (and every provider release) uses.
pub fn provider_archive_name(p: &ProviderAddress, version: &semver::Version, platform: &Platform) -> String {
    format!("terraform-provider-{}_{version}_{}_{}.zip", p.r#type, platform.os, platform.arch)
}

/// An operating system and architecture a provider package is built for.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Platform {
    /// `linux`, `darwin`, `windows`, …
    pub os: String,
    /// `amd64`, `arm64`, …
    pub arch: String,
}

impl Platform {
    /// An OS and architecture as the CLI names them: lower-case letters and digits, at most 32.
    pub fn parse(os: &str, arch: &str) -> Result<Platform, Error> {
        let ok =
            |s: &str| !s.is_empty() && s.len() <= 32 && s.bytes().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit());
        if ok(os) && ok(arch) {
            Ok(Platform { os: os.into(), arch: arch.into() })
        } else {
            Err(Error::BadRequest(format!(
                "invalid platform {:?}_{:?}: OS and architecture are lower-case letters and digits",
                crate::address::printable(os),
                crate::address::printable(arch)
            )))
        }
    }

    /// `linux_amd64`, the key of the `archives` map in `VERSION.json`.
    pub fn key(&self) -> String {
        format!("{}_{}", self.os, self.arch)
    }
}

/// `linux_amd64`, as `key` spells it (in not-found messages).
impl std::fmt::Display for Platform {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}_{}", self.os, self.arch)
    }
}

/// A signed release's files besides its zips.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum ReleaseFile {
    /// `…_SHA256SUMS`: the SHA-256 of every zip.
    Shasums,
    /// `…_SHA256SUMS.sig`: a binary detached OpenPGP signature of it.
    Signature,
    /// `…_manifest.json`: the plugin protocol versions.
    Manifest,
}

impl ReleaseFile {
    /// The end of the file's name, after `terraform-provider-TYPE_VERSION`.
    pub fn suffix(self) -> &'static str {
        match self {
            ReleaseFile::Shasums => SHASUMS_SUFFIX,
            ReleaseFile::Signature => SIGNATURE_SUFFIX,
            ReleaseFile::Manifest => RELEASE_MANIFEST_SUFFIX,
        }
    }
}

/// The four segments of `rest`, if it has exactly four.
fn split4(rest: &str) -> Option<[&str; 4]> {
    split_exactly(rest)
}

fn split5(rest: &str) -> Option<[&str; 5]> {
    split_exactly(rest)
}

/// `rest`'s `/`-separated segments, if there are exactly `N`.
fn split_exactly<const N: usize>(rest: &str) -> Option<[&str; N]> {
    let mut it = rest.split('/');
    let mut parts = [""; N];
    for part in &mut parts {
        *part = it.next()?;
    }
    it.next().is_none().then_some(parts)
}

#[cfg(test)]
mod tests;
