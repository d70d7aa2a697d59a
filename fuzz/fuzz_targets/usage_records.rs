//! Any bytes as a CloudWatch Logs event for the usage function, and as a download record line.
//! Reading them must never panic; a record read back names a module or provider whose usage
//! document lies under `usage/` at a clean key, writes the same record again on one line, and
//! folds into a document whose windows never count more than its total; a module's namespace
//! totals lie at a clean key of their own, and merge its total exactly. Any bytes as a
//! stored namespace summary: read or refused, never a panic.
//!
//! Input: the event's part led by its length (u16, little-endian), then the line.
#![no_main]

use libfuzzer_sys::fuzz_target;
use registry::usage::{Batch, Counted, Download, NamespaceUsage, OwnerUsage, Settings};

fuzz_target!(|data: &[u8]| {
    let ([event], line) = registry::invariants::length_prefixed::<1>(data);
    if let Ok(batch) = Batch::decode(event) {
        let _ = batch.id();
    }
    let _ = NamespaceUsage::parse(event);
    let line = String::from_utf8_lossy(line);
    let Some(Ok(download)) = Download::from_line(&line) else { return };
    let key = download.counted.key();
    assert!(key.starts_with(registry::layout::USAGE_PREFIX) && key.ends_with(".json"), "{key}");
    assert!(key.bytes().all(|b| b.is_ascii_graphic()) && !key.split('/').any(|s| s.is_empty() || s == "." || s == ".."), "{key}");
    let again = download.line();
    assert!(!again.contains('\n'), "{again}");
    assert_eq!(Download::from_line(&again).and_then(Result::ok).as_ref(), Some(&download));
    // A day from the line's own bytes, anywhere around today.
    let today = 20_000;
    let day = today - i64::from(line.len() as u8) + 100;
    let mut usage = OwnerUsage::default();
    usage.fold("batch", &[(day, &download), (today, &download)], Settings::default(), today);
    let counts = usage.downloads(&download.version, today);
    assert!(counts.last_7_days <= counts.last_30_days && counts.last_30_days <= counts.last_90_days);
    assert!(counts.last_90_days <= counts.total && counts.total == 2, "{counts:?}");
    if let Counted::Module(m) = &download.counted {
        let summary_key = registry::layout::namespace_usage(&m.namespace);
        assert!(summary_key.starts_with("usage/modules/") && summary_key.matches('/').count() == 2, "{summary_key}");
        assert!(
            summary_key.bytes().all(|b| b.is_ascii_graphic())
                && !summary_key.split('/').any(|s| s.is_empty() || s == "." || s == ".." || s == ".json"),
            "{summary_key}"
        );
        assert_ne!(summary_key, key);
        let mut summary = NamespaceUsage::default();
        assert!(summary.merge(&format!("{}/{}", m.name, m.system), &usage.module_total()));
        assert_eq!(summary.total(&m.name, &m.system), 2);
    }
});
