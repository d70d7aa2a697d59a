//! Invariants of the request path that hold for any input, checked by the property tests
//! (`tests/library/properties.rs`) and the fuzz targets (`fuzz/`) alike, so both test the same thing.
//! Not used at run time.

use http::Method;

use crate::layout::{self, ObjectKind};
use crate::oci::name::{OciRoute, Reference, Repository};
use crate::router::BasePaths;
use crate::router::{self, Methods, Query, Route};

/// A fuzz input cut into `N` parts, each led by its length (u16, little-endian; cut short at
/// the end of the input), and what follows them: how the fuzz targets that read several
/// documents at once split their bytes.
pub fn length_prefixed<const N: usize>(data: &[u8]) -> ([&[u8]; N], &[u8]) {
    let mut rest = data;
    let parts = std::array::from_fn(|_| {
        if rest.len() < 2 {
            return std::mem::take(&mut rest);
        }
        let n = usize::from(u16::from_le_bytes([rest[0], rest[1]])).min(rest.len() - 2);
        let (part, after) = rest[2..].split_at(n);
        rest = after;
        part
    });
    (parts, rest)
}

/// A key the layout may hand to S3: ASCII, printable, no traversal, no empty segment, no
/// encoding left to interpret, under a prefix the registry owns.
pub fn key_is_clean(key: &str) -> bool {
    segments_clean(key)
        && [layout::MODULES_PREFIX, layout::PROVIDERS_PREFIX, layout::INDEXED_PREFIX, layout::UPSTREAM_MODULES_PREFIX]
            .iter()
            .any(|p| key.starts_with(p))
}

/// Printable ASCII, no escapes, no empty, `.` or `..` segment.
fn segments_clean(key: &str) -> bool {
    key.bytes().all(|b| b.is_ascii_graphic())
        && !key.contains('%')
        && !key.contains('\\')
        && key.split('/').all(|s| !s.is_empty() && s != "." && s != "..")
}

/// Whether a 401's challenge for `raw_path` names `repository` as its scope, in characters a
/// quoted header value holds as they are.
fn challenge_safe(raw_path: &str, repository: &crate::oci::name::Repository) -> bool {
    let name = repository.name();
    let plain = name.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b"._-/".contains(&b));
    plain && crate::oci::name::repository_of(raw_path).as_ref() == Some(repository)
}

