//! The modules pull-through's client: an upstream registry's modules.v1 read as the CLI reads
//! it (discovery, versions, the download answer's location), and the archive it points at
//! fetched, bounded, checked as a published archive is and made the archive the bucket keeps
//! (a git host's archive without its top-level directory). `docs/HOW-IT-WORKS.md` ("Modules
//! pull-through") tells the whole flow.

use std::collections::BTreeSet;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use serde::Deserialize;
use sha2::{Digest, Sha256};
use url::Url;

use super::module_source::{LOCATION_MAX_BYTES, ModuleSource, parse_location, prepare};
use super::{ModuleUpstreamSettings, Upstream, UpstreamSettings};
use crate::address::UpstreamModule;
use crate::archive::Bounds;
use crate::error::Error;
use crate::http_client::Got;

/// Most versions an upstream module may list (the public registry's largest list a few
/// hundred): a longer list is refused, not kept.
pub const MAX_VERSIONS: usize = 10_000;
/// Longest versions answer read (of an upstream, and by `make publish` of this registry).
pub(crate) const VERSIONS_MAX_BYTES: usize = 4 << 20;

/// The allowed upstream module registries and the client that reaches them (one per container).
pub struct ModuleUpstream {
    registries: Upstream,
    settings: ModuleUpstreamSettings,
    /// `MODULE VERSION` → when its copy failed, and the answer it got.
    refused: std::sync::Mutex<std::collections::HashMap<String, (std::time::Instant, Error)>>,
    /// `MODULE` → when its upstream last said it has no such module (`ABSENT_FOR`).
    absent: std::sync::Mutex<std::collections::HashMap<String, std::time::Instant>>,
    /// `MODULE VERSION` → the copy of it this container is making: one at a time.
    copying: std::sync::Mutex<std::collections::HashMap<String, Arc<tokio::sync::Mutex<()>>>>,
}

/// How many failed copies are remembered (those older than `REFUSED_FOR` are dropped beyond),
/// and how many absent modules.
const REFUSED_KEPT: usize = 4096;

/// A container's turn to copy one version (`ModuleUpstream::one_copy_at_a_time`); its entry goes
/// once nobody else waits for it.
pub struct CopyTurn<'a> {
    upstream: &'a ModuleUpstream,
    key: String,
    lock: Arc<tokio::sync::Mutex<()>>,
    _guard: tokio::sync::OwnedMutexGuard<()>,
}

impl Drop for CopyTurn<'_> {
    fn drop(&mut self) {
        let mut copying = self.upstream.copying.lock().unwrap_or_else(|p| p.into_inner());
        // Held here, by the map, and by this guard's lock: nobody else is waiting.
        if Arc::strong_count(&self.lock) <= 3 {
            copying.remove(&self.key);
        }
    }
}

/// An archive fetched for a version, as the bucket keeps it.
#[derive(Debug, Clone)]
pub struct FetchedModule {
    /// Its bytes (shared, not copied, on their way to storage).
    pub bytes: bytes::Bytes,
    /// Their SHA-256, hex.
    pub sha256: String,
    /// `tar.gz` or `zip`.
    pub archive: &'static str,
    /// Where it came from, without credentials (`ModuleSource::shown`).
    pub source: String,
}

/// What a fetch got: the archive, or the news that it is larger than was asked for.
#[derive(Debug, Clone)]
pub enum Fetched {
    /// Fetched and checked.
    Archive(FetchedModule),
    /// Larger than this many bytes: left for a copier with more time (the puller).
    LargerThan(u64),
}

/// A `modules.v1` versions answer, as far as it is read.
#[derive(Deserialize)]
pub(crate) struct VersionsBody {
    pub(crate) modules: Vec<VersionsModule>,
}

#[derive(Deserialize)]
pub(crate) struct VersionsModule {
    pub(crate) versions: Vec<VersionEntry>,
}

#[derive(Deserialize)]
pub(crate) struct VersionEntry {
    pub(crate) version: String,
}

#[derive(Deserialize, Default)]
struct DownloadBody {
    #[serde(default)]
    location: Option<String>,
}

impl ModuleUpstream {
    /// The upstreams of `settings`, reached with `shared`'s time-out, CA file and version TTL;
    /// `None` when nothing may be fetched.
    pub fn new(settings: &ModuleUpstreamSettings, shared: &UpstreamSettings) -> Result<Option<Self>, Error> {
        let hosts = settings.hosts();
        let registries = UpstreamSettings { hosts, endpoints: settings.endpoints.clone(), ..shared.clone() };
        Ok(Upstream::new(&registries)?.map(|registries| ModuleUpstream {
            registries,
            settings: settings.clone(),
            refused: Default::default(),
            absent: Default::default(),
            copying: Default::default(),
        }))
    }

