//! ListObjectsV2 for the embedded S3, walking only the directories a prefix can match.
//!
//! s3s-fs 0.14 answers every ListObjectsV2 without a delimiter by walking the whole bucket
//! and filtering by prefix afterwards, so one listing of a version's platforms cost time in
//! proportion to everything ever published. In the concurrency proof each round's listings
//! got slower with the bucket (41 s rounds became 72 s once OCI artifacts added files), until
//! on a loaded CI machine 29 listings of one round timed out three times each (the storage
//! client's 2.5 s attempt timeout) and those provider versions went unindexed. S3 finds keys
//! by prefix in its index; here a listing reads only the directories whose path is a prefix
//! of the wanted one or starts with it, so its cost follows what it returns, as in S3.
//!
//! The answer is s3s-fs's own, field for field (the test compares the two): keys in order,
//! `start-after` and the continuation token (the last key answered) as resume points,
//! common prefixes for a delimiter, and `MaxKeys` counting keys and prefixes together.
//! s3s-fs keeps object metadata and temporary files outside the bucket's directory, so every
//! file under it is an object.

use std::collections::{BTreeSet, VecDeque};
use std::path::{Path, PathBuf};

use s3s::dto::{CommonPrefix, ListObjectsV2Input, ListObjectsV2Output, Object, Timestamp};
use s3s::{S3Result, s3_error};

/// One listed entry, ordered by its key or prefix as S3 orders them.
#[derive(PartialEq, Eq, PartialOrd, Ord)]
enum Entry {
    Key(String, u64, std::time::SystemTime),
    Prefix(String),
}

impl Entry {
    fn name(&self) -> &str {
        match self {
            Entry::Key(key, ..) | Entry::Prefix(key) => key,
        }
    }
}

/// ListObjectsV2 of the bucket whose directory is `bucket_dir`.
pub async fn list_objects_v2(bucket_dir: &Path, input: ListObjectsV2Input) -> S3Result<ListObjectsV2Output> {
    if !tokio::fs::try_exists(bucket_dir).await.unwrap_or(false) {
        return Err(s3_error!(NoSuchBucket));
    }
    let prefix = input.prefix.as_deref().unwrap_or("").trim_start_matches('/');
    let mut entries = matching(bucket_dir, prefix, input.delimiter.as_deref()).await?;
    let resume = match (input.continuation_token.as_deref(), input.start_after.as_deref()) {
        (Some(token), Some(after)) => Some(token.max(after)),
        (token, after) => token.or(after),
    };
    if let Some(resume) = resume {
        entries.retain(|e| e.name() > resume);
    }
    let max_keys = input.max_keys.unwrap_or(1000);
    let limit = usize::try_from(max_keys).unwrap_or(1000);
    let is_truncated = limit > 0 && entries.len() > limit;
    entries.truncate(limit);
    let next_continuation_token = is_truncated.then(|| entries.last().map(|e| e.name().to_owned())).flatten();
    let key_count = i32::try_from(entries.len()).map_err(|_| s3_error!(InternalError))?;
    let (mut contents, mut common_prefixes) = (Vec::new(), Vec::new());
    for entry in entries {
        match entry {
            Entry::Key(key, size, modified) => contents.push(Object {
                key: Some(key),
                last_modified: Some(Timestamp::from(modified)),
                size: Some(i64::try_from(size).map_err(|_| s3_error!(InternalError))?),
                ..Default::default()
            }),
            Entry::Prefix(prefix) => common_prefixes.push(CommonPrefix { prefix: Some(prefix) }),
        }
    }
    Ok(ListObjectsV2Output {
        key_count: Some(key_count),
        max_keys: Some(max_keys),
        is_truncated: Some(is_truncated),
        contents: (!contents.is_empty()).then_some(contents),
        common_prefixes: (!common_prefixes.is_empty()).then_some(common_prefixes),
        continuation_token: input.continuation_token,
        next_continuation_token,
        delimiter: input.delimiter,
        encoding_type: input.encoding_type,
        name: Some(input.bucket),
        prefix: input.prefix,
        start_after: input.start_after,
        ..Default::default()
    })
}

