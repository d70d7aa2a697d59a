//! Who may do what in the embedded S3, decided as the principals' IAM policies in infra/ decide
//! in AWS, from nothing but what s3s verified: the access key of a signature it checked, and
//! the keys of the request as it parsed them, which are the keys s3s-fs then stores.
//!
//! s3s calls this hook (its `S3Access`) for every operation, after the signature check and
//! before the operation runs; per-operation hooks see the parsed input where a key is not in
//! the path (CopyObject's source, DeleteObjects' keys, a POST upload's form, a listing's
//! prefix). It fails closed: an unsigned request, a key no principal owns, an operation not
//! listed for a limited principal, and Signature Version 2 are all refused.
//!
//! - **Signature Version 2** (`Authorization: AWS KEY:SIG`, `?Signature=` URLs, POST forms with
//!   `signature`): S3 refuses it for every bucket created since June 2020, as a deployed
//!   registry's is, so here too, whoever signs.
//! - **Keys S3 stores literally and a file system resolves** (empty, `.` or `..` segments, a
//!   leading `/`, backslashes): refused for every principal, before any rights check. In S3
//!   `modules/../signing-keys/k` is one literal key under `modules/`; s3s-fs would store it as
//!   `signing-keys/k`, so allowing it would let the stand-in grant what S3 never does.
//! - **Rights**: the registry's and the functions' keys may do everything (one process holds
//!   the readers, the indexer and the token command). The publisher writes and deletes under
//!   `layout::PUBLISHER_PREFIXES`, reads those and their rejection records, and lists only
//!   there; the key admin writes, deletes and reads under `layout::KEY_ADMIN_PREFIXES`. Neither
//!   reads the token store, writes the indexer's prefixes, nor does anything to the bucket.
//!
//! The hook also tells the server around s3s (`embedded_s3`) what it verified, through a
//! [`Verified`] the server puts in the request's extensions: the principal (for the publish
//! log), the keys S3 would notify about once the request succeeds, and the key locks it holds.

use std::sync::{Arc, Mutex};

use http::HeaderMap;
use s3s::access::{S3Access, S3AccessContext};
use s3s::dto::{
    CopyObjectInput, CopySource, DeleteObjectsInput, ListObjectsInput, ListObjectsV2Input, PostObjectInput,
    UploadPartCopyInput,
};
use s3s::path::S3Path;
use s3s::{S3Error, S3ErrorCode, S3Request, S3Result};

use crate::key_locks::{KeyGuard, KeyLocks};
use registry::layout;

/// Access key the registry (and its indexer) sign with; publishers use another one.
pub const REGISTRY_ACCESS_KEY: &str = "registry-local";
/// Access key written to `local.env` for publishers (`aws s3 cp`, SDKs).
pub const PUBLISHER_ACCESS_KEY: &str = "publisher-local";
/// Access key written to `local.env` for key admins (`KEY_ADMIN_ACCESS_KEY_ID`): the only one
/// that may write `signing-keys/`.
pub const KEY_ADMIN_ACCESS_KEY: &str = "key-admin-local";
/// Access key for the Lambda binaries run against the embedded S3 (`make lambda-test`), with
/// the functions' rights: what the registry's own key may do. Its secret is in
/// `DATA_DIR/functions.secret`.
pub const FUNCTIONS_ACCESS_KEY: &str = "functions-local";
/// Access key the local usage function signs with: the usage role's rights, `usage/` alone
/// (read, write, list), as infra's IAM gives it. Its secret never leaves the process.
pub const USAGE_ACCESS_KEY: &str = "usage-local";

/// Whoever signed a request, as s3s verified it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Principal {
    Registry,
    Functions,
    Publisher,
    KeyAdmin,
    Usage,
}

