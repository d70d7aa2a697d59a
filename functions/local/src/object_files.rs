//! The embedded S3's storage: s3s-fs (objects as files under `DATA_DIR/s3`), with object bodies
//! read in large chunks.
//!
//! s3s-fs 0.14 streams a GET's body through `ReaderStream::with_capacity(file, 4096)`: every
//! 4 KiB is one read on tokio's blocking pool and one chunk written to the socket, so the
//! 154 MB zip of the AWS provider took ≈ 38,000 thread hand-offs and 742 ms, 4× nginx's time
//! for the same file over TLS (docs/PERFORMANCE.md). Here `get_object` lets s3s-fs answer as
//! before (the request has passed s3s's SigV4 check by then; the key, range, ETag and metadata
//! are its) and then, for a whole-object GET, swaps the body for the same file read in `CHUNK`
//! pieces. ListObjectsV2 walks only what its prefix can match (`object_listing`). A GET or HEAD
//! of a directory (a prefix of other keys) answers `NoSuchKey`, as S3 does for a key it does
//! not hold (`file_or_no_such_key`). Every other operation is s3s-fs's own.
//!
//! The file opened here is the file s3s-fs opened: `IndexingS3` holds the key's read lock
//! while s3s-fs handles the request and this runs inside it, and writes replace an object by
//! renaming a new file over it under the write lock. As a second guard the file's length and
//! modification time must match what s3s-fs answered, else its own body is kept.

use std::path::{Component, Path, PathBuf};

use s3s::dto::{
    GetObjectInput, GetObjectOutput, HeadObjectInput, HeadObjectOutput, ListObjectsV2Input, ListObjectsV2Output,
    StreamingBlob,
};
use s3s::{S3, S3Request, S3Response, S3Result, s3_error};
use tokio::io::AsyncReadExt;
use tokio_util::io::ReaderStream;

/// Bytes per read and per body chunk. The 154 MB zip of the AWS provider, one connection
/// (2026-11-23, perf build): 742 ms in s3s-fs's 4 KiB chunks, 79 ms in 64 KiB, 59–74 ms in
/// 256 KiB, 50 ms in 1 MiB with 6 MiB more peak memory for one download: 256 KiB keeps most
/// of the gain while 256 concurrent downloads hold at most 64 MiB of chunks.
pub const CHUNK: usize = 256 * 1024;

pub struct ObjectFiles {
    fs: s3s_fs::FileSystem,
    root: PathBuf,
}

impl ObjectFiles {
    /// Objects under `root` (created if missing), as s3s-fs lays them out: `root/BUCKET/KEY`.
    pub fn new(root: &Path) -> Result<Self, String> {
        std::fs::create_dir_all(root).map_err(|e| format!("{}: {e}", root.display()))?;
        let root = root.canonicalize().map_err(|e| format!("{}: {e}", root.display()))?;
        let fs = s3s_fs::FileSystem::new(&root).map_err(|e| format!("embedded S3: {e:?}"))?;
        Ok(ObjectFiles { fs, root })
    }

    /// The file of `bucket`/`key` as s3s-fs resolves it, for keys made only of plain path
    /// segments (anything else keeps s3s-fs's own body: no `..` or `.` to resolve here).
    fn object_path(&self, bucket: &str, key: &str) -> Option<PathBuf> {
        (plain(bucket) && plain(key)).then(|| self.root.join(bucket).join(key))
    }

    /// The directory of `bucket`, under the same rule.
    fn bucket_dir(&self, bucket: &str) -> Option<PathBuf> {
        plain(bucket).then(|| self.root.join(bucket))
    }

    /// The body of `path` in `CHUNK`s, if the file is still the one s3s-fs described.
    async fn chunked_body(path: &Path, output: &GetObjectOutput) -> Option<StreamingBlob> {
        let length = u64::try_from(output.content_length?).ok()?;
        let file = tokio::fs::File::open(path).await.ok()?;
        let meta = file.metadata().await.ok()?;
        let modified = s3s::dto::Timestamp::from(meta.modified().ok()?);
        if meta.len() != length || output.last_modified.as_ref() != Some(&modified) {
            return None;
        }
        Some(StreamingBlob::wrap(ReaderStream::with_capacity(file.take(length), CHUNK)))
    }
}

