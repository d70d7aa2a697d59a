//! `signed-release DIR NAMESPACE TYPE VERSION OS_ARCH...`: a provider release signed with a key
//! made now, as a bucket directory holds it: `DIR/providers/HOST/NAMESPACE/TYPE/…` is left to
//! the caller; this writes the release files into `DIR/release/` and the public key to
//! `DIR/key.asc`. For shell-driven tests (`make lambda-test`) that need a real signature.

#![allow(clippy::unwrap_used)]

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [dir, _namespace, r#type, version, platforms @ ..] = args.as_slice() else {
        eprintln!("usage: signed-release DIR NAMESPACE TYPE VERSION OS_ARCH...");
        std::process::exit(2);
    };
    let key = registry::testing::signing::TestKey::generate("lambda-test");
    let platforms: Vec<(&str, &str)> = platforms.iter().filter_map(|p| p.split_once('_')).collect();
    let out = std::path::Path::new(dir);
    std::fs::create_dir_all(out.join("release")).unwrap();
    for (name, bytes) in registry::testing::signing::release(r#type, version, &platforms, Some(&["6.0"]), &key) {
        std::fs::write(out.join("release").join(name), bytes).unwrap();
    }
    std::fs::write(out.join("key.asc"), key.public_armor()).unwrap();
    println!("{}", key.key_id());
}