/// Route `target` (any string: a raw path, and after the first `?` a raw query): if it is
/// accepted, the path had nothing encoded or dot-segmented in it, only the list, search and
/// catalog page routes and OCI's tags/list and token took a query (and a listing that reads
/// back the same from the `next_url` it would give), a 401's challenge would name an OCI
/// repository plainly, only the sign-in and sign-out forms a POST, and the keys it leads to
/// are clean and classify back to the same module or provider. `Err` says which invariant
/// broke.
/// Long on purpose: one list of invariants, each a few lines, checked in order.
pub fn check_request_path(target: &str) -> Result<(), String> {
    let paths = BasePaths::default();
    let (raw_path, query) = match target.split_once('?') {
        Some((path, query)) => (path, Some(query)),
        None => (target, None),
    };
    for method in [Method::GET, Method::HEAD, Method::POST] {
        let Ok(route) = router::route(&method, raw_path, query, &paths) else { continue };
        let form = route.def().methods == Methods::Post;
        if (method == Method::POST) != form {
            return Err(format!("{raw_path:?}: {method} accepted as {}", route.name()));
        }
        if raw_path.contains('%') || raw_path.contains('\\') {
            return Err(format!("{raw_path:?}: accepted with an encoding or a backslash"));
        }
        if raw_path.split('/').any(|s| s == ".." || s == ".") {
            return Err(format!("{raw_path:?}: accepted with a dot segment"));
        }
        let reads_query = match &route {
            Route::Oci { oci } => matches!(oci, OciRoute::Tags { .. } | OciRoute::Token),
            _ => route.def().query != Query::None,
        };
        if query.is_some_and(|q| !q.is_empty()) && !reads_query {
            return Err(format!("{target:?}: a query string accepted by {}", route.name()));
        }
        let (key, expected) = match &route {
            Route::Discovery {}
            | Route::SignIn {}
            | Route::SignInSubmit {}
            | Route::SignOut {}
            | Route::PageAsset { .. }
            // The MCP endpoint's path names nothing: its tools read by their arguments'
            // grammar (`mcp::tools`, the `mcp_messages` fuzz target).
            | Route::Mcp {}
            | Route::McpResourceMetadata {} => {
                continue;
            }
            Route::UpstreamModulePage { module: m } => {
                let key = layout::upstream_module_pins(m);
                let under =
                    key.starts_with(&format!("{}{}", layout::INDEXED_PREFIX, layout::upstream_module_prefix(m)));
                if !key_is_clean(&key) || !under || layout::classify(&key).is_some() {
                    return Err(format!("{target:?} -> pins key {key:?} unclean, outside its module or taken"));
                }
                continue;
            }
            Route::CatalogPage { listing } => {
                let next = crate::query::Listing::parse_page(Some(&listing.query_at(listing.offset)));
                if next.as_ref() != Ok(listing) {
                    return Err(format!("{target:?}: {listing:?} reads back from its own query as {next:?}"));
                }
                continue;
            }
            Route::ModulePage { module: m } => (layout::module_manifest(m), ObjectKind::ModuleManifest(m.clone())),
            Route::ModuleVersionPage { module: m, version: v } => {
                let docs = layout::module_docs(m, v);
                if !key_is_clean(&docs) || layout::classify(&docs).is_some() {
                    return Err(format!("{target:?} -> docs key {docs:?} unclean or taken for another object"));
                }
                (layout::module_manifest(m), ObjectKind::ModuleManifest(m.clone()))
            }
            Route::UpgradePage { module: m, version: v, from } => {
                for docs in [layout::module_docs(m, v), layout::module_docs(m, from)] {
                    if !key_is_clean(&docs) || layout::classify(&docs).is_some() {
                        return Err(format!("{target:?} -> docs key {docs:?} unclean or taken for another object"));
                    }
                }
                (layout::module_manifest(m), ObjectKind::ModuleManifest(m.clone()))
            }
            Route::ProviderPage { provider: p } | Route::ProviderVersionPage { provider: p, .. } => {
                (layout::provider_index(p), ObjectKind::ProviderIndex(p.clone()))
            }
            Route::ModuleList { listing } | Route::ModuleSearch { listing } => {
                let search = matches!(route, Route::ModuleSearch { .. });
                let next = crate::query::Listing::parse(Some(&listing.query_at(listing.offset)), search);
                if next.as_ref() != Ok(listing) {
                    return Err(format!("{target:?}: {listing:?} reads back from its own query as {next:?}"));
                }
                continue;
            }
            Route::ModuleLatest { module: m } => (layout::module_manifest(m), ObjectKind::ModuleManifest(m.clone())),
            Route::ModuleDetails { module: m, version: v } => {
                let docs = layout::module_docs(m, v);
                if !key_is_clean(&docs) || layout::classify(&docs).is_some() {
                    return Err(format!("{target:?} -> docs key {docs:?} unclean or taken for another object"));
                }
                (layout::module_manifest(m), ObjectKind::ModuleManifest(m.clone()))
            }
            Route::UpstreamModuleVersions { module: m } | Route::UpstreamModuleDownload { module: m, .. } => {
                let keys = match &route {
                    Route::UpstreamModuleDownload { version: v, .. } => {
                        let archive = layout::upstream_module_archive(m, v, &"0".repeat(64), "tar.gz");
                        if layout::upstream_module_archive_parts(&archive)
                            .is_none_or(|(am, av, _)| am != *m || av != *v)
                        {
                            return Err(format!("{target:?} -> archive key {archive:?} does not read back"));
                        }
                        vec![layout::upstream_module_pin(m, v), archive]
                    }
                    _ => vec![layout::upstream_module_index(m)],
                };
                for key in keys {
                    let under = key.starts_with(&layout::upstream_module_prefix(m));
                    if !key_is_clean(&key) || !under || layout::classify(&key).is_some() {
                        return Err(format!("{target:?} -> key {key:?} unclean, outside its module or taken"));
                    }
                }
                continue;
            }
            Route::ModuleVersions { module: m } | Route::ModuleDownload { module: m, .. } => {
                (layout::module_manifest(m), ObjectKind::ModuleManifest(m.clone()))
            }
            Route::MirrorIndex { provider: p } => (layout::provider_index(p), ObjectKind::ProviderIndex(p.clone())),
            Route::MirrorVersion { provider: p, version: v } => (
                layout::provider_version(p, v),
                ObjectKind::ProviderVersion { provider: p.clone(), version: v.clone() },
            ),
            Route::Oci { oci: OciRoute::Base | OciRoute::Token } => continue,
            Route::Oci {
                oci:
                    OciRoute::Tags { repository, .. }
                    | OciRoute::Manifest { repository, .. }
                    | OciRoute::Blob { repository, .. },
            } if !challenge_safe(raw_path, repository) => {
                return Err(format!("{raw_path:?}: the challenge's scope would not name {repository:?} plainly"));
            }
            Route::Oci { oci: OciRoute::Tags { repository: Repository::Module(m), .. } } => {
                (layout::module_manifest(m), ObjectKind::ModuleManifest(m.clone()))
            }
            // A module's tags and digests: keys under `indexed/oci/`, clean, never another object's.
            Route::Oci {
                oci:
                    OciRoute::Manifest { repository: Repository::Module(m), .. }
                    | OciRoute::Blob { repository: Repository::Module(m), .. },
            } => {
                // The keys the route reads: a tag's object, or a digest's manifest and blob pointer.
                let keys = match &route {
                    Route::Oci { oci: OciRoute::Manifest { reference: Reference::Tag(v), .. } } => {
                        vec![layout::oci_module_tag(m, &crate::oci::name::tag(v))]
                    }
                    Route::Oci { oci: OciRoute::Manifest { reference: Reference::Latest, .. } } => {
                        vec![layout::oci_module_tag(m, crate::oci::name::LATEST)]
                    }
                    Route::Oci {
                        oci:
                            OciRoute::Manifest { reference: Reference::Digest(d), .. } | OciRoute::Blob { digest: d, .. },
                    } => vec![layout::oci_module_manifest(m, d), layout::oci_module_blob(m, d)],
                    _ => continue,
                };
                for key in keys {
                    if !key_is_clean(&key) || layout::classify(&key).is_some() || !key.starts_with(layout::OCI_PREFIX) {
                        return Err(format!("{target:?} -> OCI key {key:?} unclean or taken for another object"));
                    }
                }
                continue;
            }
            Route::Oci { oci: OciRoute::Tags { repository: Repository::Provider(p), .. } } => {
                (layout::provider_index(p), ObjectKind::ProviderIndex(p.clone()))
            }
            // A provider has no `latest`: answered absent without a read.
            Route::Oci {
                oci: OciRoute::Manifest { repository: Repository::Provider(_), reference: Reference::Latest },
            } => {
                continue;
            }
            Route::Oci {
                oci: OciRoute::Manifest { repository: Repository::Provider(p), reference: Reference::Tag(v) },
            } => (
                layout::provider_version(p, v),
                ObjectKind::ProviderVersion { provider: p.clone(), version: v.clone() },
            ),
            // Content-addressed keys under `indexed/oci/`: clean, and never another object's.
            Route::Oci {
                oci:
                    OciRoute::Manifest { repository: Repository::Provider(p), reference: Reference::Digest(d) }
                    | OciRoute::Blob { repository: Repository::Provider(p), digest: d },
            } => {
                for key in [layout::oci_manifest(p, d), layout::oci_blob(p, d)] {
                    if !key_is_clean(&key) || layout::classify(&key).is_some() || !key.starts_with(layout::OCI_PREFIX) {
                        return Err(format!("{target:?} -> OCI key {key:?} unclean or taken for another object"));
                    }
                }
                continue;
            }
            // providers.v1 names providers of the registry's own host (any valid one).
            Route::ProviderVersions { name: n } => {
                let p = n.at("registry.example.com");
                (layout::provider_index(&p), ObjectKind::ProviderIndex(p))
            }
            Route::ProviderDownload { name: n, version: v, .. } => {
                let p = n.at("registry.example.com:8443");
                (
                    layout::provider_version(&p, v),
                    ObjectKind::ProviderVersion { provider: p.clone(), version: v.clone() },
                )
            }
        };
        if !key_is_clean(&key) {
            return Err(format!("{raw_path:?} -> unclean key {key:?}"));
        }
        if layout::classify(&key) != Some(expected) {
            return Err(format!("{raw_path:?} -> {key:?} does not classify back to its owner"));
        }
    }
    Ok(())
}