impl Principal {
    /// The principal of a verified access key; `None` for a key none of them holds.
    pub fn of(access_key: &str) -> Option<Principal> {
        match access_key {
            REGISTRY_ACCESS_KEY => Some(Principal::Registry),
            FUNCTIONS_ACCESS_KEY => Some(Principal::Functions),
            PUBLISHER_ACCESS_KEY => Some(Principal::Publisher),
            KEY_ADMIN_ACCESS_KEY => Some(Principal::KeyAdmin),
            USAGE_ACCESS_KEY => Some(Principal::Usage),
            _ => None,
        }
    }

    pub fn access_key(self) -> &'static str {
        match self {
            Principal::Registry => REGISTRY_ACCESS_KEY,
            Principal::Functions => FUNCTIONS_ACCESS_KEY,
            Principal::Publisher => PUBLISHER_ACCESS_KEY,
            Principal::KeyAdmin => KEY_ADMIN_ACCESS_KEY,
            Principal::Usage => USAGE_ACCESS_KEY,
        }
    }

    fn name(self) -> &'static str {
        match self {
            Principal::Registry => "registry",
            Principal::Functions => "functions",
            Principal::Publisher => "publisher",
            Principal::KeyAdmin => "key admin",
            Principal::Usage => "usage function",
        }
    }

    /// Where a limited principal writes; `None` for the registry's own keys, which IAM does
    /// not limit here.
    fn prefixes(self) -> Option<&'static [&'static str]> {
        match self {
            Principal::Registry | Principal::Functions => None,
            Principal::Publisher => Some(&layout::PUBLISHER_PREFIXES),
            Principal::KeyAdmin => Some(&layout::KEY_ADMIN_PREFIXES),
            Principal::Usage => Some(&[layout::USAGE_PREFIX]),
        }
    }

    fn may_write(self, key: &str) -> bool {
        self.prefixes().is_none_or(|prefixes| prefixes.iter().any(|p| key.starts_with(p)))
    }

    /// Its own prefixes, and for the publisher the rejection records of its uploads and the
    /// public signing keys its releases verify with (the `ReadOwnUploads`, `ReadRejections`
    /// and `ReadSigningKeys` statements of its policy).
    fn may_read(self, key: &str) -> bool {
        let rejection_of_own = || {
            self == Principal::Publisher
                && key.strip_prefix(layout::REJECTIONS_PREFIX).is_some_and(|upload| self.may_write(upload))
        };
        let signing_key = || self == Principal::Publisher && key.starts_with(layout::SIGNING_KEYS_PREFIX);
        self.may_write(key) || rejection_of_own() || signing_key()
    }

    /// A listing under `prefix`: only where it may read (`s3:prefix` in its policy).
    fn may_list(self, prefix: Option<&str>) -> bool {
        self.prefixes().is_none() || prefix.is_some_and(|p| self.may_read(p))
    }

    /// Abandoning a multipart upload (`s3:AbortMultipartUpload`): the publisher's policy has
    /// it, the key admin's does not.
    fn may_abort(self, key: &str) -> bool {
        !matches!(self, Principal::KeyAdmin | Principal::Usage) && self.may_write(key)
    }
}

/// What the rights check verified of one request, for the server around s3s.
#[derive(Default)]
pub struct Verified {
    state: Mutex<VerifiedState>,
}

#[derive(Default)]
struct VerifiedState {
    principal: Option<Principal>,
    notified: Vec<String>,
    guards: Vec<KeyGuard>,
}

impl Verified {
    fn with<T>(&self, f: impl FnOnce(&mut VerifiedState) -> T) -> T {
        f(&mut self.state.lock().unwrap_or_else(|p| p.into_inner()))
    }

    /// Who signed the request, once s3s verified the signature.
    pub fn principal(&self) -> Option<Principal> {
        self.with(|s| s.principal)
    }

    /// The keys S3 notifies about once the request succeeds: a PUT, a POST upload, a copy's
    /// destination, a completed multipart upload, a DELETE, each key of a DeleteObjects.
    pub fn notified(&self) -> Vec<String> {
        self.with(|s| s.notified.clone())
    }

