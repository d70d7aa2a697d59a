//! Modules built against the answers' bounds, found by a red-team review: each holds a
//! documented property (an answer within its bound, publisher text on one line, a snippet that
//! parses as one block) for a module the indexer accepts that once broke it.

#![allow(clippy::unwrap_used)]

use registry::archive::KeptFile;
use registry::auth::{TokenStore, manage};
use registry::index::{Indexer, Limits};
use registry::manifest::{Deprecation, Judgment, ModuleManifest, ModuleVersion};
use registry::mcp::answers;
use registry::module_docs::compare::Comparison;
use registry::module_docs::{self, Input, ModuleDir, ModuleDocs, Output};
use registry::storage::MemoryStorage;
use registry::{App, Config, Request};
use serde_json::{Value, json};

const SECRET: &str = "trg_hostile_modules_0123456789abcdef";

async fn app_with(modules: &[(&str, Vec<(String, String)>)]) -> App<MemoryStorage> {
    let storage = MemoryStorage::new();
    let indexer = Indexer::new(&storage, Limits::default());
    for (name, files) in modules {
        let files: Vec<(&str, &str)> = files.iter().map(|(p, c)| (p.as_str(), c.as_str())).collect();
        let key = format!("modules/acme/{name}/aws/1.0.0.tar.gz");
        storage.insert(&key, registry::testing::module_tar_gz(&files));
        indexer.on_object_changed(&key).await.unwrap();
        assert!(storage.peek(&format!("indexed/modules/acme/{name}/aws/manifest.json")).is_some(), "{name} published");
    }
    let record = manage::record("reader", SECRET, vec!["acme".into()], vec![], None);
    storage
        .insert(registry::layout::TOKENS, serde_json::to_vec(&TokenStore { format: 1, tokens: vec![record] }).unwrap());
    let mut config = Config::new("bucket");
    config.hostname = Some("registry.example.com".into());
    App::builder(config, storage).build().unwrap()
}

fn bearer() -> String {
    format!("Bearer {SECRET}")
}

/// 3 files of 1,000 distinct 256-character provider names (`.tf.json` keys are any string; ~1 MB
/// each, within KEPT_FILE_BYTES): the details API once answered ~3 MB (the head was shown
/// whatever the budget said); now within DETAILS_MAX, `providers_count` saying how many.
#[tokio::test]
async fn a_module_requiring_thousands_of_providers_gets_details_within_the_bound() {
    let mut files = vec![("main.tf".to_string(), "variable \"x\" {}\n".to_string())];
    for f in 0..3 {
        let mut map = serde_json::Map::new();
        for i in 0..1000 {
            map.insert(format!("{f}{i:04}{}", "\u{1f980}".repeat(250)), json!("1.0"));
        }
        let doc = json!({"terraform": {"required_providers": map}}).to_string();
        assert!(doc.len() < registry::archive::KEPT_FILE_BYTES, "{}", doc.len());
        files.push((format!("providers{f}.tf.json"), doc));
    }
    let app = app_with(&[("prov", files)]).await;
    let auth = bearer();
    let details = app.handle(&Request::get("/v1/modules/acme/prov/aws/1.0.0").authorization(Some(&auth))).await;
    assert_eq!(details.status, 200);
    let body: Value = serde_json::from_slice(&details.body).unwrap();
    eprintln!(
        "details {} bytes (DETAILS_MAX {}), providers {}, truncated {}",
        details.body.len(),
        registry::browse::DETAILS_MAX,
        body["providers"].as_array().map_or(0, Vec::len),
        body["truncated"]
    );
    assert!(details.body.len() <= registry::browse::DETAILS_MAX, "details {} bytes", details.body.len());
}

/// A 900 KB `required_version` of `'` (each `&#39;`, 5 bytes): the page once was ~4.5 MB (the
/// head printed it uncut); now within PAGE_BYTES_MAX.
#[tokio::test]
async fn a_huge_required_version_leaves_the_page_within_its_bound() {
    let tf = format!("terraform {{\n  required_version = \"{}\"\n}}\n", "'".repeat(900_000));
    let app = app_with(&[("rv", vec![("main.tf".into(), tf)])]).await;
    let auth = bearer();
    let page = app.handle(&Request::get("/ui/modules/acme/rv/aws/1.0.0").authorization(Some(&auth))).await;
    assert_eq!(page.status, 200);
    eprintln!("page {} bytes (PAGE_BYTES_MAX {})", page.body.len(), registry::web::PAGE_BYTES_MAX);
    assert!(page.body.len() <= registry::web::PAGE_BYTES_MAX, "page {} bytes", page.body.len());
}

fn long_version(i: usize) -> String {
    let head = format!("1.0.{i}-");
    format!("{head}{}", "a".repeat(registry::address::VERSION_MAX_LEN - head.len()))
}

