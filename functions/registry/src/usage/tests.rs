use super::*;
use crate::address::ModuleAddress;
use crate::storage::{MemoryStorage, Storage};

const DAY: i64 = 86_400;
/// 2026-11-27, noon UTC: every test's "now", never the clock's.
const NOW: i64 = 1_795_737_600 + 12 * 3600;

fn module(name: &str) -> Counted {
    Counted::Module(ModuleAddress::parse("acme", name, "aws").unwrap())
}

/// A caller as `auth::Viewer::caller` names a token's.
fn token(name: &str) -> String {
    format!("token {name}")
}

const ANONYMOUS: &str = "anonymous";

fn download(name: &str, version: &str, caller: &str) -> Download {
    Download::new(module(name), &semver::Version::parse(version).unwrap(), Via::ModulesV1, caller)
}

fn batch(stream: &str, lines: &[(i64, String)]) -> Batch {
    Batch {
        message_type: "DATA_MESSAGE".into(),
        log_group: "/aws/lambda/registry-modules".into(),
        log_stream: stream.into(),
        log_events: lines
            .iter()
            .enumerate()
            .map(|(i, (at, line))| LogEvent {
                id: format!("{stream}-{i}"),
                timestamp: at * 1000,
                message: line.clone(),
            })
            .collect(),
    }
}

async fn stored(storage: &MemoryStorage, counted: &Counted) -> OwnerUsage {
    OwnerUsage::parse(&storage.get(&counted.key()).await.unwrap().expect("a usage document").bytes).unwrap()
}

#[test]
fn now_is_the_day_the_tests_say() {
    assert_eq!(crate::clock::rfc3339(NOW), "2026-11-27T12:00:00Z");
}

#[test]
fn a_record_is_one_json_line_and_reads_back() {
    let d = download("network", "1.2.0", &token("ci")).on(&crate::layout::Platform::parse("linux", "amd64").unwrap());
    let line = d.line();
    assert!(!line.contains('\n'), "{line}");
    let value: serde_json::Value = serde_json::from_str(&line).unwrap();
    assert_eq!(value["level"], "INFO");
    assert_eq!(value["usage"]["owner"], "acme/network/aws");
    assert_eq!(value["usage"]["caller"], "token ci");
    assert_eq!(value["usage"]["platform"], "linux_amd64");
    assert_eq!(Download::from_line(&line).unwrap().unwrap(), d);
}

#[test]
fn a_hostile_caller_name_stays_on_its_line_and_is_cut() {
    let name = format!("evil\n{{\"level\":\"INFO\",\"usage\":{{}}}}\r\u{1b}[31m{}", "x".repeat(500));
    let line = download("network", "1.0.0", &token(&name)).line();
    assert_eq!(line.lines().count(), 1, "{line}");
    let back = Download::from_line(&line).unwrap().unwrap();
    assert!(back.caller.chars().all(|c| !c.is_control()), "{:?}", back.caller);
    assert_eq!(back.caller.chars().count(), CALLER_MAX_LEN);
}