/// Every object under `bucket_dir` whose key starts with `prefix`, sorted, with the keys that
/// hold `delimiter` after the prefix folded into their common prefix.
///
/// An entry deleted while the walk reads it (a file or directory gone between reading its
/// directory and looking at it) is left out: S3 lists a key deleted during a listing or not,
/// and never fails the listing for it.
async fn matching(bucket_dir: &Path, prefix: &str, delimiter: Option<&str>) -> S3Result<Vec<Entry>> {
    let mut keys = Vec::new();
    let mut prefixes = BTreeSet::new();
    let mut dirs: VecDeque<(PathBuf, String)> = VecDeque::from([(bucket_dir.to_owned(), String::new())]);
    while let Some((dir, dir_key)) = dirs.pop_front() {
        let Some(mut files) = present(tokio::fs::read_dir(&dir).await)? else { continue };
        while let Some(file) = present(files.next_entry().await)?.flatten() {
            // A name that is not UTF-8 is no key s3s-fs could have written (it skips them too).
            let Some(name) = file.file_name().to_str().map(str::to_owned) else { continue };
            let key = format!("{dir_key}{name}");
            let Some(file_type) = present(file.file_type().await)? else { continue };
            if file_type.is_dir() {
                let below = format!("{key}/");
                if below.starts_with(prefix) || prefix.starts_with(&below) {
                    dirs.push_back((file.path(), below));
                }
                continue;
            }
            let Some(rest) = key.strip_prefix(prefix) else { continue };
            if let Some(at) = delimiter.filter(|d| !d.is_empty()).and_then(|d| rest.find(d).map(|at| at + d.len())) {
                prefixes.insert(format!("{prefix}{}", &rest[..at]));
                continue;
            }
            let Some(meta) = present(file.metadata().await)? else { continue };
            let modified = meta.modified().map_err(|e| s3_error!(e, InternalError))?;
            keys.push(Entry::Key(key, meta.len(), modified));
        }
    }
    keys.extend(prefixes.into_iter().map(Entry::Prefix));
    keys.sort_by(|a, b| a.name().cmp(b.name()));
    Ok(keys)
}

/// What a file system call on a listed entry found: `None` if the entry is gone (deleted since
/// its directory was read), an `InternalError` for any other failure.
fn present<T>(result: std::io::Result<T>) -> S3Result<Option<T>> {
    match result {
        Ok(found) => Ok(Some(found)),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(s3_error!(e, InternalError)),
    }
}

#[cfg(test)]
mod tests {
    use s3s::S3;

    use super::*;

