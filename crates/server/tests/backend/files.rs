//! `GET /find/file`: the `@` picker's search over the project's files (docs/backend.md §3).

use crate::util::{Backend, within};

fn write(root: &std::path::Path, path: &str) {
    let full = root.join(path);
    std::fs::create_dir_all(full.parent().unwrap()).unwrap();
    std::fs::write(full, "x").unwrap();
}

#[tokio::test]
async fn files_are_found_fuzzily_and_ignored_ones_are_not() {
    let b = Backend::start().await;
    let root = b.project_path().to_owned();
    std::fs::write(root.join(".gitignore"), "build/\n").unwrap();
    for p in [
        "src/main.rs",
        "src/server/mod.rs",
        "docs/maintenance.md",
        "build/main.o",
    ] {
        write(&root, p);
    }
    let found = within(b.client.find_files("mainrs", 10)).await.unwrap();
    let paths: Vec<&str> = found.files.iter().map(|f| f.path.as_str()).collect();
    assert_eq!(paths.first(), Some(&"src/main.rs"), "{paths:?}");
    assert!(!paths.contains(&"build/main.o"), "{paths:?}");
    assert!(!found.truncated);
    let found = within(b.client.find_files("", 2)).await.unwrap();
    assert_eq!(found.files.len(), 2);
}

#[tokio::test]
async fn bad_queries_are_refused_and_the_credential_is_needed() {
    let b = Backend::start().await;
    let raw = b.raw();
    for query in [
        "query=a&limit=0".to_owned(),
        "query=a&limit=201".to_owned(),
        format!("query={}", "a".repeat(257)),
        "query=%E2%80%AE".to_owned(),
        "query=a&other=1".to_owned(),
    ] {
        let response = within(
            raw.get(b.url(&format!("/find/file?{query}")))
                .header("authorization", b.bearer())
                .send(),
        )
        .await
        .unwrap();
        assert_eq!(response.status(), 400, "{query}");
    }
    let response = within(raw.get(b.url("/find/file?query=a")).send())
        .await
        .unwrap();
    assert_eq!(response.status(), 401);
}