/// Classify a bucket key (publishers choose keys: hostile input to the indexer). Whatever it
/// classifies as, the keys the indexer derives from it are clean.
pub fn check_bucket_key(key: &str) -> Result<(), String> {
    check_upstream_module_key(key)?;
    let Some(kind) = layout::classify(key) else { return Ok(()) };
    let manifest = match kind.owner() {
        layout::Owner::Module(m) => layout::module_manifest(&m),
        layout::Owner::Provider(p) => layout::provider_index(&p),
    };
    if !key_is_clean(&manifest) {
        return Err(format!("{key:?} -> unclean manifest key {manifest:?}"));
    }
    // A bundle names exactly the archive beside it: its key is the one the layout writes.
    if let ObjectKind::Bundle { owner: layout::Owner::Module(m), version, extension } = &kind
        && layout::module_bundle(m, version, extension) != key
    {
        return Err(format!("{key:?}: a bundle's key does not round-trip"));
    }
    if let ObjectKind::ProviderArchive { provider, version, platform } = &kind {
        let version_key = layout::provider_version(provider, version);
        if !key_is_clean(&version_key) {
            return Err(format!("{key:?} -> unclean derived key"));
        }
        if layout::provider_archive_name(provider, version, platform) != key.rsplit('/').next().unwrap_or_default() {
            return Err(format!("{key:?}: archive name does not round-trip"));
        }
    }
    Ok(())
}