#[test]
fn only_valid_records_are_read() {
    // Other log lines are not records.
    for other in
        ["", "request", r#"{"level":"INFO","fields":{"message":"request","path":"/v1/modules"}}"#, "{\"usage\":"]
    {
        assert!(Download::from_line(other).is_none(), "{other}");
    }
    // A record whose parts break the grammar names nothing.
    let record = |owner: &str, version: &str, kind: &str| {
        format!(
            r#"{{"usage":{{"v":1,"kind":"{kind}","owner":"{owner}","version":"{version}","via":"modules.v1","caller":"anonymous"}}}}"#
        )
    };
    for bad in [
        record("acme/../../tokens", "1.0.0", "module"),
        record("acme/network", "1.0.0", "module"),
        record("acme/network/aws/x", "1.0.0", "module"),
        record("acme/network/aws", "v1.0", "module"),
        record("acme/network/aws", "1.0.0", "tokens"),
        record("example.com/acme/widget", "1.0.0", "module"),
        r#"{"usage":{"v":2,"kind":"module","owner":"acme/network/aws","version":"1.0.0","via":"oci","caller":"x"}}"#.into(),
        r#"{"usage":{"v":1,"kind":"provider","owner":"example.com/acme/widget","version":"1.0.0","platform":"linux/amd64","via":"providers.v1","caller":"x"}}"#.into(),
    ] {
        assert!(matches!(Download::from_line(&bad), Some(Err(_))), "{bad}");
    }
    assert!(matches!(Download::from_line(&record("acme/network/aws", "1.0.0", "module")), Some(Ok(_))));
}

#[test]
fn a_fold_counts_by_version_day_and_caller_and_keeps_windows() {
    let settings = Settings { caller_days: 30 };
    let today = day_of(NOW);
    let (a, b) = (download("network", "1.0.0", &token("ci")), download("network", "2.0.0", ANONYMOUS));
    let mut usage = OwnerUsage::default();
    let downloads = [(today, &a), (today, &a), (today - 10, &a), (today - 40, &a), (today - 100, &a), (today, &b)];
    assert!(usage.fold("batch-1", &downloads, settings, today));
    assert!(!usage.fold("batch-1", &downloads, settings, today), "the same batch again counts nothing");
    assert_eq!(
        usage.downloads("1.0.0", today),
        Downloads { total: 5, last_7_days: 2, last_30_days: 3, last_90_days: 4 }
    );
    assert_eq!(usage.downloads("2.0.0", today).total, 1);
    assert_eq!(usage.all_downloads(today).total, 6);
    assert_eq!(usage.downloads("3.0.0", today), Downloads::default());
    // A day older than kept lives on in the total only; callers older than 30 days are gone.
    assert_eq!(usage.versions["1.0.0"].days.len(), 3);
    let callers = usage.callers("1.0.0", today, 30);
    assert_eq!(callers, vec![Caller { caller: "token ci".into(), downloads: 3, last: "2026-11-27".into() }]);
    assert!(usage.versions["1.0.0"].days["2026-10-18"].callers.is_empty());
    // Ten days on, the 7-day window has moved and the batch id is forgotten.
    let later = today + 10;
    assert!(usage.fold("batch-2", &[], settings, later));
    assert_eq!(usage.downloads("1.0.0", later).last_7_days, 0);
    assert!(!usage.has_batch("batch-1"));
}

#[test]
fn callers_beyond_the_bound_count_as_others() {
    let today = day_of(NOW);
    let viewers: Vec<String> = (0..CALLERS_MAX + 50).map(|i| token(&format!("t{i}"))).collect();
    let downloads: Vec<Download> = viewers.iter().map(|v| download("network", "1.0.0", v)).collect();
    let days: Vec<(i64, &Download)> = downloads.iter().map(|d| (today, d)).collect();
    let mut usage = OwnerUsage::default();
    usage.fold("b", &days, Settings::default(), today);
    let kept = &usage.versions["1.0.0"].days["2026-11-27"];
    assert_eq!(kept.count, (CALLERS_MAX + 50) as u64);
    assert_eq!(kept.callers.len(), CALLERS_MAX + 1);
    assert_eq!(kept.callers[document::OTHERS], 50);
}

#[tokio::test]
async fn a_batch_delivered_twice_counts_once() {
    let storage = MemoryStorage::new();
    let ci = token("ci");
    let lines: Vec<(i64, String)> = [("network", "1.0.0"), ("network", "1.0.0"), ("dns", "0.1.0")]
        .iter()
        .map(|(name, version)| (NOW, download(name, version, &ci).line()))
        .chain([(NOW, "a log line that is no record".to_string())])
        .collect();
    let event = batch("stream-a", &lines).encode();
    let first = fold_event(&storage, &event, Settings::default(), NOW).await.unwrap();
    assert_eq!(first, Folded { downloads: 3, invalid: 0, written: 2, repeated: 0 });
    let again = fold_event(&storage, &event, Settings::default(), NOW).await.unwrap();
    assert_eq!(again, Folded { downloads: 3, invalid: 0, written: 0, repeated: 2 });
    assert_eq!(stored(&storage, &module("network")).await.downloads("1.0.0", day_of(NOW)).total, 2);
    assert_eq!(stored(&storage, &module("dns")).await.downloads("0.1.0", day_of(NOW)).total, 1);
    // Another stream's lines are another batch.
    fold_event(&storage, &batch("stream-b", &lines).encode(), Settings::default(), NOW).await.unwrap();
    assert_eq!(stored(&storage, &module("network")).await.downloads("1.0.0", day_of(NOW)).total, 4);
}

#[tokio::test]
async fn concurrent_batches_on_one_module_lose_nothing() {
    let storage = MemoryStorage::new();
    let viewer = ANONYMOUS;
    let batches: Vec<Batch> = (0..24)
        .map(|i| {
            let lines: Vec<(i64, String)> =
                (0..=i % 5).map(|_| (NOW - DAY / 2, download("network", "1.0.0", viewer).line())).collect();
            batch(&format!("stream-{i}"), &lines)
        })
        .collect();
    let expected: usize = batches.iter().map(|b| b.log_events.len()).sum();
    let storage = &storage;
    let folds = batches.iter().map(|b| async move { fold_batch(storage, b, Settings::default(), NOW).await });
    for folded in futures_util::future::join_all(folds).await {
        assert_eq!(folded.unwrap().written, 1);
    }
    let usage = stored(storage, &module("network")).await;
    assert_eq!(usage.downloads("1.0.0", day_of(NOW)).total, expected as u64);
    assert_eq!(usage.downloads("1.0.0", day_of(NOW)).last_7_days, expected as u64);
    assert_eq!(usage.batches.len(), 24);
}

/// A batch over a day old may have been counted, its id forgotten since: refused, so a late
/// replay never counts twice.
#[tokio::test]
async fn a_batch_over_a_day_old_is_refused() {
    let storage = MemoryStorage::new();
    let line = download("network", "1.0.0", ANONYMOUS).line();
    let old = fold_batch(&storage, &batch("s", &[(NOW - 2 * DAY, line.clone())]), Settings::default(), NOW).await;
    assert!(matches!(old, Err(Error::BadRequest(ref why)) if why.contains("over a day ago")), "{old:?}");
    assert!(storage.list("").await.unwrap().is_empty());
    let recent = fold_batch(&storage, &batch("s", &[(NOW - DAY + 60, line)]), Settings::default(), NOW).await;
    assert_eq!(recent.unwrap().written, 1);
}

#[tokio::test]
async fn a_control_message_and_invalid_records_count_nothing() {
    let storage = MemoryStorage::new();
    let control = Batch { message_type: "CONTROL_MESSAGE".into(), ..Batch::default() };
    assert_eq!(fold_batch(&storage, &control, Settings::default(), NOW).await.unwrap(), Folded::default());
    let bad = r#"{"usage":{"v":1,"kind":"module","owner":"../x/y","version":"1.0.0","via":"oci","caller":"x"}}"#;
    let folded = fold_batch(&storage, &batch("s", &[(NOW, bad.into())]), Settings::default(), NOW).await.unwrap();
    assert_eq!(folded, Folded { downloads: 0, invalid: 1, written: 0, repeated: 0 });
    assert!(storage.list("").await.unwrap().is_empty());
}

#[test]
fn an_event_is_bounded_before_and_after_decompression() {
    for bad in [&b"{}"[..], b"{\"awslogs\":{\"data\":\"***\"}}", b"not json"] {
        assert!(matches!(Batch::decode(bad), Err(Error::BadRequest(_))));
    }
    // 64 MiB of zeros gzip to ~64 KB: refused at the decompressed bound, not read whole.
    use std::io::Write;
    let mut zipped = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::best());
    for _ in 0..64 {
        zipped.write_all(&vec![b' '; 1 << 20]).unwrap();
    }
    let data = base64::Engine::encode(&base64::engine::general_purpose::STANDARD, zipped.finish().unwrap());
    let event = serde_json::json!({"awslogs": {"data": data}}).to_string();
    let err = Batch::decode(event.as_bytes()).unwrap_err();
    assert!(err.to_string().contains("decompressed"), "{err}");
    // And what `encode` writes, `decode` reads.
    let b = batch("s", &[(NOW, "x".into())]);
    assert_eq!(Batch::decode(&b.encode()).unwrap(), b);
}

