//! A namespace's modules' download totals (`usage/modules/NAMESPACE.json`): what the module
//! list carries (`downloads`) and sorts by (`sort=downloads`), one read per namespace instead
//! of one per module. The usage function writes it after folding the modules' own documents,
//! from what they hold then; a summary that is missing (a namespace counted before summaries
//! existed) or unreadable is rebuilt from every module document of the namespace first.
//!
//! Why a merge by maximum and no batch ids here: a module's total only grows (a document reset
//! after it stopped parsing is the one exception: the summary keeps the higher number until
//! the new document passes it). So the summary takes, per module, the larger of what it has
//! and what the module's document says: merging the same numbers twice changes nothing, two
//! functions writing in either order end at the same numbers, and a batch retried after its
//! summary write failed brings the summary up to date from the module documents.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::error::Error;

/// The format written; another is refused.
pub const SUMMARY_FORMAT: u32 = 1;

/// The totals of one namespace's modules.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct NamespaceUsage {
    /// `SUMMARY_FORMAT`.
    pub format: u32,
    /// `NAME/SYSTEM` → its totals.
    #[serde(default)]
    pub modules: BTreeMap<String, ModuleTotal>,
}

/// One module's downloads, every version together.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ModuleTotal {
    /// Ever.
    pub total: u64,
}

impl NamespaceUsage {
    /// Read a stored summary; another format is an error.
    pub fn parse(bytes: &[u8]) -> Result<Self, Error> {
        let usage: NamespaceUsage =
            serde_json::from_slice(bytes).map_err(|e| Error::Corrupt(format!("usage summary: {e}")))?;
        if usage.format != SUMMARY_FORMAT {
            return Err(Error::Corrupt(format!("usage summary format {} (this reads {SUMMARY_FORMAT})", usage.format)));
        }
        Ok(usage)
    }

    /// Take `NAME/SYSTEM`'s totals where they are larger than those held. `false`: nothing
    /// changed (no write needed).
    pub fn merge(&mut self, module: &str, seen: &ModuleTotal) -> bool {
        self.format = SUMMARY_FORMAT;
        let held = self.modules.entry(module.to_string()).or_default();
        let before = held.total;
        held.total = held.total.max(seen.total);
        held.total != before
    }

    /// `NAME/SYSTEM`'s downloads ever (0 when none was counted).
    pub fn total(&self, name: &str, system: &str) -> u64 {
        self.modules.get(&format!("{name}/{system}")).map_or(0, |m| m.total)
    }
}