/// A key of the modules pull-through that names a module pull record is exactly the key the
/// layout writes for it, invokes the puller and nothing else, and is no pin or refusal record:
/// no key wakes both the indexer and the puller, or names another module than it holds.
fn check_upstream_module_key(key: &str) -> Result<(), String> {
    let Some((module, version)) = layout::upstream_module_pull_release(key) else { return Ok(()) };
    if layout::upstream_module_pull(&module, &version) != key || !segments_clean(key) {
        return Err(format!("{key:?}: a module pull record's key does not round-trip"));
    }
    if !layout::notifies_puller(key) || layout::notifies(key) || layout::upstream_module_record(key).is_some() {
        return Err(format!("{key:?}: a module pull record that is not only the puller's"));
    }
    Ok(())
}

/// HTML the pages write is inert: every `<` opens a tag (text has them escaped), no tag is one
/// that runs or embeds anything beyond the page's own (`allowed`: the frame's one script and
/// its forms, by name and count), no attribute is an event handler or a style, and every URL
/// is http(s), mailto, or this registry's own (`/…`, `#…`).
pub fn check_inert_html(html: &str, allowed: &[(&str, usize)]) -> Result<(), String> {
    const BANNED: [&str; 12] =
        ["script", "iframe", "frame", "object", "embed", "form", "input", "style", "svg", "math", "base", "meta"];
    let mut seen: std::collections::BTreeMap<String, usize> = std::collections::BTreeMap::new();
    let mut rest = html;
    while let Some(at) = rest.find('<') {
        let tag_text = &rest[at + 1..];
        let end =
            tag_text.find('>').ok_or_else(|| format!("unclosed tag at {:?}", &tag_text[..tag_text.len().min(80)]))?;
        let tag = &tag_text[..end];
        rest = &tag_text[end + 1..];
        if tag.starts_with('/') || tag.starts_with('!') {
            if tag.starts_with("!--") {
                return Err(format!("a comment in the output: <{tag}>"));
            }
            continue;
        }
        let name: String =
            tag.chars().take_while(|c| c.is_ascii_alphanumeric()).collect::<String>().to_ascii_lowercase();
        if BANNED.contains(&name.as_str()) {
            *seen.entry(name.clone()).or_default() += 1;
        }
        // Attributes as the serialiser writes them: ` name="value"` (quotes in values escaped).
        let mut attributes = &tag[name.len()..];
        loop {
            attributes = attributes.trim_start_matches([' ', '/']);
            if attributes.is_empty() {
                break;
            }
            let (attribute, after) = match attributes.find(['=', ' ']) {
                Some(i) if attributes.as_bytes()[i] == b'=' => (&attributes[..i], &attributes[i + 1..]),
                Some(i) => (&attributes[..i], &attributes[i..]),
                None => (attributes, ""),
            };
            let attribute = attribute.to_ascii_lowercase();
            if attribute.starts_with("on") || attribute == "style" || attribute == "srcdoc" || attribute == "formaction"
            {
                return Err(format!("attribute {attribute:?} in <{tag}>"));
            }
            let (value, after) = match after.strip_prefix('"') {
                Some(v) => {
                    let close = v.find('"').ok_or_else(|| format!("unclosed attribute in <{tag}>"))?;
                    (&v[..close], &v[close + 1..])
                }
                None if after.starts_with(' ') || after.is_empty() => ("", after),
                None => return Err(format!("unquoted attribute {attribute:?} in <{tag}>")),
            };
            if matches!(attribute.as_str(), "href" | "src" | "action" | "xlink:href" | "cite" | "poster") {
                let v = value.trim().to_ascii_lowercase();
                let safe = ["http://", "https://", "mailto:", "/", "#"].iter().any(|p| v.starts_with(p))
                    && !v.starts_with("//");
                if !safe {
                    return Err(format!("URL {value:?} in <{tag}>"));
                }
            }
            attributes = after;
        }
    }
    for (name, count) in &seen {
        let most = allowed.iter().find(|(n, _)| n == name).map_or(0, |(_, c)| *c);
        if *count > most {
            return Err(format!("{count} <{name}> tags (at most {most})"));
        }
    }
    Ok(())
}