    /// Releases the key locks (once s3s-fs has answered).
    pub fn release(&self) {
        drop(self.with(|s| std::mem::take(&mut s.guards)));
    }
}

/// The hook itself: the bucket it guards, and the key locks it takes for what it allowed.
pub struct BucketRights {
    bucket: String,
    locks: Arc<KeyLocks>,
}

/// What an object operation does to its key (the path's), by the IAM action it needs.
enum ObjectAccess {
    /// `s3:GetObject`, under a shared lock.
    Read,
    /// `s3:PutObject` or `s3:DeleteObject` replacing or removing the object: exclusive lock,
    /// notified.
    Replace,
    /// `s3:PutObject` that leaves the object as it is until completed (parts, a copy whose
    /// hook locks source and destination together).
    Prepare,
    /// `s3:AbortMultipartUpload`.
    Abort,
}

fn object_access(operation: &str) -> Option<ObjectAccess> {
    Some(match operation {
        "GetObject" | "HeadObject" => ObjectAccess::Read,
        "PutObject" | "DeleteObject" | "CompleteMultipartUpload" => ObjectAccess::Replace,
        "CreateMultipartUpload" | "UploadPart" | "CopyObject" | "UploadPartCopy" => ObjectAccess::Prepare,
        "AbortMultipartUpload" => ObjectAccess::Abort,
        _ => return None,
    })
}

/// Bucket operations a limited principal may ask for; each is checked by its own hook below.
const LIMITED_BUCKET_OPERATIONS: [&str; 4] = ["ListObjects", "ListObjectsV2", "DeleteObjects", "PostObject"];

impl BucketRights {
    pub fn new(bucket: &str, locks: Arc<KeyLocks>) -> Self {
        BucketRights { bucket: bucket.to_string(), locks }
    }

    /// A limited principal works only in the registry's bucket.
    fn own_bucket(&self, principal: Principal, bucket: &str, what: &str) -> S3Result<()> {
        match principal.prefixes() {
            Some(_) if bucket != self.bucket => Err(denied(principal, &format!("{what} in bucket {bucket}"))),
            _ => Ok(()),
        }
    }

    async fn object(
        &self,
        verified: &Verified,
        principal: Principal,
        operation: &str,
        bucket: &str,
        key: &str,
    ) -> S3Result<()> {
        self.own_bucket(principal, bucket, operation)?;
        literal_key(key)?;
        let allowed = match object_access(operation) {
            Some(ObjectAccess::Read) => principal.may_read(key),
            Some(ObjectAccess::Replace | ObjectAccess::Prepare) => principal.may_write(key),
            Some(ObjectAccess::Abort) => principal.may_abort(key),
            None => principal.prefixes().is_none(),
        };
        if !allowed {
            return Err(denied(principal, &format!("{operation} on {key}")));
        }
        let guards = match object_access(operation) {
            Some(ObjectAccess::Read) => self.locks.lock(&[key], &[]).await,
            Some(ObjectAccess::Replace) => self.locks.lock(&[], &[key]).await,
            _ => Vec::new(),
        };
        let notified = matches!(object_access(operation), Some(ObjectAccess::Replace)).then(|| key.to_string());
        verified.with(|s| {
            s.guards.extend(guards);
            s.notified.extend(notified);
        });
        Ok(())
    }

    /// A copy's source (CopyObject, UploadPartCopy): a literal key of this bucket, readable
    /// by the principal.
    fn source(&self, principal: Principal, source: &CopySource) -> S3Result<String> {
        let CopySource::Bucket { bucket, key, .. } = source else {
            return Err(denied(principal, "copy from an access point"));
        };
        literal_key(key)?;
        if **bucket != *self.bucket || !principal.may_read(key) {
            return Err(denied(principal, &format!("GetObject on {bucket}/{key} (the copy's source)")));
        }
        Ok(key.to_string())
    }
}

