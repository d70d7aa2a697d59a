//! The local registry's usage function. The read side writes its download records to a
//! channel (`registry::usage::Sink::Channel`) instead of a Lambda's log; here they are
//! gathered into batches as a CloudWatch Logs subscription gathers the log's lines (a short
//! window, then the batch), encoded as its event, and folded by the same code the usage
//! Lambda runs (`registry::usage::fold_event`), retried as Lambda retries a failed event.

use std::time::Duration;

use registry::storage::S3Storage;
use registry::usage::{Batch, LogEvent, Settings, Sink};
use tokio::sync::{mpsc, watch};
use tokio::task::JoinHandle;

/// How long lines gather before their batch goes (CloudWatch Logs waits a few seconds; here
/// short, so that a count shows soon after the download).
const WINDOW: Duration = Duration::from_millis(200);
/// Lines in one batch at most.
const BATCH_LINES: usize = 1_000;
/// Tries of one batch (Lambda: the first and two retries).
const ATTEMPTS: u32 = 3;

/// The sink the app writes to, and the task that folds what arrives there until `shutdown`
/// (and then what is left).
pub fn start(storage: S3Storage, settings: Settings, mut shutdown: watch::Receiver<bool>) -> (Sink, JoinHandle<()>) {
    let (sender, mut lines) = mpsc::unbounded_channel::<String>();
    let task = tokio::spawn(async move {
        let stream = format!("local/{}", registry::clock::now_unix());
        let mut sequence = 0u64;
        loop {
            let first = tokio::select! {
                line = lines.recv() => line,
                _ = shutdown.changed() => None,
            };
            let Some(first) = first else { break };
            let mut batch = vec![first];
            let until = tokio::time::Instant::now() + WINDOW;
            while batch.len() < BATCH_LINES {
                match tokio::time::timeout_at(until, lines.recv()).await {
                    Ok(Some(line)) => batch.push(line),
                    Ok(None) | Err(_) => break,
                }
            }
            fold(&storage, settings, &stream, &mut sequence, batch).await;
        }
        // What arrived before the stop is still counted.
        let mut rest = Vec::new();
        while let Ok(line) = lines.try_recv() {
            rest.push(line);
        }
        if !rest.is_empty() {
            fold(&storage, settings, &stream, &mut sequence, rest).await;
        }
    });
    (Sink::Channel(sender), task)
}

/// One batch, as CloudWatch Logs would deliver it: every line an event with its own id.
async fn fold(storage: &S3Storage, settings: Settings, stream: &str, sequence: &mut u64, lines: Vec<String>) {
    let now_ms = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_millis() as i64);
    let log_events = lines
        .into_iter()
        .map(|message| {
            *sequence += 1;
            LogEvent { id: format!("{sequence:020}"), timestamp: now_ms, message }
        })
        .collect();
    let batch = Batch {
        message_type: "DATA_MESSAGE".into(),
        log_group: "/local/registry".into(),
        log_stream: stream.into(),
        log_events,
    };
    let event = batch.encode();
    for attempt in 1..=ATTEMPTS {
        match registry::usage::fold_event(storage, &event, settings, registry::clock::now_unix()).await {
            Ok(folded) => {
                tracing::debug!(?folded, "usage folded");
                return;
            }
            Err(e) => tracing::warn!(attempt, error = %registry::error::chain(&e), "usage batch not folded"),
        }
    }
}