    /// Every answer equals s3s-fs's for the same request, over prefixes that end inside a
    /// name, at a directory, past one, and paging by `MaxKeys`, `StartAfter` and token.
    #[tokio::test]
    async fn answers_as_s3s_fs_does() {
        let root = std::env::temp_dir().join(format!("object-listing-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&root);
        let keys = [
            "a.txt",
            "modules/acme/vpc/aws/1.0.0.tar.gz",
            "modules/acme/vpc/aws/1.1.0.tar.gz",
            "modules/acme/vpc2/aws/1.0.0.tar.gz",
            "modules/acme/vpcx.txt",
            "providers/example.com/acme/x/terraform-provider-x_1.0.0_linux_amd64.zip",
            "providers/example.com/acme/x/terraform-provider-x_1.0.0_darwin_arm64.zip",
            "providers/example.com/acme/x/terraform-provider-x_1.10.0_linux_amd64.zip",
            "providers/example.com/acme/x/1.0.0/SHA256SUMS",
        ];
        for key in keys {
            let path = root.join("b").join(key);
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(&path, key).unwrap();
        }
        std::fs::create_dir_all(root.join("b/empty/dir")).unwrap();
        let fs = s3s_fs::FileSystem::new(&root).unwrap();
        let prefixes = [
            "",
            "m",
            "modules/acme/vpc",
            "modules/acme/vpc/",
            "providers/example.com/acme/x/terraform-provider-x_1.0.0_",
            "/a",
            "none/",
            "empty/",
        ];
        let mut compared = 0;
        for prefix in prefixes {
            for delimiter in [None, Some("/"), Some("_")] {
                for (max_keys, start_after, token) in [
                    (None, None, None),
                    (Some(2), None, None),
                    (Some(0), None, None),
                    (Some(1), Some("modules/acme/vpc/aws/1.0.0.tar.gz"), None),
                    (Some(2), None, Some("modules/acme/vpc2/")),
                ] {
                    let input = || {
                        let mut input = ListObjectsV2Input::builder().bucket("b".into()).build().unwrap();
                        input.prefix = Some(prefix.to_owned());
                        input.delimiter = delimiter.map(str::to_owned);
                        input.max_keys = max_keys;
                        input.start_after = start_after.map(str::to_owned);
                        input.continuation_token = token.map(str::to_owned);
                        input
                    };
                    let request = s3s::S3Request {
                        input: input(),
                        method: http::Method::GET,
                        uri: http::Uri::from_static("/b"),
                        headers: http::HeaderMap::new(),
                        extensions: http::Extensions::new(),
                        credentials: None,
                        region: None,
                        service: None,
                        trailing_headers: None,
                    };
                    let theirs = fs.list_objects_v2(request).await.unwrap().output;
                    let ours = list_objects_v2(&root.join("b"), input()).await.unwrap();
                    assert_eq!(
                        format!("{ours:?}"),
                        format!("{theirs:?}"),
                        "prefix {prefix:?} delimiter {delimiter:?} max {max_keys:?}"
                    );
                    compared += 1;
                }
            }
        }
        assert_eq!(compared, prefixes.len() * 15);
        let missing = ListObjectsV2Input::builder().bucket("nope".into()).build().unwrap();
        assert!(list_objects_v2(&root.join("nope"), missing).await.is_err());
        let _ = std::fs::remove_dir_all(&root);
    }

    /// Listings racing PUTs and DELETEs under their prefix all answer, with whatever keys they
    /// found: a file or directory deleted between reading its directory and looking at it is
    /// left out, as S3 lists a key deleted during a listing or not, never failing the listing.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn keys_deleted_while_listing_are_left_out() {
        const LISTINGS: usize = 300;
        let root = std::env::temp_dir().join(format!("object-listing-churn-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&root);
        let churned = root.join("b/churn");
        std::fs::create_dir_all(&churned).unwrap();
        let listed = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let churn = {
            let (churned, listed) = (churned.clone(), listed.clone());
            // Keys at the prefix's level and one below it, so files and directories both vanish.
            tokio::task::spawn_blocking(move || {
                let mut rounds = 0;
                while !listed.load(std::sync::atomic::Ordering::SeqCst) {
                    for i in 0..20 {
                        std::fs::create_dir_all(churned.join(format!("d{i}"))).unwrap();
                        std::fs::write(churned.join(format!("d{i}/k")), b"k").unwrap();
                        std::fs::write(churned.join(format!("k{i}")), b"k").unwrap();
                    }
                    for i in 0..20 {
                        std::fs::remove_file(churned.join(format!("d{i}/k"))).unwrap();
                        std::fs::remove_dir(churned.join(format!("d{i}"))).unwrap();
                        std::fs::remove_file(churned.join(format!("k{i}"))).unwrap();
                    }
                    rounds += 1;
                }
                rounds
            })
        };
        let mut failed = Vec::new();
        for _ in 0..LISTINGS {
            let mut input = ListObjectsV2Input::builder().bucket("b".into()).build().unwrap();
            input.prefix = Some("churn/".into());
            if let Err(e) = list_objects_v2(&root.join("b"), input).await {
                failed.push(format!("{e:?}"));
            }
        }
        listed.store(true, std::sync::atomic::Ordering::SeqCst);
        let rounds = churn.await.unwrap();
        let _ = std::fs::remove_dir_all(&root);
        assert!(
            failed.is_empty(),
            "{} of {LISTINGS} listings failed ({rounds} rounds of churn): {:?}",
            failed.len(),
            failed.first()
        );
    }
}