#[async_trait::async_trait]
impl S3Access for BucketRights {
    async fn check(&self, cx: &mut S3AccessContext<'_>) -> S3Result<()> {
        let verified = verified_of(cx.extensions_mut())?;
        refuse_signature_v2(cx.headers(), cx.uri())?;
        let principal = principal_of(cx.credentials().map(|c| c.access_key.as_str()))?;
        verified.with(|s| s.principal = Some(principal));
        let operation = cx.s3_op().name();
        match cx.s3_path() {
            S3Path::Object { bucket, key } => self.object(&verified, principal, operation, bucket, key).await,
            S3Path::Bucket { bucket } => {
                self.own_bucket(principal, bucket, operation)?;
                match principal.prefixes() {
                    Some(_) if !LIMITED_BUCKET_OPERATIONS.contains(&operation) => {
                        Err(denied(principal, &format!("{operation} on the bucket")))
                    }
                    _ => Ok(()),
                }
            }
            S3Path::Root if principal.prefixes().is_some() => Err(denied(principal, operation)),
            S3Path::Root => Ok(()),
        }
    }

    async fn copy_object(&self, req: &mut S3Request<CopyObjectInput>) -> S3Result<()> {
        let (verified, principal) = checked(req)?;
        let source = self.source(principal, &req.input.copy_source)?;
        let destination = req.input.key.as_str();
        let guards = self.locks.lock(&[source.as_str()], &[destination]).await;
        verified.with(|s| {
            s.guards.extend(guards);
            s.notified.push(destination.to_string());
        });
        Ok(())
    }

    async fn upload_part_copy(&self, req: &mut S3Request<UploadPartCopyInput>) -> S3Result<()> {
        let (verified, principal) = checked(req)?;
        let source = self.source(principal, &req.input.copy_source)?;
        let guards = self.locks.lock(&[source.as_str()], &[]).await;
        verified.with(|s| s.guards.extend(guards));
        Ok(())
    }

    async fn delete_objects(&self, req: &mut S3Request<DeleteObjectsInput>) -> S3Result<()> {
        let (verified, principal) = checked(req)?;
        let keys: Vec<&str> = req.input.delete.objects.iter().map(|o| o.key.as_str()).collect();
        for key in &keys {
            literal_key(key)?;
            if !principal.may_write(key) {
                return Err(denied(principal, &format!("DeleteObject on {key}")));
            }
        }
        let guards = self.locks.lock(&[], &keys).await;
        verified.with(|s| {
            s.guards.extend(guards);
            s.notified.extend(keys.iter().map(|k| k.to_string()));
        });
        Ok(())
    }

    /// A browser-form upload: its key is a form field, its signature may be Version 2 (which
    /// leaves no region, where every Version 4 signature names one).
    async fn post_object(&self, req: &mut S3Request<PostObjectInput>) -> S3Result<()> {
        let (verified, principal) = checked(req)?;
        if req.region.is_none() {
            return Err(signature_v2_refused());
        }
        let key = req.input.key.as_str();
        literal_key(key)?;
        // S3 puts the uploaded file's name there; s3s would store the placeholder as written,
        // under a key S3 would not use (and would not notify as S3 would).
        if key.contains("${filename}") {
            return Err(S3Error::with_message(
                S3ErrorCode::InvalidArgument,
                "the embedded S3 does not replace ${filename} in a POST form's key: name the key in full",
            ));
        }
        if !principal.may_write(key) {
            return Err(denied(principal, &format!("PutObject on {key}")));
        }
        let guards = self.locks.lock(&[], &[key]).await;
        verified.with(|s| {
            s.guards.extend(guards);
            s.notified.push(key.to_string());
        });
        Ok(())
    }

    async fn list_objects(&self, req: &mut S3Request<ListObjectsInput>) -> S3Result<()> {
        let (_, principal) = checked(req)?;
        listing(principal, req.input.prefix.as_deref())
    }

