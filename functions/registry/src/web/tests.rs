//! The pages through the handler, from what the real indexer wrote to in-memory storage.

use super::{CONTENT_SECURITY_POLICY, PAGE_BYTES_MAX};
use crate::app::{App, Reply, Request};
use crate::auth::session;
use crate::config::Config;
use crate::index::{Indexer, Limits};
use crate::layout;
use crate::router::Service;
use crate::storage::MemoryStorage;

const HOST: &str = "registry.example.com";

async fn app() -> App<MemoryStorage> {
    let storage = MemoryStorage::new();
    let indexer = Indexer::new(&storage, Limits::default());
    let readme =
        "# VPC\n\nA network with <b>subnets</b>.\n\n<script>alert(1)</script>\n\n| a | b |\n|---|---|\n| 1 | 2 |\n";
    let vpc = crate::testing::tar_gz(&[
        ("README.md", readme.as_bytes()),
        (
            "variables.tf",
            b"variable \"cidr\" {\n  type = string\n  default = \"10.0.0.0/16\"\n}\nvariable \"name\" {\n  description = \"<img src=x onerror=alert(1)>\"\n}\nvariable \"password\" {\n  type = string\n  sensitive = true\n}\n",
        ),
        ("outputs.tf", b"output \"id\" {\n  value = 1\n  description = \"The VPC's id.\"\n}\n"),
        ("modules/subnet/main.tf", b"variable \"az\" {}\n"),
        ("examples/simple/main.tf", b"module \"vpc\" {\n  source = \"../..\"\n}\n"),
    ]);
    for (key, bytes) in [
        ("modules/acme/vpc/aws/1.0.0.tar.gz", vpc.clone()),
        ("modules/acme/vpc/aws/1.2.0.tar.gz", vpc),
        (
            "modules/secret/vault/aws/0.1.0.tar.gz",
            crate::testing::tar_gz(&[("README.md", b"Hidden vault.".as_slice()), ("main.tf", b"")]),
        ),
    ] {
        storage.insert(key, bytes);
        indexer.on_object_changed(key).await.unwrap();
    }
    let zip = "providers/registry.terraform.io/hashicorp/null/terraform-provider-null_3.2.1_linux_amd64.zip";
    storage.insert(zip, crate::testing::provider_zip("null", "3.2.1", "a"));
    indexer.on_object_changed(zip).await.unwrap();
    let acme = crate::auth::manage::record("acme", "trg_acme", vec!["acme".into()], vec![], None);
    let all = crate::auth::manage::record("all", "trg_all", vec!["*".into()], vec!["*/*/*".into()], None);
    let store = crate::auth::TokenStore { format: 1, tokens: vec![acme, all] };
    storage.insert(layout::TOKENS, serde_json::to_vec(&store).unwrap());
    let mut config = Config::new("bucket");
    config.hostname = Some(HOST.into());
    App::builder(config, storage).services(&[Service::Web]).build().unwrap()
}

struct Page {
    status: u16,
    body: String,
    reply: Reply,
}

async fn get(app: &App<MemoryStorage>, target: &str, cookie: Option<&str>) -> Page {
    let (path, query) = target.split_once('?').map_or((target, None), |(p, q)| (p, Some(q)));
    let cookie = cookie.map(|t| format!("{}={t}", session::COOKIE));
    let reply = app.handle(&Request::get(path).query(query).cookie(cookie.as_deref()).host(Some(HOST))).await;
    Page { status: reply.status.as_u16(), body: String::from_utf8_lossy(&reply.body).to_string(), reply }
}

async fn post(app: &App<MemoryStorage>, path: &str, body: &str, origin: Option<&str>) -> Reply {
    let method = http::Method::POST;
    app.handle(&Request::new(&method, path).body(body.as_bytes()).origin(origin).host(Some(HOST))).await
}