/// 5,000 versions of 128 characters (the list's own cap, VERSIONS_MAX), 100 warnings (a root
/// file named with 1,000 four-byte letters, 4 KB, within NAME_MAX_BYTES, that is not UTF-8) and
/// a README of 64 Ki four-byte letters: each within its own limit, together once over
/// DETAILS_MAX; now within it. (Docs read by `module_docs::extract`, as the indexer reads them.)
#[test]
fn what_has_bounds_of_its_own_stays_within_the_details_bound() {
    let mut kept = vec![KeptFile { path: "README.md".into(), bytes: Some("\u{1f980}".repeat(70_000).into_bytes()) }];
    kept.push(KeptFile { path: "main.tf".into(), bytes: Some(b"variable \"x\" {}\n".to_vec()) });
    for i in 0..100 {
        kept.push(KeptFile { path: format!("{i:03}{}.tf", "\u{1f980}".repeat(1_000)), bytes: Some(vec![0xff]) });
    }
    let docs = module_docs::extract(&kept, "sha");
    let versions: Vec<ModuleVersion> = (0..5_000)
        .map(|i| ModuleVersion::example(&long_version(i), &format!("modules/acme/vpc/aws/{}.tar.gz", long_version(i))))
        .collect();
    let entry = versions[0].clone();
    let manifest = ModuleManifest::new(versions);
    let module = registry::address::ModuleAddress::parse("acme", "vpc", "aws").unwrap();
    let details = registry::browse::details(&module, &entry, &manifest, Some(&docs), None, &Default::default());
    let size = serde_json::to_vec(&details).unwrap().len();
    eprintln!(
        "details {size} bytes (DETAILS_MAX {}); warnings {}, truncated {}",
        registry::browse::DETAILS_MAX,
        docs.warnings.len(),
        details["truncated"]
    );
    assert!(size <= registry::browse::DETAILS_MAX, "details {size} bytes");
}

/// `list_module_versions` of 100 versions, each with a deprecation `Deprecation::parse` accepts
/// (500 four-byte letters; a replacement of 200 `"`, two bytes each in JSON) and a judgment
/// against a 128-character version: once ~550 KB in both channels, so the tool failed; now the
/// list stops where the bound does.
#[test]
fn list_module_versions_fits_its_bound() {
    let file = json!({"reason": "\u{1f980}".repeat(500), "replacement": "\"".repeat(200)}).to_string();
    let deprecation = Deprecation::parse(file.as_bytes(), "etag").expect("a deprecation the indexer accepts");
    let versions: Vec<ModuleVersion> = (0..100)
        .map(|i| ModuleVersion {
            deprecation: Some(deprecation.clone()),
            judged: Some(Judgment { against: Some(long_version(1000 + i)), breaking: vec![], more: 3, note: None }),
            ..ModuleVersion::example(&long_version(i), "modules/acme/vpc/aws/x.tar.gz")
        })
        .collect();
    let manifest = ModuleManifest::new(versions);
    let module = registry::address::ModuleAddress::parse("acme", "vpc", "aws").unwrap();
    let result = answers::module_versions(&module, &manifest).result();
    eprintln!("isError {} {:.200}", result["isError"], result["content"][0]["text"]);
    assert_eq!(result["isError"], json!(false), "list_module_versions refused for a module the indexer accepts");
}

/// A provider version of 5,000 platforms of 65 characters and 5,000 long versions: the answer
/// lists at most 200 platforms, says how many there are, and stays within ANSWER_MAX.
#[test]
fn provider_details_of_thousands_of_platforms_fits_its_bound() {
    let mut document = registry::manifest::ProviderVersion::default();
    for i in 0..5000 {
        let platform = format!("{i:032}_{}", "a".repeat(32));
        let archive =
            registry::manifest::ProviderArchive { url: format!("{platform}.zip"), hashes: vec![], indexed: None };
        document.archives.insert(platform, archive);
    }
    let versions: Vec<String> = (0..5000).map(long_version).collect();
    let versions: Vec<&str> = versions.iter().map(String::as_str).collect();
    let provider = registry::address::ProviderAddress::parse("registry.example.com", "acme", "widget").unwrap();
    let answer = answers::provider_details(&provider, versions[0], &versions, &document);
    let size = answer.size();
    let result = answer.result();
    assert_eq!(result["isError"], json!(false), "get_provider_details refused");
    assert!(size <= answers::ANSWER_MAX, "{size} bytes");
    let structured = &result["structuredContent"];
    assert_eq!(structured["platforms_count"], json!(5000));
    let listed = structured["platforms"].as_array().unwrap().len();
    assert!((1..=200).contains(&listed), "{listed} platforms listed");
}