    async fn list_objects_v2(&self, req: &mut S3Request<ListObjectsV2Input>) -> S3Result<()> {
        let (_, principal) = checked(req)?;
        listing(principal, req.input.prefix.as_deref())
    }
}

fn listing(principal: Principal, prefix: Option<&str>) -> S3Result<()> {
    match principal.may_list(prefix) {
        true => Ok(()),
        false => Err(denied(principal, &format!("ListBucket with prefix {:?}", prefix.unwrap_or_default()))),
    }
}

/// The request's record and its principal, which `check` has already set for every request
/// that reaches an operation's hook.
fn checked<T>(req: &S3Request<T>) -> S3Result<(Arc<Verified>, Principal)> {
    let verified = verified_of(&req.extensions)?;
    let principal = principal_of(req.credentials.as_ref().map(|c| c.access_key.as_str()))?;
    Ok((verified, principal))
}

fn verified_of(extensions: &http::Extensions) -> S3Result<Arc<Verified>> {
    // Fail closed: without the server's record, nothing could be locked or notified.
    extensions.get::<Arc<Verified>>().cloned().ok_or_else(|| {
        S3Error::with_message(S3ErrorCode::InternalError, "the embedded S3 was called without its rights record")
    })
}

fn principal_of(access_key: Option<&str>) -> S3Result<Principal> {
    match access_key {
        None => Err(S3Error::with_message(
            S3ErrorCode::AccessDenied,
            "Access Denied: anonymous requests are refused; sign with one of the keys in local.env",
        )),
        Some(key) => Principal::of(key).ok_or_else(|| {
            S3Error::with_message(S3ErrorCode::AccessDenied, format!("Access Denied: no principal holds the key {key}"))
        }),
    }
}

/// S3's answer to a request IAM does not allow.
fn denied(principal: Principal, what: &str) -> S3Error {
    let who = principal.name();
    tracing::info!(who, what, "request denied, as the principal's policy in AWS would");
    S3Error::with_message(S3ErrorCode::AccessDenied, format!("Access Denied: the {who} may not {what}"))
}

/// Refuses Signature Version 2 as s3s recognises it: an `Authorization` header of the form
/// `AWS KEY:SIGNATURE`, or a `Signature` query parameter (names decoded as s3s decodes them).
fn refuse_signature_v2(headers: &HeaderMap, uri: &http::Uri) -> S3Result<()> {
    let header = headers
        .get_all(http::header::AUTHORIZATION)
        .iter()
        .any(|v| v.to_str().is_ok_and(|v| v.strip_prefix("AWS ").is_some_and(|rest| rest.contains(':'))));
    let query = uri.query().unwrap_or_default().split('&').any(|pair| {
        let name = pair.split('=').next().unwrap_or_default();
        registry::percent::decode_text(name, true).as_deref() == Some("Signature")
    });
    match header || query {
        true => Err(signature_v2_refused()),
        false => Ok(()),
    }
}

/// What S3 answers Signature Version 2 on a bucket created since June 2020.
fn signature_v2_refused() -> S3Error {
    S3Error::with_message(
        S3ErrorCode::InvalidRequest,
        "The authorization mechanism you have provided is not supported. Please use AWS4-HMAC-SHA256.",
    )
}

/// Why `key` is refused, for keys S3 stores literally but a file system would resolve to
/// another path; `None` for a key stored as it is written.
pub fn key_problem(key: &str) -> Option<&'static str> {
    if key.is_empty() {
        return Some("is empty");
    }
    if key.starts_with('/') {
        return Some("begins with '/'");
    }
    if key.contains('\\') {
        return Some("holds a backslash");
    }
    key.split('/').find_map(|segment| match segment {
        "" => Some("has an empty segment ('//' or a trailing '/')"),
        "." | ".." => Some("has a '.' or '..' segment"),
        _ => None,
    })
}

