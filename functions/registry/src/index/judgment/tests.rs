use super::*;

#[test]
fn policies_parse_with_namespace_exceptions() {
    let p = SemverPolicy::parse("warn, acme=enforce, Sandbox=off").unwrap();
    assert_eq!((p.of("acme"), p.of("sandbox"), p.of("other")), (Policy::Enforce, Policy::Off, Policy::Warn));
    assert_eq!(SemverPolicy::parse("").unwrap(), SemverPolicy::default());
    assert_eq!(SemverPolicy::parse("enforce").unwrap().of("x"), Policy::Enforce);
    for bad in ["strict", "warn, off", "acme=maybe", "a b=warn", "acme=warn, acme=off"] {
        assert!(SemverPolicy::parse(bad).is_err(), "{bad}");
    }
}

#[test]
fn the_honest_version_is_the_next_major() {
    let v = semver::Version::parse("1.3.0").unwrap();
    let reason = refusal(&v, "1.2.0", &["input \"x\" removed: …".into()], 1);
    assert!(reason.contains("publish this archive as 2.0.0"), "{reason}");
    assert!(reason.contains("- input \"x\" removed"), "{reason}");
    assert!(!enforced(&semver::Version::parse("0.4.0").unwrap()));
    assert!(!enforced(&semver::Version::parse("1.4.0-rc.1").unwrap()));
}

use super::super::fixtures::*;
use super::super::{Indexer, Limits};
use crate::module_docs::compare::Compared;
use crate::storage::{MemoryStorage, Storage};

const V1: &str = "variable \"region\" {}\nvariable \"name\" {}\noutput \"id\" { value = 1 }\n";
const V2: &str = "variable \"name\" {}\noutput \"id\" { value = 1 }\n";

fn archive(main: &str) -> Vec<u8> {
    crate::testing::tar_gz(&[("main.tf", main.as_bytes())])
}

fn limits(policy: &str) -> Limits {
    Limits { semver: SemverPolicy::parse(policy).unwrap(), ..Limits::default() }
}

async fn publish(indexer: &Indexer<'_, MemoryStorage>, s: &MemoryStorage, version: &str, main: &str) {
    let key = format!("modules/acme/vpc/aws/{version}.tar.gz");
    s.insert(&key, archive(main));
    indexer.on_object_changed(&key).await.unwrap();
}

#[tokio::test]
async fn enforce_refuses_a_break_and_names_the_honest_version() {
    let s = MemoryStorage::new();
    let indexer = Indexer::new(&s, limits("warn, acme=enforce"));
    publish(&indexer, &s, "1.2.0", V1).await;
    publish(&indexer, &s, "1.3.0", V2).await;
    assert_eq!(versions(&s), ["1.2.0"], "1.3.0 is not published");
    let record = rejection(&s, "modules/acme/vpc/aws/1.3.0.tar.gz").unwrap();
    assert!(record.reason.contains("1.3.0 breaks callers of 1.2.0"), "{}", record.reason);
    assert!(record.reason.contains("input \"region\" removed"), "{}", record.reason);
    assert!(record.reason.contains("publish this archive as 2.0.0"), "{}", record.reason);
    // Judged once: under another policy the same bytes stay refused while they stay;
    // deleted (the record goes) and uploaded again, they are judged anew.
    let warn = Indexer::new(&s, Limits::default());
    publish(&warn, &s, "1.3.0", V2).await;
    assert_eq!(versions(&s), ["1.2.0"], "the same bytes are not read twice");
    s.delete("modules/acme/vpc/aws/1.3.0.tar.gz").await.unwrap();
    warn.on_object_changed("modules/acme/vpc/aws/1.3.0.tar.gz").await.unwrap();
    assert!(rejection(&s, "modules/acme/vpc/aws/1.3.0.tar.gz").is_none());
    publish(&warn, &s, "1.3.0", V2).await;
    assert_eq!(versions(&s), ["1.3.0", "1.2.0"], "judged anew under warn");
    s.delete("modules/acme/vpc/aws/1.3.0.tar.gz").await.unwrap();
    warn.on_object_changed("modules/acme/vpc/aws/1.3.0.tar.gz").await.unwrap();
    // The same bytes as 2.0.0: a new major version may break.
    publish(&indexer, &s, "2.0.0", V2).await;
    assert_eq!(versions(&s), ["2.0.0", "1.2.0"]);
    assert_eq!(manifest(&s).versions[0].judged, Some(crate::manifest::Judgment::default()));
    // 0.x and pre-releases are judged, never refused; a pre-release is never a baseline.
    publish(&indexer, &s, "2.1.0-rc.1", V1).await;
    publish(&indexer, &s, "0.2.0", V1).await;
    publish(&indexer, &s, "0.3.0", V2).await;
    assert_eq!(versions(&s), ["2.1.0-rc.1", "2.0.0", "1.2.0", "0.3.0", "0.2.0"]);
    let judged = |v: &str| manifest(&s).versions.into_iter().find(|e| e.version == v).unwrap().judged.unwrap();
    assert_eq!(judged("0.3.0").against.as_deref(), Some("0.2.0"));
    assert_eq!(judged("0.3.0").breaking_count(), 1);
    assert_eq!(judged("2.1.0-rc.1").breaking_count(), 1, "a required input added");
    publish(&indexer, &s, "2.1.0", &format!("{V2}variable \"zone\" {{ default = \"a\" }}\n")).await;
    assert_eq!(judged("2.1.0").against.as_deref(), Some("2.0.0"), "not the pre-release");
    assert_eq!(judged("2.1.0").breaking_count(), 0, "an optional input added");
}