/// s3s-fs's `answer` to a GET or HEAD of the object at `path`, but `NoSuchKey` where the path is
/// a directory: a prefix of other keys (`a/b` of `a/b/c`), which is no object in S3. s3s-fs
/// opens a directory as it opens a file, then fails reading it (a 500) or, with the ETag a
/// deleted object left behind, answers 200 with a body that cannot be read. Checked before
/// (`answer` is not started yet) and after a failure: a write of `a/b/c` can make `a/b` a
/// directory between the two, and holds no lock of `a/b`.
async fn file_or_no_such_key<T>(path: Option<&Path>, answer: impl Future<Output = S3Result<T>>) -> S3Result<T> {
    let directory = || async {
        match path {
            Some(path) => tokio::fs::metadata(path).await.is_ok_and(|m| m.is_dir()),
            None => false,
        }
    };
    if directory().await {
        return Err(s3_error!(NoSuchKey));
    }
    match answer.await {
        Err(_) if directory().await => Err(s3_error!(NoSuchKey)),
        answer => answer,
    }
}

/// A name made only of plain path segments: no `..`, `.`, root or empty part.
fn plain(name: &str) -> bool {
    !name.is_empty() && Path::new(name).components().all(|c| matches!(c, Component::Normal(_)))
}

/// The S3 implementation: the given methods, and each listed operation answered by s3s-fs
/// unchanged. (One macro for the whole impl: `async_trait` must see every method as written.)
macro_rules! s3_with {
    ({ $($own:item)* } $($op:ident: $input:ident => $output:ident),* $(,)?) => {
        #[async_trait::async_trait]
        impl S3 for ObjectFiles {
            $($own)*
            $(
                async fn $op(
                    &self,
                    req: S3Request<s3s::dto::$input>,
                ) -> S3Result<S3Response<s3s::dto::$output>> {
                    self.fs.$op(req).await
                }
            )*
        }
    };
}