fn literal_key(key: &str) -> S3Result<()> {
    match key_problem(key) {
        None => Ok(()),
        Some(problem) => Err(S3Error::with_message(
            S3ErrorCode::InvalidArgument,
            format!(
                "the object key {key:?} {problem}: S3 stores such a key literally, the embedded S3's files would \
                 resolve it to another key, so it refuses it"
            ),
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_a_path_would_resolve_are_refused() {
        for key in ["modules/a/b/c/1.0.0.zip", "signing-keys/h/n/k.asc", "a.b/..c/c..", "x"] {
            assert_eq!(key_problem(key), None, "{key}");
        }
        for key in
            ["", "/modules/a", "modules/../signing-keys/k", "modules/./k", "modules//k", "modules/", "..", "a\\..\\b"]
        {
            assert!(key_problem(key).is_some(), "{key}");
        }
    }

    #[test]
    fn rights_follow_the_policies() {
        use Principal::*;
        assert!(Publisher.may_write("modules/acme/vpc/aws/1.0.0.tar.gz"));
        assert!(!Publisher.may_write("signing-keys/h/acme/k.asc") && Publisher.may_read("signing-keys/h/acme/k.asc"));
        assert!(Publisher.may_list(Some("signing-keys/h/acme/")));
        assert!(!Publisher.may_write("indexed/modules/acme/vpc/aws/manifest.json"));
        assert!(Publisher.may_read("rejections/modules/acme/vpc/aws/1.0.0.tar.gz.json"));
        assert!(!Publisher.may_read("rejections/other/x.json"));
        assert!(!Publisher.may_read("access/tokens.json"));
        assert!(!Publisher.may_read("indexed/modules/acme/vpc/aws/manifest.json"));
        assert!(KeyAdmin.may_write("signing-keys/h/acme/k.asc") && !KeyAdmin.may_write("modules/a"));
        assert!(!KeyAdmin.may_abort("signing-keys/h/acme/k.asc") && Publisher.may_abort("modules/a"));
        assert!(Publisher.may_list(Some("providers/registry.terraform.io/")) && !Publisher.may_list(None));
        assert!(!Publisher.may_list(Some("")) && !KeyAdmin.may_list(Some("access/")));
        assert!(Registry.may_list(None) && Registry.may_write("access/tokens.json"));
        assert_eq!(Principal::of("someone-else"), None);
        assert!(Usage.may_write("usage/modules/acme/vpc/aws.json") && Usage.may_read("usage/providers/h/n/t.json"));
        assert!(
            !Usage.may_write("indexed/modules/acme/vpc/aws/manifest.json") && !Usage.may_read("access/tokens.json")
        );
        assert!(Usage.may_list(Some("usage/")) && !Usage.may_list(Some("indexed/")) && !Usage.may_list(None));
    }

    #[test]
    fn signature_v2_is_recognised_as_s3s_recognises_it() {
        let uri = |s: &str| s.parse::<http::Uri>().unwrap();
        let mut v2 = HeaderMap::new();
        v2.insert(http::header::AUTHORIZATION, "AWS publisher-local:c2ln".parse().unwrap());
        assert!(refuse_signature_v2(&v2, &uri("/registry/k")).is_err());
        let mut v4 = HeaderMap::new();
        v4.insert(http::header::AUTHORIZATION, "AWS4-HMAC-SHA256 Credential=publisher-local/x".parse().unwrap());
        assert!(refuse_signature_v2(&v4, &uri("/registry/k")).is_ok());
        assert!(
            refuse_signature_v2(&HeaderMap::new(), &uri("/registry/k?AWSAccessKeyId=a&Expires=1&Signature=x")).is_err()
        );
        assert!(refuse_signature_v2(&HeaderMap::new(), &uri("/registry/k?Sig%6Eature=x")).is_err());
        assert!(refuse_signature_v2(&HeaderMap::new(), &uri("/registry/k?X-Amz-Signature=x")).is_ok());
    }
}