#[tokio::test]
async fn pages_show_what_the_viewer_may_read_and_carry_the_csp() {
    let app = app().await;
    let catalog = get(&app, "/", Some("trg_acme")).await;
    assert_eq!(catalog.status, 200, "{}", catalog.body);
    assert_eq!(catalog.reply.header_value("content-type"), Some("text/html; charset=utf-8"));
    assert_eq!(catalog.reply.header_value("content-security-policy"), Some(CONTENT_SECURITY_POLICY));
    assert!(catalog.body.contains("acme/vpc/aws") && !catalog.body.contains("secret/vault"), "{}", catalog.body);
    assert!(!catalog.body.contains("hashicorp/null"), "acme's token reads no provider");
    assert!(catalog.body.contains("Sign out"));

    let all = get(&app, "/", Some("trg_all")).await;
    assert!(all.body.contains("secret/vault/aws") && all.body.contains("registry.terraform.io/hashicorp/null"));
    let search = get(&app, "/?q=vault", Some("trg_acme")).await;
    assert!(!search.body.contains("secret/vault/aws"), "a search finds nothing out of scope");
    let search = get(&app, "/?q=network", Some("trg_acme")).await;
    assert!(search.body.contains("/ui/modules/acme/vpc/aws"), "{}", search.body);

    // Anonymous, nothing public: an empty catalog that says to sign in; pages ask for it.
    let anonymous = get(&app, "/", None).await;
    assert_eq!(anonymous.status, 200);
    assert!(anonymous.body.contains("Nothing here is public") && !anonymous.body.contains("acme/vpc"));
    let module = get(&app, "/ui/modules/acme/vpc/aws", None).await;
    assert_eq!(module.status, 401);
    assert!(module.body.contains("/ui/sign-in") && module.reply.header_value("content-security-policy").is_some());

    // Out of scope and absent: the same 404 page.
    let hidden = get(&app, "/ui/modules/secret/vault/aws", Some("trg_acme")).await;
    let absent = get(&app, "/ui/modules/ghost/vault/aws", Some("trg_acme")).await;
    assert_eq!((hidden.status, absent.status), (404, 404));
    assert_eq!(hidden.body.replace("secret", "ghost"), absent.body);
    let provider = get(&app, "/ui/providers/registry.terraform.io/hashicorp/null", Some("trg_acme")).await;
    assert_eq!(provider.status, 404);

    // A revoked or unknown cookie: 401, and the cookie is removed.
    let stale = get(&app, "/", Some("trg_revoked")).await;
    assert_eq!(stale.status, 401);
    assert!(stale.body.contains("no longer valid"));
    assert_eq!(stale.reply.header_value("set-cookie"), Some(session::clear().as_str()));
}

#[tokio::test]
async fn the_module_page_has_usage_readme_inputs_outputs_and_nothing_hostile() {
    let app = app().await;
    let page = get(&app, "/ui/modules/acme/vpc/aws", Some("trg_acme")).await;
    assert_eq!(page.status, 200, "{}", page.body);
    let body = &page.body;
    assert!(body.contains("source  = &quot;registry.example.com/acme/vpc/aws&quot;"), "{body}");
    assert!(body.contains("version = &quot;~&gt; 1.2&quot;"), "{body}");
    assert!(body.contains("<td>1</td>"), "the README's table is rendered");
    assert!(body.contains("<b>subnets</b>"), "allowed HTML survives");
    for hostile in ["<script>alert", "<img"] {
        assert!(!body.contains(hostile), "{hostile} in the page");
    }
    assert_eq!(body.matches("onerror").count(), 1, "only as the escaped description's text");
    assert!(body.contains("&lt;img src=x onerror=alert(1)&gt;"), "a hostile description is text");
    assert!(body.contains("<code>password</code> <span class=\"tag\">sensitive</span>"));
    assert!(body.contains("The VPC&#39;s id."));
    assert!(body.contains("modules/subnet") && body.contains("registry.example.com/acme/vpc/aws//modules/subnet"));
    assert!(body.contains("examples/simple"));
    assert!(body.contains("href=\"/ui/modules/acme/vpc/aws/1.0.0\""), "version links");
    assert!(body.len() < PAGE_BYTES_MAX);
    crate::invariants::check_inert_html(body, &crate::invariants::FRAME_TAGS).unwrap();

    let older = get(&app, "/ui/modules/acme/vpc/aws/1.0.0", Some("trg_acme")).await;
    assert!(older.body.contains("latest is <a href=\"/ui/modules/acme/vpc/aws/1.2.0\">"), "{}", older.body);
    assert_eq!(get(&app, "/ui/modules/acme/vpc/aws/9.9.9", Some("trg_acme")).await.status, 404);
    assert_eq!(get(&app, "/ui/modules/acme/vpc/aws?x=1", Some("trg_acme")).await.status, 400);

    let provider = get(&app, "/ui/providers/registry.terraform.io/hashicorp/null", Some("trg_all")).await;
    assert_eq!(provider.status, 200, "{}", provider.body);
    for want in [
        "linux_amd64",
        "terraform-provider-null_3.2.1_linux_amd64.zip",
        "h1:",
        "zh:",
        "network_mirror",
        "https://registry.example.com/v1/mirror/",
        "include = [&quot;registry.terraform.io/hashicorp/null&quot;]",
    ] {
        assert!(provider.body.contains(want), "{want} in {}", provider.body);
    }
    assert!(!provider.body.contains("required_providers"), "not a release of this registry's providers.v1");
}