/// A document of a newer format is left alone (a rollback, or a warm container of the release
/// before): the batch fails, to be retried, and the document is unchanged.
#[tokio::test]
async fn a_newer_format_is_never_reset() {
    let storage = MemoryStorage::new();
    let newer = r#"{"format":2,"versions":{"1.0.0":{"total":7}}}"#;
    storage.insert(&module("network").key(), newer);
    let line = download("network", "1.0.0", ANONYMOUS).line();
    let folded = fold_batch(&storage, &batch("s", &[(NOW, line)]), Settings::default(), NOW).await;
    assert!(folded.is_err(), "{folded:?}");
    assert_eq!(storage.peek(&module("network").key()).unwrap(), newer.as_bytes());
}

#[tokio::test]
async fn an_unreadable_document_starts_again_and_says_so() {
    let storage = MemoryStorage::new();
    storage.insert(&module("network").key(), "{not json");
    let line = download("network", "1.0.0", ANONYMOUS).line();
    fold_batch(&storage, &batch("s", &[(NOW, line)]), Settings::default(), NOW).await.unwrap();
    assert_eq!(stored(&storage, &module("network")).await.downloads("1.0.0", day_of(NOW)).total, 1);
}

async fn summary(storage: &MemoryStorage, namespace: &str) -> NamespaceUsage {
    let key = crate::layout::namespace_usage(namespace);
    NamespaceUsage::parse(&storage.get(&key).await.unwrap().expect("a summary").bytes).unwrap()
}