    /// How long a module the upstream said it does not have is answered absent without asking
    /// again: short, as one may be published upstream at any moment, but long enough that
    /// requests for a mistyped or private name do not each ask the upstream.
    pub const ABSENT_FOR: std::time::Duration = std::time::Duration::from_secs(30);

    /// Whether the upstream said within `ABSENT_FOR` that it has no `module`.
    fn recently_absent(&self, module: &UpstreamModule) -> bool {
        let clock = self.registries.clock();
        let absent = self.absent.lock().unwrap_or_else(|p| p.into_inner());
        absent.get(&module.to_string()).is_some_and(|at| clock.since(*at) < Self::ABSENT_FOR)
    }

    fn remember_absent(&self, module: &UpstreamModule) {
        let clock = self.registries.clock();
        let mut absent = self.absent.lock().unwrap_or_else(|p| p.into_inner());
        if absent.len() >= REFUSED_KEPT {
            absent.retain(|_, at| clock.since(*at) < Self::ABSENT_FOR);
        }
        if absent.len() < REFUSED_KEPT {
            absent.insert(module.to_string(), clock.now());
        }
    }

    /// The right to copy `module` `version` in this container: first downloads of one version at
    /// once copy it once, the others waiting for the first and then finding its pin. Released
    /// when the guard drops.
    pub async fn one_copy_at_a_time(&self, module: &UpstreamModule, version: &semver::Version) -> CopyTurn<'_> {
        let key = format!("{module} {version}");
        let lock = {
            let mut copying = self.copying.lock().unwrap_or_else(|p| p.into_inner());
            // Entries only the map holds: their waiters went away (a request's deadline, a
            // client gone) after the holder released, so no drop removed them.
            copying.retain(|_, lock| Arc::strong_count(lock) > 1);
            copying.entry(key.clone()).or_default().clone()
        };
        let guard = lock.clone().lock_owned().await;
        CopyTurn { upstream: self, key, lock, _guard: guard }
    }

    /// The same upstreams, with the back-off read from `clock`.
    pub fn with_clock(self, clock: crate::clock::Monotonic) -> Self {
        ModuleUpstream { registries: self.registries.with_clock(clock), ..self }
    }

    /// Whether `module` may be fetched (its host and namespace allowed).
    pub fn allows(&self, module: &UpstreamModule) -> bool {
        self.settings.allows(&module.hostname, &module.module.namespace)
    }

    /// How long a failed copy is answered with its failure without asking again.
    pub const REFUSED_FOR: std::time::Duration = std::time::Duration::from_secs(60);

    /// The failure of `module` `version`'s copy, if it failed within `REFUSED_FOR`.
    pub fn recently_refused(&self, module: &UpstreamModule, version: &semver::Version) -> Option<Error> {
        let refused = self.refused.lock().unwrap_or_else(|p| p.into_inner());
        refused
            .get(&format!("{module} {version}"))
            .filter(|(at, _)| at.elapsed() < Self::REFUSED_FOR)
            .map(|(_, e)| e.clone())
    }

    /// Remember that `module` `version`'s copy failed with `error` (an upstream's answer or
    /// failure: `BadGateway`; storage trouble is not the copy's fault and is not kept).
    pub fn refuse_for_a_while(&self, module: &UpstreamModule, version: &semver::Version, error: &Error) {
        if !matches!(error, Error::BadGateway(_)) {
            return;
        }
        let mut refused = self.refused.lock().unwrap_or_else(|p| p.into_inner());
        if refused.len() >= REFUSED_KEPT {
            refused.retain(|_, (at, _)| at.elapsed() < Self::REFUSED_FOR);
        }
        if refused.len() < REFUSED_KEPT {
            refused.insert(format!("{module} {version}"), (std::time::Instant::now(), error.clone()));
        }
    }

    /// How long a kept version list is used without asking.
    pub fn versions_ttl(&self) -> std::time::Duration {
        self.registries.versions_ttl()
    }

    /// The `Retry-After` of a download the puller is copying
    /// (`REGISTRY_UPSTREAM_MODULE_RETRY_AFTER_SECONDS`).
    pub fn retry_after(&self) -> u64 {
        self.settings.retry_after
    }

    fn module_url(&self, host: &str, base: &Url, module: &UpstreamModule, rest: &str) -> Result<Url, Error> {
        self.registries.endpoint(host, base, &format!("{}/{rest}", module.module))
    }

    /// The versions the upstream lists (canonical SemVer; a leading `v` dropped, others left
    /// out); `None` if it has no such module.
    /// An absent module is answered so without asking for `ABSENT_FOR`.
    pub async fn versions(&self, module: &UpstreamModule) -> Result<Option<BTreeSet<String>>, Error> {
        if self.recently_absent(module) {
            return Ok(None);
        }
        let host = module.hostname.as_str();
        let base = self.registries.service_base(host, "modules.v1").await?;
        let url = self.module_url(host, &base, module, "versions")?;
        let Some((_, body)) = self.registries.api::<VersionsBody>(host, url, VERSIONS_MAX_BYTES).await? else {
            self.remember_absent(module);
            return Ok(None);
        };
        let listed: usize = body.modules.iter().map(|m| m.versions.len()).sum();
        if listed > MAX_VERSIONS {
            return Err(Upstream::failed(host, format!("{module} lists {listed} versions, more than {MAX_VERSIONS}")));
        }
        let versions = body
            .modules
            .iter()
            .flat_map(|m| &m.versions)
            .filter_map(|v| {
                let raw = v.version.strip_prefix('v').unwrap_or(&v.version);
                crate::address::parse_version(raw).ok().map(|v| v.to_string())
            })
            .collect();
        Ok(Some(versions))
    }

    /// Where the upstream says `version`'s package is; `None` if it has no such version.
    pub async fn location(
        &self,
        module: &UpstreamModule,
        version: &semver::Version,
    ) -> Result<Option<ModuleSource>, Error> {
        let host = module.hostname.as_str();
        let base = self.registries.service_base(host, "modules.v1").await?;
        let url = self.module_url(host, &base, module, &format!("{version}/download"))?;
        let got = self.registries.get_with(host, url, LOCATION_MAX_BYTES, true, Some("x-terraform-get")).await?;
        let Got::Found(url, (body, header)) = got else { return Ok(None) };
        // Terraform reads only the header; OpenTofu's registry answers a JSON `location`.
        let location = match header.filter(|h| !h.is_empty()) {
            Some(header) => header,
            None => serde_json::from_slice::<DownloadBody>(&body).unwrap_or_default().location.unwrap_or_default(),
        };
        if location.is_empty() {
            return Err(Upstream::failed(host, format!("{module} {version}: the download answer names no location")));
        }
        parse_location(&location, &url, &self.settings.git_hosts)
            .map(Some)
            .map_err(|why| Upstream::failed(host, format!("{module} {version}: {why}")))
    }

    /// Fetch `source`'s archive (at most `max_bytes`: `LargerThan` past that), check it
    /// as a published archive is checked (within `bounds`) and make it the archive the bucket
    /// keeps: a git host's without its top-level directory.
    pub async fn fetch(
        &self,
        module: &UpstreamModule,
        source: &ModuleSource,
        bounds: Bounds,
    ) -> Result<Fetched, Error> {
        let host = module.hostname.as_str();
        let (url, strip_top, demanded) = match source {
            // Its origin is configuration's (`REGISTRY_UPSTREAM_GIT_HOSTS`), not the upstream's.
            ModuleSource::Git { archive, .. } => (archive.clone(), true, None),
            ModuleSource::Https { url, strip_top, sha256, .. } => {
                // As for a redirect: an upstream may not point the function at the machine's or
                // its network's own addresses, unless it is reached there itself.
                if crate::http_client::internal(url) && !self.registries.reached_internally(host) {
                    return Err(Upstream::failed(
                        host,
                        format!(
                            "{module}: the download location {} is an internal address: refused",
                            crate::http_client::shown(url)
                        ),
                    ));
                }
                (url.clone(), *strip_top, sha256.clone())
            }
        };
        let max = self.settings.max_bytes;
        let mut bytes = Vec::new();
        let mut larger = false;
        let fetched = self
            .registries
            .fetch_archive(host, url.as_str(), |chunk| {
                if bytes.len() as u64 + chunk.len() as u64 > max {
                    larger = true;
                    return Err(Error::BadGateway(format!("{module}: the archive is larger than {max} bytes")));
                }
                bytes.extend_from_slice(chunk);
                Ok(())
            })
            .await;
        if larger {
            return Ok(Fetched::LargerThan(max));
        }
        fetched?;
        if let Some(demanded) = demanded {
            let got = hex::encode(Sha256::digest(&bytes));
            if got != demanded {
                return Err(Upstream::failed(
                    host,
                    format!("{module}: the archive's SHA-256 is {got}, its location's checksum {demanded}"),
                ));
            }
        }
        let archive = source.archive_type();
        // Stopped when this fetch is: the request's budget ran out, its caller went away. A
        // blocking task is not cancelled by dropping its handle, and would read on.
        let stop = StopOnDrop(Arc::new(AtomicBool::new(false)));
        let flag = stop.0.clone();
        let checked = tokio::task::spawn_blocking(move || prepare(bytes, archive, strip_top, &bounds, &flag))
            .await
            .map_err(|e| Error::internal_from("the archive check", e))?;
        let bytes =
            checked.map_err(|why| Upstream::failed(host, format!("{module}: the archive is refused: {why}")))?;
        let sha256 = hex::encode(Sha256::digest(&bytes));
        Ok(Fetched::Archive(FetchedModule { bytes: bytes.into(), sha256, archive, source: source.shown() }))
    }
}