#[tokio::test]
async fn huge_docs_still_make_a_page_under_the_limit() {
    let storage = MemoryStorage::new();
    let indexer = Indexer::new(&storage, Limits::default());
    let readme = format!("# Big\n\n{}", "A paragraph of text that goes on and on. ".repeat(20_000));
    let mut variables = String::new();
    for i in 0..400 {
        variables.push_str(&format!(
            "variable \"v{i}\" {{\n  description = \"{}\"\n  default = \"{}\"\n}}\n",
            "d".repeat(500),
            "x".repeat(300)
        ));
    }
    let archive = crate::testing::tar_gz(&[("README.md", readme.as_bytes()), ("variables.tf", variables.as_bytes())]);
    storage.insert("modules/acme/big/aws/1.0.0.tar.gz", archive);
    indexer.on_object_changed("modules/acme/big/aws/1.0.0.tar.gz").await.unwrap();
    let mut config = Config::new("bucket");
    config.access.anonymous_modules = vec!["*".into()];
    let app = App::builder(config, storage).services(&[Service::Web]).build().unwrap();
    let page = get(&app, "/ui/modules/acme/big/aws", None).await;
    assert_eq!(page.status, 200);
    assert!(page.body.len() < PAGE_BYTES_MAX, "{} bytes", page.body.len());
    assert!(page.body.contains("more not shown on this page"), "the inputs table says where the rest is");
    assert!(page.body.contains("<code>v0</code>"));
}

#[tokio::test]
async fn sign_in_keeps_a_good_token_in_a_strict_cookie_and_refuses_other_sites() {
    let app = app().await;
    let origin = Some("https://registry.example.com");
    let reply = post(&app, "/ui/sign-in", "token=trg_acme", origin).await;
    assert_eq!(reply.status, 303);
    assert_eq!(reply.header_value("location"), Some("/"));
    let cookie = reply.header_value("set-cookie").unwrap();
    assert!(cookie.starts_with("__Host-registry-token=trg_acme;") && cookie.contains("HttpOnly"), "{cookie}");
    assert!(cookie.contains("Secure") && cookie.contains("SameSite=Strict"), "{cookie}");

    let bad = post(&app, "/ui/sign-in", "token=trg_nope", origin).await;
    assert_eq!(bad.status, 401);
    assert!(bad.header_value("set-cookie").is_none());
    assert!(String::from_utf8_lossy(&bad.body).contains("does not know that token"));
    assert_eq!(post(&app, "/ui/sign-in", "token=a%3Bb", origin).await.status, 400);
    assert_eq!(post(&app, "/ui/sign-in", "nothing=1", origin).await.status, 400);

    // Login CSRF: another site's form, or a post without Origin, is refused.
    for other in [Some("https://evil.example"), Some("null"), None] {
        let refused = post(&app, "/ui/sign-in", "token=trg_acme", other).await;
        assert_eq!(refused.status, 403, "{other:?}");
        assert!(refused.header_value("set-cookie").is_none());
        assert_eq!(post(&app, "/ui/sign-out", "", other).await.status, 403);
    }
    let out = post(&app, "/ui/sign-out", "", origin).await;
    assert_eq!((out.status.as_u16(), out.header_value("set-cookie")), (303, Some(session::clear().as_str())));
    assert_eq!(get(&app, "/ui/sign-out", None).await.status, 405);
    let form = get(&app, "/ui/sign-in", None).await;
    assert!(form.body.contains("<form method=\"post\" action=\"/ui/sign-in\""));
}

