use super::*;

fn provider(h: &str, ns: &str, t: &str) -> Repository {
    Repository::Provider(ProviderAddress::parse(h, ns, t).unwrap())
}

#[test]
fn routes() {
    let null = || provider("registry.terraform.io", "hashicorp", "null");
    let name = "providers/registry.terraform.io/hashicorp/null";
    let digest = format!("sha256:{}", "ab".repeat(32));
    let v = |s: &str| parse_version(s).unwrap();
    assert_eq!(parse("", None), Ok(OciRoute::Base));
    assert_eq!(parse("token", None), Ok(OciRoute::Token));
    let docker = "account=ci&client_id=docker&offline_token=true&service=h&scope=repository%3Aa%3Apull&scope=b";
    assert_eq!(parse("token", Some(docker)), Ok(OciRoute::Token));
    assert_eq!(
        parse(&format!("{name}/tags/list"), None),
        Ok(OciRoute::Tags { repository: null(), n: None, last: None })
    );
    assert_eq!(
        parse(&format!("{name}/tags/list"), Some("n=2&last=3.2.1")),
        Ok(OciRoute::Tags { repository: null(), n: Some(2), last: Some("3.2.1".into()) })
    );
    assert_eq!(
        parse(&format!("{name}/manifests/3.2.1_ent"), None),
        Ok(OciRoute::Manifest { repository: null(), reference: Reference::Tag(v("3.2.1+ent")) })
    );
    assert_eq!(
        parse(&format!("{name}/manifests/{digest}"), None),
        Ok(OciRoute::Manifest { repository: null(), reference: Reference::Digest(digest.clone()) })
    );
    assert_eq!(parse(&format!("{name}/blobs/{digest}"), None), Ok(OciRoute::Blob { repository: null(), digest }));
    assert_eq!(tag(&v("3.2.1+ent")), "3.2.1_ent");
}

#[test]
fn refusals() {
    let name = "providers/registry.terraform.io/hashicorp/null";
    let status = |rest: &str, query: Option<&str>| parse(rest, query).unwrap_err().status().as_u16();
    for (rest, query, wanted) in [
        ("nope", None, 404),
        (&format!("{name}/referrers/sha256:00") as &str, None, 404),
        ("providers/127.0.0.1:8443/acme/widget/tags/list", None, 400),
        ("providers/registry.terraform.io/HashiCorp/null/tags/list", None, 400),
        ("providers/registry.terraform.io/hashicorp/tags/list", None, 400),
        ("modules/acme/vpc/tags/list", None, 400),
        ("modules/Acme/vpc/aws/tags/list", None, 400),
        ("providers/registry.terraform.io/hashicorp/null/../x/tags/list", None, 400),
        (&format!("{name}/manifests/Latest"), None, 400),
        (&format!("{name}/manifests/3.2.1+ent"), None, 400),
        (&format!("{name}/manifests/v3.2.1"), None, 400),
        (&format!("{name}/manifests/sha256:AB"), None, 400),
        (&format!("{name}/manifests/sha512:{}", "ab".repeat(64)), None, 400),
        (&format!("{name}/blobs/3.2.1"), None, 400),
        (&format!("{name}/blobs/sha256:{}", "AB".repeat(32)), None, 400),
        (&format!("{name}/tags/list"), Some("n=0"), 400),
        (&format!("{name}/tags/list"), Some("n=1001"), 400),
        (&format!("{name}/tags/list"), Some("n=1&n=2"), 400),
        (&format!("{name}/tags/list"), Some("last=nope"), 400),
        (&format!("{name}/tags/list"), Some("x=1"), 400),
        (&format!("{name}/manifests/1.0.0"), Some("n=1"), 400),
        ("token", Some("service=h&grant_type=password"), 400),
        ("token", Some("scope=%zz"), 400),
        ("token/x", None, 404),
        ("", Some("scope=x"), 400),
    ] {
        assert_eq!(status(rest, query), wanted, "{rest} {query:?}");
    }
    assert!(name_is_invalid("/v2/providers/x/tags/list"));
    assert!(!name_is_invalid(&format!("/v2/{name}/manifests/nope")));
    assert_eq!(kind(&format!("/v2/{name}/blobs/x")), Kind::Blob);
    assert_eq!(kind("/v2/"), Kind::Base);
    assert_eq!(kind("/v2"), Kind::Base);
    assert_eq!(kind("/v1/modules"), Kind::Other);
    assert_eq!(kind("/v2/token"), Kind::Token);
    assert!(!name_is_invalid("/v2/token"));
    assert_eq!(repository_of(&format!("/v2/{name}/manifests/nope")), Repository::parse(name).ok());
    assert_eq!(repository_of("/v2/providers/x/tags/list"), None);
    assert_eq!(repository_of("/v2/token"), None);
}