fn docs_of(files: &[(&str, &str)]) -> ModuleDocs {
    let kept: Vec<KeptFile> =
        files.iter().map(|(p, c)| KeptFile { path: (*p).into(), bytes: Some(c.as_bytes().to_vec()) }).collect();
    module_docs::extract(&kept, "sha")
}

/// First string under `value` holding a character a one-line field may not.
fn not_one_line(value: &Value, path: &str) -> Option<String> {
    match value {
        Value::String(s)
            if s.chars().any(|c| (c.is_whitespace() && c != ' ') || registry::printed::refused(c).is_some()) =>
        {
            Some(format!("{path} = {s:.80?}"))
        }
        Value::Object(map) => map.iter().find_map(|(k, v)| not_one_line(v, &format!("{path}.{k}"))),
        Value::Array(items) => items.iter().find_map(|v| not_one_line(v, &format!("{path}[]"))),
        _ => None,
    }
}

/// `compare_module_versions` of an input named with HCL escapes (`"a\nb\u202Ec"`) and a type
/// written over two lines: the structured `list` once held the newline and the RLO raw; now
/// each field is one line.
#[test]
fn a_comparison_lists_publisher_text_on_one_line() {
    let old = docs_of(&[(
        "main.tf",
        "variable \"a\\nb\\u202Ec\" {}\nvariable \"t\" {\n  type = object({\n    a = string\n  })\n}\n",
    )]);
    let new = docs_of(&[("main.tf", "variable \"t\" {\n  type = object({\n    a = number\n  })\n}\n")]);
    let comparison = Comparison::new("1.0.0", &old, &new);
    let module = registry::address::ModuleAddress::parse("acme", "vpc", "aws").unwrap();
    let to = ModuleVersion::example("2.0.0", "modules/acme/vpc/aws/2.0.0.tar.gz");
    let result = answers::comparison(&module, "1.0.0", &to, Some(&comparison)).result();
    let found = not_one_line(&result["structuredContent"], "structuredContent");
    eprintln!("{found:?}");
    assert_eq!(found, None);
}

/// An input name of 600,000 characters (a label in a 1 MiB file) removed in the next version:
/// the comparison once stored and answered the whole name (the tool failed over ANSWER_MAX);
/// now a change keeps `SHOWN_CHARS` of it.
#[test]
fn a_comparison_lists_names_cut() {
    let old = docs_of(&[("main.tf", &format!("variable \"{}\" {{}}\n", "n".repeat(600_000)))]);
    let new = docs_of(&[("main.tf", "variable \"x\" {}\n")]);
    let comparison = Comparison::new("1.0.0", &old, &new);
    eprintln!("stored comparison {} bytes", serde_json::to_vec(&comparison).unwrap().len());
    let module = registry::address::ModuleAddress::parse("acme", "vpc", "aws").unwrap();
    let to = ModuleVersion::example("2.0.0", "modules/acme/vpc/aws/2.0.0.tar.gz");
    let result = answers::comparison(&module, "1.0.0", &to, Some(&comparison)).result();
    eprintln!("isError {} {:.160}", result["isError"], result["content"][0]["text"]);
    assert_eq!(result["isError"], json!(false));
}

/// `get_module_usage` (and the pages' usage snippets) of a required input named `a\u202Eb`: the
/// snippet once carried the RLO (a format character, not a control); now none.
#[test]
fn usage_snippets_hold_no_invisible_character() {
    let docs = docs_of(&[("main.tf", "variable \"a\\u202Eb\\u200Bc\" {\n  type = string\n}\n")]);
    assert!(docs.root.inputs[0].name.contains('\u{202e}'), "{:?}", docs.root.inputs);
    let module = registry::address::ModuleAddress::parse("acme", "vpc", "aws").unwrap();
    let entry = ModuleVersion::example("1.0.0", "modules/acme/vpc/aws/1.0.0.tar.gz");
    let answer = answers::module_usage("registry.example.com", &module, &entry, Some(&docs));
    let snippet = answer.structured["snippet"].as_str().unwrap();
    eprintln!("{snippet:?}");
    assert!(!snippet.chars().any(|c| registry::printed::refused(c).is_some() && c != '\n'), "{snippet:?}");
}