#[tokio::test]
async fn assets_are_served_with_their_types() {
    let app = app().await;
    let css = get(&app, "/ui/assets/style.css", None).await;
    assert_eq!((css.status, css.reply.header_value("content-type")), (200, Some("text/css; charset=utf-8")));
    let js = get(&app, "/ui/assets/copy.js", None).await;
    assert_eq!(js.reply.header_value("content-type"), Some("text/javascript; charset=utf-8"));
    assert!(js.body.contains("navigator.clipboard"));
}

/// The XSS corpus the browser test also renders, here through the pure page functions.
#[test]
fn hostile_text_renders_inert_in_every_field() {
    for text in [
        "<script>alert(1)</script>",
        "<img src=x onerror=alert(1)>",
        "[x](javascript:alert(1)) [y](JAVASCRIPT:alert(1)) [z]( javascript:alert(1))",
        "<a href=\"&#106;avascript:alert(1)\">x</a>",
        "<svg><script>alert(1)</script></svg><svg/onload=alert(1)>",
        "<!--><script>alert(1)</script>--> <!-- --!><script>alert(1)</script>",
        "</textarea></code></pre><script>alert(1)</script>",
        "\"><script>alert(1)</script>",
        "' onmouseover='alert(1)",
        "<iframe srcdoc=\"<script>alert(1)</script>\"></iframe>",
        "<math><mi xlink:href=\"javascript:alert(1)\">x</mi></math>",
        "<form action=\"https://evil.example\"><button formaction=\"javascript:alert(1)\">x</button></form>",
        "<meta http-equiv=\"refresh\" content=\"0;url=javascript:alert(1)\">",
        "<base href=\"https://evil.example/\">",
        "<div style=\"background:url(javascript:alert(1))\">x</div>",
        "<details open ontoggle=alert(1)><summary>x</summary></details>",
        "[a]: javascript:alert(1)\n\n[link][a]",
        "![img](https://evil.example/pixel.png)",
    ] {
        crate::invariants::check_page_text(text).unwrap_or_else(|e| panic!("{text:?}: {e}"));
    }
}

/// What the details answer, the version page and the upgrade page show of the changes is what
/// was compared at publish and stored with the version's docs: a request compares nothing (a
/// hostile pair of interfaces cost a minute of CPU a request when they did).
#[tokio::test]
async fn changes_are_read_as_compared_at_publish_never_compared_per_request() {
    use crate::module_docs::ModuleDocs;
    use crate::module_docs::compare::{Change, Kind, Subject};
    let app = app().await;
    let module = crate::address::ModuleAddress::parse("acme", "vpc", "aws").unwrap();
    let key = |v: u64| layout::module_docs(&module, &semver::Version::new(1, v, 0));
    let mut docs: ModuleDocs = serde_json::from_slice(&app.storage().peek(&key(2)).unwrap()).unwrap();
    let compared = docs.compared.as_mut().expect("compared at publish");
    assert_eq!(compared.since.as_deref(), Some("1.0.0"));
    assert_eq!(compared.with.len(), 1);
    assert!(compared.with[0].changes.is_empty(), "1.0.0 and 1.2.0 are the same archive");
    // A change only the stored comparison has; and 1.0.0's docs gone, so nothing to compare.
    let stored = Change {
        path: String::new(),
        subject: Subject::Input,
        name: "stored".into(),
        kind: Kind::Removed,
        detail: "removed".into(),
        breaking: Some("as compared at publish".into()),
    };
    compared.with[0].changes.push(stored.clone());
    app.storage().insert(&key(2), serde_json::to_vec(&docs).unwrap());
    app.storage().remove(&key(0));

    let token = "Bearer trg_acme";
    let request = Request::get("/v1/modules/acme/vpc/aws/1.2.0").authorization(Some(token)).host(Some(HOST));
    let reply = app.handle(&request).await;
    let details: serde_json::Value = serde_json::from_slice(&reply.body).unwrap();
    let expected = serde_json::json!({"since": "1.0.0", "changes": [stored]});
    assert_eq!(details["changes"], expected, "{details}");
    let line = "input &quot;stored&quot; removed: as compared at publish";
    let page = get(&app, "/ui/modules/acme/vpc/aws/1.2.0", Some("trg_acme")).await;
    assert!(page.body.contains("<h2>Changes since 1.0.0</h2>") && page.body.contains(line), "{}", page.body);
    assert!(page.body.contains("/ui/modules/acme/vpc/aws/1.2.0/from/1.0.0"), "{}", page.body);
    let upgrade = get(&app, "/ui/modules/acme/vpc/aws/1.2.0/from/1.0.0", Some("trg_acme")).await;
    assert!(upgrade.body.contains("1 change, <span class=\"breaking\">1 breaking</span>"), "{}", upgrade.body);
    assert!(upgrade.body.contains(line), "{}", upgrade.body);
    // Nothing was compared with a downgrade at publish: said, not computed now.
    let downgrade = get(&app, "/ui/modules/acme/vpc/aws/1.0.0/from/1.2.0", Some("trg_acme")).await;
    assert_eq!(downgrade.status, 200);
    assert!(downgrade.body.contains("Not compared: when 1.0.0 was published"), "{}", downgrade.body);
}