/// What a page of the frame may hold besides inert HTML: its one script (`copy.js`), the
/// search and sign-out forms, the search box and the `<meta>` lines.
pub const FRAME_TAGS: [(&str, usize); 4] = [("script", 1), ("form", 2), ("input", 1), ("meta", 2)];

/// Any text as a README, an input's description, type and default, and an output's
/// description: the README renders inert, and so does the whole module page.
pub fn check_page_text(text: &str) -> Result<(), String> {
    check_inert_html(&crate::web::markdown::render(text), &[])?;
    let input = crate::module_docs::Input {
        name: "x".into(),
        r#type: Some(text.into()),
        description: Some(text.into()),
        default: Some(text.into()),
        required: true,
        sensitive: false,
        non_nullable: false,
    };
    let output = crate::module_docs::Output { name: "y".into(), description: Some(text.into()), sensitive: true };
    let root = crate::module_docs::ModuleDir {
        readme: Some(text.into()),
        inputs: vec![input],
        outputs: vec![output],
        ..Default::default()
    };
    let docs = crate::module_docs::ModuleDocs { root, warnings: vec![text.into()], ..Default::default() };
    let module = crate::address::ModuleAddress::parse("acme", "vpc", "aws").map_err(|e| e.to_string())?;
    let entry = crate::manifest::ModuleVersion {
        judged: Some(crate::manifest::Judgment { note: Some(text.into()), ..Default::default() }),
        deprecation: Some(crate::manifest::Deprecation {
            reason: text.into(),
            replacement: Some(text.into()),
            etag: String::new(),
        }),
        sha256: String::new(),
        etag: String::new(),
        ..crate::manifest::ModuleVersion::example("1.0.0", "modules/acme/vpc/aws/1.0.0.tar.gz")
    };
    let manifest = crate::manifest::ModuleManifest::new(vec![entry.clone()]);
    let place = crate::web::pages::Place {
        host: "registry.example.com",
        mirror_path: "/v1/mirror/",
        modules_path: "/v1/modules/",
    };
    // A change whose name and detail are the text, breaking for the same reason.
    let change = crate::module_docs::compare::Change {
        path: text.into(),
        subject: crate::module_docs::compare::Subject::Input,
        name: text.into(),
        kind: crate::module_docs::compare::Kind::Changed,
        detail: text.into(),
        breaking: Some(text.into()),
    };
    let changes = [change];
    // A caller's name is a token's or an OIDC subject's: shown to admins, inert too.
    let caller = crate::usage::Caller { caller: text.into(), downloads: 1, last: text.into() };
    let downloads = crate::usage::Shown { callers: Some(vec![caller]), ..crate::usage::Shown::default() };
    let shown = crate::web::pages::Shown {
        entry: &entry,
        manifest: &manifest,
        docs: Some(&docs),
        changes: Some(("0.9.0", &changes)),
        downloads: Some(&downloads),
    };
    let page = crate::web::pages::module(&place, &module, &shown, true);
    check_inert_html(&page, &FRAME_TAGS)?;
    check_inert_html(&crate::web::changes::upgrade(&module, &entry, "0.9.0", Some(&changes), true), &FRAME_TAGS)?;
    // An upstream module's page: its pins are the indexer's, but hold what an upstream said
    // (the source) and are read back from the bucket.
    let pin = crate::upstream::module_records::ModulePin {
        module: text.into(),
        version: text.into(),
        sha256: text.into(),
        size: 1,
        archive: text.into(),
        source: text.into(),
        copied_at: text.into(),
    };
    let pins = crate::upstream::module_records::ModulePins { pins: vec![pin.clone(), pin], refusals: Vec::new() };
    let upstream =
        crate::address::UpstreamModule::parse("registry.example", "acme", "vpc", "aws").map_err(|e| e.to_string())?;
    check_inert_html(&crate::web::upstream::module(text, text, &upstream, &pins, true), &FRAME_TAGS)
}