/// `get_module_details` with the budget filled to its last bytes, 200 ways: what no part is
/// charged for (keys, brackets, commas, the frame) once took 11 of them over ANSWER_MAX, and the
/// tool failed; now each answer is built again with less room until it fits.
#[test]
fn module_details_fits_its_bound_wherever_the_budget_runs_out() {
    let module = registry::address::ModuleAddress::parse("acme", "vpc", "aws").unwrap();
    let entry = ModuleVersion::example("1.0.0", "modules/acme/vpc/aws/1.0.0.tar.gz");
    let manifest = ModuleManifest::new(vec![entry.clone()]);
    let big = |i: usize| Input {
        name: format!("big{i}"),
        r#type: Some("string".into()),
        description: Some("d".repeat(480)),
        default: None,
        required: true,
        sensitive: false,
        non_nullable: false,
    };
    let small = |i: usize| Output { name: format!("o{i}"), description: None, sensitive: false };
    let (mut refused, mut worst) = (0, 0usize);
    for k in 0..200 {
        let mut submodules: Vec<ModuleDir> = (0..19)
            .map(|i| ModuleDir { path: format!("modules/s{i:02}{}", "p".repeat(100)), ..ModuleDir::default() })
            .collect();
        submodules.push(ModuleDir {
            path: format!("modules/s19{}", "p".repeat(100)),
            inputs: (0..k).map(big).collect(),
            outputs: (0..200).map(small).collect(),
            ..ModuleDir::default()
        });
        let docs = ModuleDocs {
            root: ModuleDir {
                readme: Some("\u{1f980}".repeat(20_000)),
                inputs: (0..90)
                    .map(|i| Input { description: Some("\u{1f980}".repeat(450)), ..big(1000 + i) })
                    .collect(),
                ..ModuleDir::default()
            },
            submodules,
            ..ModuleDocs::default()
        };
        let answer = answers::module_details("registry.example.com", &module, &entry, &manifest, Some(&docs));
        let whole = json!({"content": [{"type": "text", "text": answer.text}], "structuredContent": answer.structured, "isError": false});
        let size = serde_json::to_vec(&whole).unwrap().len();
        worst = worst.max(size);
        if size > answers::ANSWER_MAX {
            refused += 1;
        }
    }
    eprintln!("{refused} of 200 answers over ANSWER_MAX ({}); largest {worst}", answers::ANSWER_MAX);
    assert_eq!(refused, 0, "largest {worst} bytes");
}

/// A submodule directory named with `"`, `{`, `}` and `#` (a tar entry name may hold them): the
/// page's usage snippet once put it in the label as it was, and was no longer one `module`
/// block; now the label is an HCL identifier and the source an escaped string.
#[test]
fn a_submodule_path_cannot_break_the_snippet_label() {
    let name = "x\" {} #";
    let dir = ModuleDir { path: format!("modules/{name}"), ..ModuleDir::default() };
    let source = format!("registry.example.com/acme/vpc/aws//{}", dir.path);
    let block = registry::module_docs::snippet::module_block(name, &source, "1.0.0", &dir);
    eprintln!("{block}");
    let parsed: Result<hcl_edit::structure::Body, _> = block.parse();
    assert!(parsed.is_ok_and(|b| b.into_iter().count() == 1), "{block}");
}

/// A 4,000-character submodule path of quotes (`&quot;`, six bytes each, twice in its snippet):
/// one directory once made a ~48 KB piece past what was left, and a 142 KB page; now a piece
/// larger than what is left is not shown.
#[test]
fn a_directory_larger_than_what_is_left_is_not_shown() {
    let module = registry::address::ModuleAddress::parse("acme", "vpc", "aws").unwrap();
    let entry = ModuleVersion::example("1.0.0", "modules/acme/vpc/aws/1.0.0.tar.gz");
    let manifest = ModuleManifest::new(vec![entry.clone()]);
    let mut submodules = vec![ModuleDir { path: format!("modules/{}", "\"".repeat(4_000)), ..ModuleDir::default() }];
    submodules.extend((0..9).map(|i| ModuleDir { path: format!("modules/m{i}"), ..ModuleDir::default() }));
    let docs = ModuleDocs {
        root: ModuleDir { readme: Some("word ".repeat(17_600)), ..ModuleDir::default() },
        submodules,
        ..ModuleDocs::default()
    };
    let place = registry::web::pages::Place {
        host: "registry.example.com",
        mirror_path: "/v1/mirror/",
        modules_path: "/v1/modules/",
    };
    let shown = registry::web::pages::Shown {
        entry: &entry,
        manifest: &manifest,
        docs: Some(&docs),
        changes: None,
        downloads: None,
    };
    let page = registry::web::pages::module(&place, &module, &shown, true);
    eprintln!(
        "page {} bytes (PAGE_BYTES_MAX {}); quotes shown {}, readme at {:?}, submodules at {:?}",
        page.len(),
        registry::web::PAGE_BYTES_MAX,
        page.matches("&quot;").count(),
        page.find("id=\"readme\""),
        page.find("id=\"submodules\"")
    );
    assert!(page.len() <= registry::web::PAGE_BYTES_MAX, "page {} bytes", page.len());
}