s3_with! {
    {
        async fn get_object(&self, req: S3Request<GetObjectInput>) -> S3Result<S3Response<GetObjectOutput>> {
            let whole = req.input.range.is_none();
            let path = self.object_path(&req.input.bucket, &req.input.key);
            let mut response = file_or_no_such_key(path.as_deref(), self.fs.get_object(req)).await?;
            if let Some(path) = path.filter(|_| whole)
                && let Some(body) = Self::chunked_body(&path, &response.output).await
            {
                // Dropping s3s-fs's body closes its file before a byte of it is read.
                response.output.body = Some(body);
            }
            Ok(response)
        }

        async fn head_object(&self, req: S3Request<HeadObjectInput>) -> S3Result<S3Response<HeadObjectOutput>> {
            let path = self.object_path(&req.input.bucket, &req.input.key);
            file_or_no_such_key(path.as_deref(), self.fs.head_object(req)).await
        }

        /// Walks only the directories the prefix can match (`object_listing`), where s3s-fs
        /// walks the whole bucket.
        async fn list_objects_v2(&self, req: S3Request<ListObjectsV2Input>) -> S3Result<S3Response<ListObjectsV2Output>> {
            match self.bucket_dir(&req.input.bucket) {
                Some(dir) => Ok(S3Response::new(crate::object_listing::list_objects_v2(&dir, req.input).await?)),
                None => self.fs.list_objects_v2(req).await,
            }
        }
    }
    create_bucket: CreateBucketInput => CreateBucketOutput,
    copy_object: CopyObjectInput => CopyObjectOutput,
    delete_bucket: DeleteBucketInput => DeleteBucketOutput,
    delete_object: DeleteObjectInput => DeleteObjectOutput,
    delete_objects: DeleteObjectsInput => DeleteObjectsOutput,
    get_bucket_location: GetBucketLocationInput => GetBucketLocationOutput,
    head_bucket: HeadBucketInput => HeadBucketOutput,
    list_buckets: ListBucketsInput => ListBucketsOutput,
    list_objects: ListObjectsInput => ListObjectsOutput,
    put_object: PutObjectInput => PutObjectOutput,
    create_multipart_upload: CreateMultipartUploadInput => CreateMultipartUploadOutput,
    upload_part: UploadPartInput => UploadPartOutput,
    upload_part_copy: UploadPartCopyInput => UploadPartCopyOutput,
    list_parts: ListPartsInput => ListPartsOutput,
    complete_multipart_upload: CompleteMultipartUploadInput => CompleteMultipartUploadOutput,
    abort_multipart_upload: AbortMultipartUploadInput => AbortMultipartUploadOutput,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_plain_keys_get_a_path() {
        let dir = std::env::temp_dir().join(format!("object-files-{}", std::process::id()));
        let files = ObjectFiles::new(&dir).unwrap();
        let root = dir.canonicalize().unwrap();
        assert_eq!(files.object_path("b", "providers/x/y.zip"), Some(root.join("b/providers/x/y.zip")));
        for key in ["../b2/k", "a/../../k", "./k", "/abs", "a//b/../c", ""] {
            assert_eq!(files.object_path("b", key), None, "{key}");
        }
        assert_eq!(files.object_path("..", "k"), None);
        let _ = std::fs::remove_dir_all(&dir);
    }

    fn request<T>(input: T) -> S3Request<T> {
        S3Request {
            input,
            method: http::Method::GET,
            uri: http::Uri::from_static("/b"),
            headers: http::HeaderMap::new(),
            extensions: http::Extensions::new(),
            credentials: None,
            region: None,
            service: None,
            trailing_headers: None,
        }
    }

    fn put(key: &str, body: &'static [u8]) -> S3Request<s3s::dto::PutObjectInput> {
        let mut input = s3s::dto::PutObjectInput::builder().bucket("b".into()).key(key.into()).build().unwrap();
        input.body = Some(StreamingBlob::from(s3s::Body::from(bytes::Bytes::from_static(body))));
        request(input)
    }

    /// A GET or HEAD of a prefix of other keys (`a/b` of `a/b/c`, a directory here) answers
    /// `NoSuchKey`, as S3 does, even where a deleted object of that key left its ETag behind.
    #[tokio::test]
    async fn a_prefix_of_other_keys_is_no_object() {
        let dir = std::env::temp_dir().join(format!("object-files-dirs-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(dir.join("b")).unwrap();
        let files = ObjectFiles::new(&dir).unwrap();
        files.put_object(put("a/b", b"old")).await.unwrap();
        let delete = s3s::dto::DeleteObjectInput::builder().bucket("b".into()).key("a/b".into()).build().unwrap();
        files.delete_object(request(delete)).await.unwrap();
        files.put_object(put("a/b/c", b"c")).await.unwrap();
        let get = |key: &str| GetObjectInput::builder().bucket("b".into()).key(key.into()).build().unwrap();
        let head = |key: &str| HeadObjectInput::builder().bucket("b".into()).key(key.into()).build().unwrap();
        for key in ["a", "a/b"] {
            let got = files.get_object(request(get(key))).await.err().map(|e| e.code().clone());
            assert_eq!(got, Some(s3s::S3ErrorCode::NoSuchKey), "GET {key}");
            let headed = files.head_object(request(head(key))).await.err().map(|e| e.code().clone());
            assert_eq!(headed, Some(s3s::S3ErrorCode::NoSuchKey), "HEAD {key}");
        }
        assert!(files.get_object(request(get("a/b/c"))).await.is_ok());
        assert!(files.head_object(request(head("a/b/c"))).await.is_ok());
        let _ = std::fs::remove_dir_all(&dir);
    }
}