#[tokio::test]
async fn warn_publishes_and_records_the_break_in_the_manifest_and_the_log() {
    let s = MemoryStorage::new();
    let indexer = Indexer::new(&s, Limits::default());
    publish(&indexer, &s, "1.2.0", V1).await;
    publish(&indexer, &s, "1.3.0", V2).await;
    let judged = manifest(&s).versions[0].judged.clone().unwrap();
    assert_eq!(judged.against.as_deref(), Some("1.2.0"));
    assert_eq!(judged.breaking.len(), 1);
    assert!(judged.breaking[0].starts_with("input \"region\" removed"), "{judged:?}");
    let log = crate::publish_log::audit::audit(&s).await.unwrap();
    assert!(log.is_clean());
    let last = s.keys().into_iter().filter(|k| crate::layout::publish_log_seq(k).is_some()).max().unwrap();
    let entry = String::from_utf8(s.peek(&last).unwrap().to_vec()).unwrap();
    assert!(entry.contains("breaking changes since 1.2.0: input"), "{entry}");
    // Off: nothing judged.
    let off = Indexer::new(&s, limits("off"));
    publish(&off, &s, "1.4.0", V1).await;
    assert_eq!(manifest(&s).versions[0].judged, None);
}

/// Docs stored before comparisons were kept (a manifest entry without `compared`) are
/// compared at the next pass, `reindex all` included, and kept so.
#[tokio::test]
async fn docs_from_before_comparisons_are_compared_once_by_the_next_pass() {
    let s = MemoryStorage::new();
    let indexer = Indexer::new(&s, limits("warn"));
    publish(&indexer, &s, "1.0.0", V1).await;
    publish(&indexer, &s, "1.1.0", V2).await;
    let module = crate::address::ModuleAddress::parse("acme", "vpc", "aws").unwrap();
    let docs_key = crate::layout::module_docs(&module, &semver::Version::new(1, 1, 0));
    let stored = || serde_json::from_slice::<ModuleDocs>(&s.peek(&docs_key).unwrap()).unwrap();
    // As an older indexer left them.
    let mut old_docs = stored();
    old_docs.compared = None;
    s.insert(&docs_key, serde_json::to_vec(&old_docs).unwrap());
    let mut old = manifest(&s);
    old.versions.iter_mut().for_each(|v| v.compared = false);
    s.insert(MANIFEST, serde_json::to_vec(&old).unwrap());

    let cost = || async {
        let before = s.request_count();
        indexer.reindex_all().await.unwrap();
        s.request_count() - before
    };
    let backfill = cost().await;
    let compared = stored().compared.expect("compared by the pass");
    assert_eq!(compared.since.as_deref(), Some("1.0.0"));
    assert!(compared.from("1.0.0", &old.versions[1].sha256).is_some(), "{compared:?}");
    assert!(manifest(&s).versions.iter().all(|v| v.compared));
    let (settled, again) = (cost().await, cost().await);
    assert_eq!(settled, again, "once: the passes after it read no archive");
    assert!(backfill > settled, "the backfill read the archives ({backfill} > {settled})");
}