/// The version page a new user opens first: changes that break no caller read as good news, in
/// words ("none breaking") and out of the alarm colour, which is kept for a count of breaking
/// changes; and an input's name is shown whole however long, the stylesheet wrapping it (never an
/// ellipsis, never hidden).
#[tokio::test]
async fn none_breaking_reads_as_good_news_and_long_input_names_stay_whole() {
    let storage = MemoryStorage::new();
    let indexer = Indexer::new(&storage, Limits::default());
    let long = "instance_size_for_the_primary_database_cluster";
    let region = "variable \"region\" {\n  type = string\n}\n";
    let sized = format!(
        "variable \"{long}\" {{\n  type = string\n  default = \"db.r6g.large\"\n  description = \"{}\"\n}}\n",
        "A size. ".repeat(100)
    );
    let versions = [("1.0.0", region.to_string()), ("1.1.0", format!("{region}{sized}")), ("2.0.0", sized)];
    for (version, variables) in versions {
        let key = format!("modules/acme/db/aws/{version}.tar.gz");
        storage.insert(&key, crate::testing::tar_gz(&[("variables.tf", variables.as_bytes())]));
        indexer.on_object_changed(&key).await.unwrap();
    }
    let mut config = Config::new("bucket");
    config.access.anonymous_modules = vec!["*".into()];
    let app = App::builder(config, storage).services(&[Service::Web]).build().unwrap();

    // 1.1.0 adds an optional input: one change, none breaking, and no alarm anywhere.
    let calm = get(&app, "/ui/modules/acme/db/aws/1.1.0", None).await;
    assert_eq!(calm.status, 200, "{}", calm.body);
    assert!(calm.body.contains("<h2>Changes since 1.0.0</h2>"), "{}", calm.body);
    assert!(calm.body.contains("1 change, <span class=\"compatible\">none breaking</span>"), "{}", calm.body);
    assert!(!calm.body.contains("class=\"breaking\""), "the alarm class on a page with no break: {}", calm.body);
    assert!(!calm.body.contains("0 breaking"), "{}", calm.body);
    // The name whole in the inputs table, its long description cut instead.
    assert!(calm.body.contains(&format!("<td><code>{long}</code></td>")), "{}", calm.body);
    assert!(calm.body.contains("A size. A size.") && calm.body.contains("…</td>"), "the description is clipped");

    // 2.0.0 removes `region`: the count of breaking changes in the alarm colour, each flagged.
    let alarm = get(&app, "/ui/modules/acme/db/aws/2.0.0", None).await;
    assert_eq!(alarm.status, 200, "{}", alarm.body);
    assert!(alarm.body.contains("1 change, <span class=\"breaking\">1 breaking</span>"), "{}", alarm.body);
    assert!(alarm.body.contains("<li class=\"breaking\"><strong>breaking</strong> input &quot;region&quot; removed"));
    assert!(!alarm.body.contains("class=\"compatible\""), "{}", alarm.body);
    assert!(alarm.body.contains(&format!("<td><code>{long}</code></td>")), "{}", alarm.body);

    // The stylesheet: both classes styled apart; cells wrap, never cut or hide, what they hold.
    let css = get(&app, "/ui/assets/style.css", None).await.body;
    assert!(css.contains("span.breaking { color: var(--alarm); }"), "{css}");
    assert!(css.contains("span.compatible { color: var(--calm); }"), "{css}");
    assert!(css.contains("td { overflow-wrap: anywhere; }"), "{css}");
    for cut in ["text-overflow", "ellipsis", "overflow: hidden", "overflow-x: hidden"] {
        assert!(!css.contains(cut), "{cut} in the stylesheet");
    }
}