/// Any text, repeated into every field of a module larger than any answer can hold (20
/// submodules and 20 examples, each with 100 inputs and 100 outputs, `text` repeated to 1,024
/// characters in each field and 65,536 in each README, at most 64 and 1,024 times: about 25 MB
/// of docs for a text of 16 characters or more): the details API's answer stays within
/// `browse::DETAILS_MAX` bytes, the MCP `get_module_details` result within
/// `mcp::answers::ANSWER_MAX` with no field of its structured JSON holding a character a
/// one-line field may not (README aside, which is fenced), and the page within
/// `web::PAGE_BYTES_MAX`.
pub fn check_answers_bounded(text: &str) -> Result<(), String> {
    let field: String = text.chars().cycle().take(1_024.min(text.chars().count() * 64)).collect();
    let readme: String = text.chars().cycle().take(65_536.min(text.chars().count() * 1_024)).collect();
    let input = |i: usize| crate::module_docs::Input {
        name: format!("{i}{field}"),
        r#type: Some(field.clone()),
        description: Some(field.clone()),
        default: Some(field.clone()),
        required: i.is_multiple_of(2),
        sensitive: false,
        non_nullable: false,
    };
    let output = |i: usize| crate::module_docs::Output {
        name: format!("{i}{field}"),
        description: Some(field.clone()),
        sensitive: false,
    };
    let dir = |path: String| crate::module_docs::ModuleDir {
        path,
        readme: Some(readme.clone()),
        inputs: (0..100).map(input).collect(),
        outputs: (0..100).map(output).collect(),
        ..Default::default()
    };
    let docs = crate::module_docs::ModuleDocs {
        root: dir(String::new()),
        submodules: (0..20).map(|i| dir(format!("modules/{i}{field}"))).collect(),
        examples: (0..20).map(|i| dir(format!("examples/{i}{field}"))).collect(),
        warnings: vec![field.clone(); 50],
        ..Default::default()
    };
    let module = crate::address::ModuleAddress::parse("acme", "vpc", "aws").map_err(|e| e.to_string())?;
    let entry = crate::manifest::ModuleVersion {
        deprecation: Some(crate::manifest::Deprecation {
            reason: field.clone(),
            replacement: Some(field.clone()),
            etag: String::new(),
        }),
        ..crate::manifest::ModuleVersion::example("1.0.0", "modules/acme/vpc/aws/1.0.0.tar.gz")
    };
    let manifest = crate::manifest::ModuleManifest::new(vec![entry.clone()]);
    let details = crate::browse::details(&module, &entry, &manifest, Some(&docs), None, &Default::default());
    let size = crate::bounded::json_len(&details);
    if size > crate::browse::DETAILS_MAX {
        return Err(format!("details: {size} bytes"));
    }
    let result =
        crate::mcp::answers::module_details("registry.example.com", &module, &entry, &manifest, Some(&docs)).result();
    let size = crate::bounded::json_len(&result);
    if size > crate::mcp::answers::ANSWER_MAX || result["isError"] != serde_json::json!(false) {
        return Err(format!("MCP result: {size} bytes, isError {}", result["isError"]));
    }
    one_line_fields(&result["structuredContent"], "structuredContent")?;
    let place = crate::web::pages::Place {
        host: "registry.example.com",
        mirror_path: "/v1/mirror/",
        modules_path: "/v1/modules/",
    };
    let shown = crate::web::pages::Shown {
        entry: &entry,
        manifest: &manifest,
        docs: Some(&docs),
        changes: None,
        downloads: None,
    };
    let page = crate::web::pages::module(&place, &module, &shown, true);
    if page.len() > crate::web::PAGE_BYTES_MAX {
        return Err(format!("page: {} bytes", page.len()));
    }
    Ok(())
}