/// Each version is compared at publish, whatever the policy, with the ten below it, the
/// version before it and its baseline, and the comparisons are stored with its docs.
#[tokio::test]
async fn comparisons_are_made_once_at_publish_and_stored_with_the_docs() {
    let s = MemoryStorage::new();
    let indexer = Indexer::new(&s, limits("off"));
    let compared = |v: &str| {
        let key = crate::layout::module_docs(
            &crate::address::ModuleAddress::parse("acme", "vpc", "aws").unwrap(),
            &semver::Version::parse(v).unwrap(),
        );
        serde_json::from_slice::<ModuleDocs>(&s.peek(&key).unwrap()).unwrap().compared.unwrap()
    };
    let froms = |v: &str| compared(v).with.iter().map(|c| c.from.clone()).collect::<Vec<_>>();
    publish(&indexer, &s, "1.0.0", V1).await;
    assert_eq!(compared("1.0.0"), Compared::default(), "nothing before it");
    for minor in 1..=11 {
        publish(&indexer, &s, &format!("1.{minor}.0"), V1).await;
    }
    publish(&indexer, &s, "1.12.0-rc.1", V2).await;
    publish(&indexer, &s, "1.12.0", V2).await;
    let c = compared("1.12.0");
    assert_eq!(c.since.as_deref(), Some("1.11.0"), "a release's since is a release");
    let ten: Vec<String> =
        ["1.12.0-rc.1"].into_iter().map(String::from).chain((3..=11).rev().map(|m| format!("1.{m}.0"))).collect();
    assert_eq!(froms("1.12.0"), ten, "the ten below it, newest first");
    assert_eq!(
        c.from("1.11.0", &manifest(&s).versions.iter().find(|e| e.version == "1.11.0").unwrap().sha256)
            .unwrap()
            .breaking(),
        1
    );
    assert_eq!(compared("1.12.0-rc.1").since.as_deref(), Some("1.11.0"));
    // A patch published later is compared with what was below it then.
    publish(&indexer, &s, "1.2.1", V2).await;
    assert_eq!(compared("1.2.1").since.as_deref(), Some("1.2.0"));
    assert_eq!(froms("1.2.1"), ["1.2.0", "1.1.0", "1.0.0"]);
    assert_eq!(froms("1.12.0").len(), 10, "stored once: 1.12.0 is not compared again");
    // The first release of a major line: its since is the version before it, its baseline none.
    publish(&indexer, &s, "2.0.0", V2).await;
    assert_eq!(compared("2.0.0").since.as_deref(), Some("1.12.0"));
}

/// Uploaded at once and seen by one pass, versions are judged lowest first, each against
/// what is published or accepted below it: as if published one after the other.
#[tokio::test]
async fn versions_published_at_once_are_judged_in_order() {
    let s = MemoryStorage::new();
    let indexer = Indexer::new(&s, limits("enforce"));
    publish(&indexer, &s, "1.0.0", V1).await;
    s.insert("modules/acme/vpc/aws/1.1.0.tar.gz", archive(V2));
    s.insert("modules/acme/vpc/aws/1.2.0.tar.gz", archive(V2));
    s.insert("modules/acme/vpc/aws/1.0.1.tar.gz", archive(V1));
    indexer.reindex(&module()).await.unwrap();
    assert_eq!(versions(&s), ["1.0.1", "1.0.0"], "1.1.0 and 1.2.0 each break 1.0.1");
    let record = rejection(&s, "modules/acme/vpc/aws/1.2.0.tar.gz").unwrap();
    assert!(record.reason.contains("breaks callers of 1.0.1"), "{}", record.reason);
    // A module whose new files do not parse cannot be shown to keep its interface.
    publish(&indexer, &s, "1.3.0", "variable \"region\" {").await;
    let record = rejection(&s, "modules/acme/vpc/aws/1.3.0.tar.gz").unwrap();
    assert!(record.reason.contains("does not parse"), "{}", record.reason);
}