/// Sets its flag when dropped.
struct StopOnDrop(Arc<AtomicBool>);

impl Drop for StopOnDrop {
    fn drop(&mut self) {
        self.0.store(true, Ordering::SeqCst);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn upstream() -> ModuleUpstream {
        let settings = ModuleUpstreamSettings {
            allowed: vec![("registry.example".into(), "*".into())],
            ..ModuleUpstreamSettings::off()
        };
        ModuleUpstream::new(&settings, &UpstreamSettings::off()).unwrap().unwrap()
    }

    /// A waiter cancelled after the holder released (its request dropped: a client that hung
    /// up, a timeout around the handler) leaves no entry behind for good (the holder's `Drop`
    /// keeps it while someone waits; the next turn sweeps what nobody holds).
    #[tokio::test]
    async fn a_cancelled_waiter_leaves_no_entry_behind() {
        let upstream = upstream();
        let module = UpstreamModule::parse("registry.example", "a", "b", "c").unwrap();
        for i in 0..50u64 {
            let version = semver::Version::new(1, 0, i);
            let turn = upstream.one_copy_at_a_time(&module, &version).await;
            // A second download of the same version waits for the turn...
            let waiting = upstream.one_copy_at_a_time(&module, &version);
            let mut waiting = Box::pin(waiting);
            assert!(futures_poll_once(&mut waiting).await.is_none(), "waits");
            // ...the first finishes, then the second's request is dropped before it runs again.
            drop(turn);
            drop(waiting);
        }
        // The next turn sweeps them: at most its own entry is left once it ends.
        drop(upstream.one_copy_at_a_time(&module, &semver::Version::new(2, 0, 0)).await);
        let left = upstream.copying.lock().unwrap().len();
        assert!(left <= 1, "{left} entries left after 51 copies finished");
    }

    /// Poll a future once.
    async fn futures_poll_once<F: std::future::Future + Unpin>(f: &mut F) -> Option<F::Output> {
        std::future::poll_fn(|cx| match std::pin::Pin::new(&mut *f).poll(cx) {
            std::task::Poll::Ready(v) => std::task::Poll::Ready(Some(v)),
            std::task::Poll::Pending => std::task::Poll::Ready(None),
        })
        .await
    }

    #[tokio::test]
    async fn a_public_upstream_cannot_point_the_function_at_internal_addresses() {
        let settings = ModuleUpstreamSettings {
            allowed: vec![("registry.example".into(), "*".into())],
            ..ModuleUpstreamSettings::off()
        };
        let upstream = ModuleUpstream::new(&settings, &UpstreamSettings::off()).unwrap().unwrap();
        let module = UpstreamModule::parse("registry.example", "a", "b", "c").unwrap();
        for internal in ["https://169.254.169.254/latest.tar.gz", "https://127.0.0.1:1/m.tar.gz", "https://[::1]/m.zip"]
        {
            let base = Url::parse("https://registry.example/v1/modules/a/b/c/1.0.0/download").unwrap();
            let source = parse_location(internal, &base, &settings.git_hosts).unwrap();
            let refused = upstream.fetch(&module, &source, Bounds::UNLIMITED).await.unwrap_err();
            assert!(
                matches!(&refused, Error::BadGateway(m) if m.contains("internal address")),
                "{internal}: {refused:?}"
            );
        }
    }
}
