//! Deprecation files: a publisher uploads `VERSION.deprecation.json` beside a module's archives
//! (`_deprecation.json` beside a provider's zips) to mark that version deprecated, and deletes
//! it to undo that. The pass that owns the version reads the file (only when its ETag changed)
//! into the version's manifest entry; a bad file, or one for a version that is not published,
//! gets a rejection record and changes nothing.

use super::rejections::Rejections;
use crate::error::Error;
use crate::manifest::Deprecation;
use crate::publish_log::{Action, Change};
use crate::storage::{ObjectInfo, Storage};

/// The deprecation `file` says, given what the entry holds now (`current`): read again only
/// when the file's ETag changed; `None` (with a record) when the file is refused.
pub(super) async fn read<S: Storage>(
    storage: &S,
    file: &ObjectInfo,
    current: Option<&Deprecation>,
    rejections: &mut Rejections,
) -> Result<Option<Deprecation>, Error> {
    rejections.keep(&file.key);
    // Kept unread only while it also passes today's rules: text accepted before a rule was
    // added (a format character, say) is read again, and refused, at the next pass.
    let unchanged = |c: &&Deprecation| !c.etag.is_empty() && c.etag == file.etag && c.reads_as_written();
    if let Some(current) = current.filter(unchanged) {
        return Ok(Some(current.clone()));
    }
    if rejections.rejected_before(&file.key, &file.etag) {
        return Ok(None);
    }
    let parsed = if file.size > Deprecation::FILE_MAX_BYTES {
        Err(format!("{} bytes, over the {} a deprecation file may hold", file.size, Deprecation::FILE_MAX_BYTES))
    } else {
        match storage.get(&file.key).await? {
            // Deleted since the listing: the next event's pass sees that.
            None => return Ok(None),
            Some(object) => Deprecation::parse(&object.bytes, &object.etag),
        }
    };
    match parsed {
        Ok(deprecation) => {
            rejections.clear(storage, &file.key).await?;
            Ok(Some(deprecation))
        }
        Err(reason) => {
            rejections.reject(storage, file, reason).await?;
            Ok(None)
        }
    }
}

/// A deprecation file whose version is not published: a record says so.
pub(super) async fn refuse_orphan<S: Storage>(
    storage: &S,
    file: &ObjectInfo,
    what: &str,
    rejections: &mut Rejections,
) -> Result<(), Error> {
    rejections.keep(&file.key);
    if !rejections.rejected_before(&file.key, &file.etag) {
        let reason = format!("{what} is not published, so there is nothing to deprecate: publish it first");
        rejections.reject(storage, file, reason).await?;
    }
    Ok(())
}

/// The log entry for a version whose deprecation went from `before` to `after`, if it changed.
pub(super) fn change(key: String, before: Option<&Deprecation>, after: Option<&Deprecation>) -> Option<Change> {
    let same = |a: &Deprecation, b: &Deprecation| a.reason == b.reason && a.replacement == b.replacement;
    let (action, reason) = match (before, after) {
        (None, None) => return None,
        (Some(a), Some(b)) if same(a, b) => return None,
        (_, Some(d)) => (Action::Deprecate, Some(d.sentence("this version"))),
        (Some(_), None) => (Action::Undeprecate, None),
    };
    Some(Change {
        action,
        key,
        sha256: None,
        size: None,
        etag: after.map(|d| d.etag.clone()).filter(|e| !e.is_empty()),
        version_id: None,
        principal: None,
        reason,
    })
}

#[cfg(test)]
mod tests {
    use super::super::fixtures::*;
    use super::super::{Indexer, Limits};
    use crate::publish_log::Action;
    use crate::storage::{MemoryStorage, Storage};

    const FILE: &str = "modules/acme/vpc/aws/1.0.0.deprecation.json";

    fn log_actions(s: &MemoryStorage) -> Vec<(Action, String)> {
        let mut keys: Vec<String> =
            s.keys().into_iter().filter(|k| crate::layout::publish_log_seq(k).is_some()).collect();
        keys.sort();
        keys.iter()
            .map(|k| serde_json::from_slice::<crate::publish_log::Entry>(&s.peek(k).unwrap()).unwrap().change)
            .map(|c| (c.action, c.reason.unwrap_or_default()))
            .collect()
    }