/// Every repository with route keywords as components, in every position a name of
/// ours can hold them (a provider's hostname has a dot, so never one alone).
fn named_after_keywords() -> Vec<Repository> {
    let words = ["manifests", "blobs", "tags", "list", "token", "uploads", "referrers"];
    let mut repositories = Vec::new();
    for word in words {
        let module = |ns, name, system| Repository::Module(ModuleAddress::parse(ns, name, system).unwrap());
        repositories.extend([module(word, "vpc", "aws"), module("acme", word, "aws"), module("acme", "vpc", word)]);
        repositories.extend([module(word, word, word), provider("registry.terraform.io", word, word)]);
        repositories.push(provider("registry.terraform.io", word, "null"));
        repositories.push(provider("registry.terraform.io", "hashicorp", word));
        repositories.push(provider(&format!("{word}.example.com"), "acme", word));
    }
    repositories.push(Repository::Module(ModuleAddress::parse("blobs", "manifests", "tags").unwrap()));
    repositories.push(Repository::Module(ModuleAddress::parse("tags", "blobs", "manifests").unwrap()));
    repositories.push(provider("registry.terraform.io", "manifests", "blobs"));
    repositories
}

#[test]
fn keywords_may_be_components_of_a_name() {
    let digest = format!("sha256:{}", "ab".repeat(32));
    let v = |s: &str| parse_version(s).unwrap();
    for repository in named_after_keywords() {
        let name = repository.name();
        let routes = [
            (
                format!("{name}/tags/list"),
                Kind::Tags,
                OciRoute::Tags { repository: repository.clone(), n: None, last: None },
            ),
            (
                format!("{name}/manifests/1.0.0_ent"),
                Kind::Manifest,
                OciRoute::Manifest { repository: repository.clone(), reference: Reference::Tag(v("1.0.0+ent")) },
            ),
            (
                format!("{name}/manifests/{digest}"),
                Kind::Manifest,
                OciRoute::Manifest { repository: repository.clone(), reference: Reference::Digest(digest.clone()) },
            ),
            (
                format!("{name}/blobs/{digest}"),
                Kind::Blob,
                OciRoute::Blob { repository: repository.clone(), digest: digest.clone() },
            ),
        ];
        for (rest, kind, route) in routes {
            let raw_path = format!("/v2/{rest}");
            assert_eq!(parse(&rest, None), Ok(route), "{rest}");
            assert_eq!(super::kind(&raw_path), kind, "{rest}");
            assert_eq!(repository_of(&raw_path).as_ref(), Some(&repository), "{rest}");
            assert!(!name_is_invalid(&raw_path), "{rest}");
        }
        // Refused for what follows the keyword, not for the name.
        for (rest, kind) in
            [(format!("{name}/manifests/newest"), Kind::Manifest), (format!("{name}/blobs/1.0.0"), Kind::Blob)]
        {
            let raw_path = format!("/v2/{rest}");
            assert_eq!(parse(&rest, None).map_err(|e| e.status().as_u16()), Err(400), "{rest}");
            assert_eq!((super::kind(&raw_path), name_is_invalid(&raw_path)), (kind, false), "{rest}");
        }
    }
}

/// The grammar's reading of a path with two keywords: the reference holds no `/`, so
/// `modules/acme/vpc/aws/manifests/blobs/D` asks for blob D of the repository
/// `modules/acme/vpc/aws/manifests` (a name this registry refuses), never for a manifest
/// `blobs/D` of `modules/acme/vpc/aws`.
#[test]
fn the_keyword_nearest_the_end_decides() {
    let digest = format!("sha256:{}", "ab".repeat(32));
    for (rest, kind) in [
        (format!("modules/acme/vpc/aws/manifests/blobs/{digest}"), Kind::Blob),
        (format!("modules/acme/vpc/aws/blobs/manifests/{digest}"), Kind::Manifest),
        ("modules/acme/vpc/aws/manifests/tags/list".to_string(), Kind::Tags),
        ("modules/acme/vpc/aws/blobs/tags/list".to_string(), Kind::Tags),
        (format!("modules/acme/vpc/aws/tags/list/blobs/{digest}"), Kind::Blob),
    ] {
        let raw_path = format!("/v2/{rest}");
        assert_eq!(parse(&rest, None).map_err(|e| e.status().as_u16()), Err(400), "{rest}");
        assert_eq!((super::kind(&raw_path), name_is_invalid(&raw_path)), (kind, true), "{rest}");
    }
    // Nothing after the last keyword is a reference: the later keyword still names the kind.
    let name = "modules/acme/manifests/aws";
    for (rest, kind) in [
        (format!("{name}/blobs/uploads/"), Kind::Blob),
        (format!("{name}/manifests/../../x"), Kind::Manifest),
        (format!("{name}/blobs/{digest}/../x"), Kind::Blob),
    ] {
        assert_eq!(parse(&rest, None).map_err(|e| e.status().as_u16()), Err(400), "{rest}");
        assert_eq!(super::kind(&format!("/v2/{rest}")), kind, "{rest}");
    }
}

#[test]
fn components_follow_the_oci_grammar() {
    for ok in ["a", "registry.terraform.io", "a_b", "a__b", "a---b", "aws2"] {
        assert!(is_component(ok), "{ok}");
    }
    for bad in ["", "A", "-a", "a-", "a..b", "a___b", "a._b", "127.0.0.1:8443", "a/b", "é"] {
        assert!(!is_component(bad), "{bad}");
    }
}