/// The namespace's summary follows its modules' documents: every version's total and the last
/// day, the same after a delivery again, exact under concurrent batches, and a provider's
/// downloads (no namespace summary) change none.
#[tokio::test]
async fn the_namespace_summary_holds_each_modules_total() {
    let storage = MemoryStorage::new();
    let lines: Vec<(i64, String)> = [("network", "1.0.0"), ("network", "2.0.0"), ("dns", "0.1.0")]
        .iter()
        .map(|(name, version)| (NOW - DAY / 2, download(name, version, ANONYMOUS).line()))
        .collect();
    let event = batch("stream-a", &lines).encode();
    for _ in 0..2 {
        fold_event(&storage, &event, Settings::default(), NOW).await.unwrap();
    }
    let held = summary(&storage, "acme").await;
    assert_eq!((held.total("network", "aws"), held.total("dns", "aws"), held.total("vpc", "aws")), (2, 1, 0));
    // Concurrent batches of one namespace: each summary write merges, none is lost.
    let batches: Vec<Batch> = (0..16)
        .map(|i| {
            let name = if i % 2 == 0 { "network" } else { "dns" };
            batch(&format!("stream-{i}"), &[(NOW, download(name, "1.0.0", ANONYMOUS).line())])
        })
        .collect();
    let storage = &storage;
    let folds = batches.iter().map(|b| async move { fold_batch(storage, b, Settings::default(), NOW).await });
    for folded in futures_util::future::join_all(folds).await {
        folded.unwrap();
    }
    let held = summary(storage, "acme").await;
    assert_eq!((held.total("network", "aws"), held.total("dns", "aws")), (10, 9));
    assert_eq!(
        held.total("network", "aws"),
        stored(storage, &module("network")).await.all_downloads(day_of(NOW)).total
    );
}

/// Merging takes the larger numbers, so a stale total (a slower batch's, written after a
/// faster one's) never lowers the summary, and the same numbers twice change nothing.
#[test]
fn a_summary_merge_only_grows() {
    let mut held = NamespaceUsage::default();
    let seen = |total| ModuleTotal { total };
    assert!(held.merge("network/aws", &seen(5)));
    assert!(!held.merge("network/aws", &seen(5)), "the same again");
    assert!(!held.merge("network/aws", &seen(3)), "older and smaller");
    assert_eq!(held.modules["network/aws"], seen(5));
    assert!(held.merge("network/aws", &seen(6)));
    assert!(held.merge("network-peering/aws", &seen(2)) && held.merge("network/awsx", &seen(9)));
    assert_eq!((held.total("network", "aws"), held.total("network-peering", "aws")), (6, 2));
    assert_eq!((held.total("network", "awsx"), held.total("network", "aw"), held.total("net", "aws")), (9, 0, 0));
}

/// A summary that no longer parses is rebuilt from the module documents; one of a newer
/// format is left alone and the batch fails (to be retried), as for the modules' documents.
#[tokio::test]
async fn an_unreadable_summary_starts_again_and_a_newer_one_is_left_alone() {
    let key = crate::layout::namespace_usage("acme");
    let line = || vec![(NOW, download("network", "1.0.0", ANONYMOUS).line())];
    let storage = MemoryStorage::new();
    storage.insert(&key, "{damaged");
    fold_batch(&storage, &batch("s", &line()), Settings::default(), NOW).await.unwrap();
    assert_eq!(summary(&storage, "acme").await.total("network", "aws"), 1);
    let newer = r#"{"format":2,"modules":{}}"#;
    storage.insert(&key, newer);
    assert!(fold_batch(&storage, &batch("t", &line()), Settings::default(), NOW).await.is_err());
    assert_eq!(storage.peek(&key).unwrap(), newer.as_bytes());
}

/// A namespace counted before summaries existed (or whose summary was lost) gets every
/// module's total from the documents at its next fold, not only the modules that batch names.
#[tokio::test]
async fn a_missing_summary_is_rebuilt_from_the_documents() {
    let storage = MemoryStorage::new();
    let lines: Vec<(i64, String)> = (0..50).map(|_| (NOW, download("network", "1.0.0", ANONYMOUS).line())).collect();
    fold_batch(&storage, &batch("a", &lines), Settings::default(), NOW).await.unwrap();
    storage.remove(&crate::layout::namespace_usage("acme"));
    fold_batch(&storage, &batch("b", &[(NOW, download("dns", "1.0.0", ANONYMOUS).line())]), Settings::default(), NOW)
        .await
        .unwrap();
    let held = summary(&storage, "acme").await;
    assert_eq!((held.total("network", "aws"), held.total("dns", "aws")), (50, 1));
}