    #[tokio::test]
    async fn a_file_deprecates_a_version_and_deleting_it_undoes_that() {
        let s = MemoryStorage::new();
        let indexer = Indexer::new(&s, Limits::default());
        s.insert("modules/acme/vpc/aws/1.0.0.tar.gz", tf("one"));
        indexer.reindex(&module()).await.unwrap();
        s.insert(FILE, r#"{"reason": "CVE-2026-1234 in the default policy", "replacement": "1.0.1"}"#);
        indexer.on_object_changed(FILE).await.unwrap();
        let d = manifest(&s).versions[0].deprecation.clone().expect("deprecated");
        assert_eq!(
            d.sentence("Version 1.0.0"),
            "Version 1.0.0 is deprecated: CVE-2026-1234 in the default policy. Use 1.0.1 instead."
        );
        // Unchanged: not read again.
        let before = s.request_count();
        indexer.on_object_changed(FILE).await.unwrap();
        assert_eq!(
            s.request_count() - before,
            3 + 3,
            "manifest, listing, rejection listing; catalog shard, manifest, catalog index; no file read"
        );
        s.delete(FILE).await.unwrap();
        indexer.on_object_changed(FILE).await.unwrap();
        assert_eq!(manifest(&s).versions[0].deprecation, None);
        let actions = log_actions(&s);
        assert_eq!(actions.len(), 3, "{actions:?}");
        assert_eq!(actions[1].0, Action::Deprecate);
        assert!(actions[1].1.contains("CVE-2026-1234"), "{actions:?}");
        assert_eq!(actions[2].0, Action::Undeprecate);
    }

    #[tokio::test]
    async fn a_bad_or_orphan_file_gets_a_record_and_changes_nothing() {
        let s = MemoryStorage::new();
        let indexer = Indexer::new(&s, Limits::default());
        s.insert("modules/acme/vpc/aws/1.0.0.tar.gz", tf("one"));
        indexer.reindex(&module()).await.unwrap();
        let long = "x".repeat(501);
        let bad = [
            ("not json", "not a deprecation file"),
            (r#"{"reason": ""}"#, "reason is empty"),
            (r#"{"reason": "r", "extra": 1}"#, "unknown field"),
            (&format!(r#"{{"reason": "{long}"}}"#), "longer than 500"),
            (r#"{"reason": "a\u0007b"}"#, "control character"),
        ];
        for (content, why) in bad {
            s.insert(FILE, content.to_string());
            indexer.on_object_changed(FILE).await.unwrap();
            assert_eq!(manifest(&s).versions[0].deprecation, None, "{content}");
            let record = rejection(&s, FILE).unwrap();
            assert!(record.reason.contains(why), "{content}: {}", record.reason);
        }
        s.insert(FILE, vec![b' '; 5000]);
        indexer.on_object_changed(FILE).await.unwrap();
        assert!(rejection(&s, FILE).unwrap().reason.contains("over the 4096"));
        let orphan = "modules/acme/vpc/aws/9.0.0.deprecation.json";
        s.insert(orphan, r#"{"reason": "r"}"#);
        indexer.on_object_changed(orphan).await.unwrap();
        assert!(
            rejection(&s, orphan).unwrap().reason.contains("version 9.0.0 of module acme/vpc/aws is not published")
        );
        // Fixed: deprecated, and the record goes.
        s.insert(FILE, r#"{"reason": "use vpc2"}"#);
        indexer.on_object_changed(FILE).await.unwrap();
        assert_eq!(manifest(&s).versions[0].deprecation.as_ref().map(|d| d.reason.as_str()), Some("use vpc2"));
        assert!(rejection(&s, FILE).is_none());
    }

    /// Text a former rule accepted (here a right-to-left override, before format characters
    /// were refused) does not survive the next pass just because its file is unchanged.
    #[tokio::test]
    async fn text_accepted_before_a_rule_is_judged_again() {
        let s = MemoryStorage::new();
        let indexer = Indexer::new(&s, Limits::default());
        s.insert("modules/acme/vpc/aws/1.0.0.tar.gz", tf("one"));
        indexer.reindex(&module()).await.unwrap();
        s.insert(FILE, r#"{"reason": "use 2.0\u202e"}"#);
        let etag = s.list("modules/acme/vpc/aws/").await.unwrap().into_iter().find(|o| o.key == FILE).unwrap().etag;
        // The manifest as the former rule left it: the text kept, no record.
        let mut planted = manifest(&s);
        planted.versions[0].deprecation =
            Some(crate::manifest::Deprecation { reason: "use 2.0\u{202e}".into(), replacement: None, etag });
        s.insert(super::super::fixtures::MANIFEST, serde_json::to_vec(&planted).unwrap());
        indexer.on_object_changed(FILE).await.unwrap();
        assert_eq!(manifest(&s).versions[0].deprecation, None);
        assert!(rejection(&s, FILE).unwrap().reason.contains("U+202E"));
    }
}