/// No string under `value` (but a README's) holds a character a one-line field may not.
fn one_line_fields(value: &serde_json::Value, path: &str) -> Result<(), String> {
    match value {
        serde_json::Value::String(s)
            if s.chars().any(|c| c.is_whitespace() && c != ' ' || crate::printed::refused(c).is_some()) =>
        {
            Err(format!("{path} holds {s:.60?}"))
        }
        serde_json::Value::Object(map) => {
            map.iter().filter(|(k, _)| *k != "readme").try_for_each(|(k, v)| one_line_fields(v, &format!("{path}.{k}")))
        }
        serde_json::Value::Array(items) => items.iter().try_for_each(|v| one_line_fields(v, &format!("{path}[]"))),
        _ => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::length_prefixed;

    /// The text that cost most before every answer had one budget: controls (six bytes each
    /// in JSON), quotes, four-byte letters, blanks a one-line field drops.
    #[test]
    fn the_costliest_text_in_every_field_keeps_every_answer_bounded() {
        for text in ["\u{1}", "\"\\", "\u{1f980}", " \n\t\u{202e}", "x", "```\n## Heading\n"] {
            super::check_answers_bounded(text).unwrap_or_else(|e| panic!("{text:?}: {e}"));
        }
    }

    #[test]
    fn fuzz_inputs_split_into_length_prefixed_parts() {
        let ([a, b], rest) = length_prefixed::<2>(&[2, 0, b'x', b'y', 9, 0, b'z', b'!']);
        assert_eq!((a, b, rest), (&b"xy"[..], &b"z!"[..], &b""[..]), "a length past the end is cut short");
        let ([a, b, c], rest) = length_prefixed::<3>(&[0, 0, 7]);
        assert_eq!((a, b, c, rest), (&b""[..], &[7u8][..], &b""[..], &b""[..]));
        let ([a], rest) = length_prefixed::<1>(&[1, 0, 5, 6, 7]);
        assert_eq!((a, rest), (&[5u8][..], &[6u8, 7][..]));
    }

    /// What the fuzzers found, kept so it stays fixed.
    #[test]
    fn fuzz_findings_stay_fixed() {
        // 2026-11-25, web_page: an autolink whose "URL" has a scheme but no `//`; ammonia kept
        // it as https. Links are now kept only when absolute.
        let autolink = "<https:E//link:href=\"javascript:alert(1)\">x</> asax</a->";
        super::check_page_text(autolink).unwrap();
    }
}
