use ax_protocol::SessionStatus;

use ax_client::Client;

use crate::util::{Backend, within};

#[tokio::test]
async fn create_list_get_delete() {
    let b = Backend::start().await;
    assert!(b.client.list_sessions().await.unwrap().is_empty());
    let first = b.client.create_session(Some("first")).await.unwrap();
    let second = b.client.create_session(None).await.unwrap();
    let third = b.client.create_session(Some("  third  ")).await.unwrap();
    assert_eq!(first.title, "first");
    assert_eq!(second.title, "");
    assert_eq!(third.title, "third");
    assert_eq!(first.status, SessionStatus::Idle);
    assert!(first.id.as_str().starts_with("ses_") && first.id.as_str().len() == 30);

    let list = b.client.list_sessions().await.unwrap();
    let ids: Vec<_> = list.iter().map(|s| s.id.clone()).collect();
    assert_eq!(
        ids,
        vec![third.id.clone(), second.id.clone(), first.id.clone()],
        "newest first"
    );
    assert_eq!(b.client.list_sessions_limit(1).await.unwrap().len(), 1);

    assert_eq!(b.client.get_session(&second.id).await.unwrap(), second);
    let deleted = b.client.delete_session(&second.id).await.unwrap();
    assert_eq!(deleted.id, second.id);
    let err = b.client.get_session(&second.id).await.unwrap_err();
    assert_eq!(err.status(), Some(404));
    assert_eq!(err.api().unwrap().code, "not_found");
    assert_eq!(
        b.client.messages(&second.id).await.unwrap_err().status(),
        Some(404)
    );
    assert_eq!(
        b.client
            .delete_session(&second.id)
            .await
            .unwrap_err()
            .status(),
        Some(404)
    );
    assert_eq!(b.client.list_sessions().await.unwrap().len(), 2);

    let project = b.client.project().await.unwrap();
    assert_eq!(
        project.directory,
        std::fs::canonicalize(b.project_path())
            .unwrap()
            .to_string_lossy()
    );
}

#[tokio::test]
async fn a_session_of_another_project_is_not_found() {
    let a = Backend::start().await;
    let id = a.session().await;
    // A second backend on the same data directory, serving another project.
    let other = tempfile::tempdir().unwrap();
    let mut config = ax_server::ServerConfig::new(other.path(), a.data.path());
    config.register = false;
    let server = ax_server::start(config).await.unwrap();
    let client = ax_client::Client::new(server.url(), server.token().expose()).unwrap();
    assert_eq!(
        client.get_session(&id).await.unwrap_err().status(),
        Some(404)
    );
    assert!(client.list_sessions().await.unwrap().is_empty());
    server.shutdown().await;
}

#[tokio::test]
async fn sessions_survive_a_restart() {
    let b = Backend::start().await;
    let id = b.session().await;
    let (project, data) = (b.project, b.data);
    b.server.shutdown().await;
    let mut config = ax_server::ServerConfig::new(project.path(), data.path());
    config.register = false;
    let server = ax_server::start(config).await.unwrap();
    let client = ax_client::Client::new(server.url(), server.token().expose()).unwrap();
    assert_eq!(client.get_session(&id).await.unwrap().id, id);
    server.shutdown().await;
}

#[tokio::test]
async fn agents_are_listed_default_first() {
    let b = Backend::start().await;
    let list = b.client.agents().await.unwrap();
    assert_eq!(
        list.agents.first().map(|a| a.name.as_str()),
        Some(list.default.as_str())
    );
    let shell = list
        .agents
        .iter()
        .find(|a| a.name == "shell")
        .expect("shell is built in");
    assert_eq!(shell.kind, ax_protocol::AgentKindName::Shell);
    assert_eq!(shell.origin, ax_protocol::AgentOrigin::Builtin);
    let names: std::collections::BTreeSet<_> = list.agents.iter().map(|a| &a.name).collect();
    assert_eq!(names.len(), list.agents.len(), "each agent once");
    // Like every route, it needs the credential.
    let r = b.raw().get(b.url("/agent")).send().await.unwrap();
    assert_eq!(r.status(), 401);
}

/// Backends of two projects share one data directory's store: each serves its own project's
/// sessions only. Every session route of one answers 404 for the other's session, and
/// changes nothing of it (docs/backend.md §1).
#[tokio::test]
async fn a_backend_never_serves_another_projects_session() {
    let b = Backend::start().await;
    let theirs = b.session().await;
    let first = b.client.prompt_text(&theirs, "true").await.unwrap();
    let queued = match b
        .client
        .queue_prompt(
            &theirs,
            &ax_protocol::Prompt {
                parts: vec![ax_protocol::PromptPart::Text {
                    text: "echo later".into(),
                }],
            },
        )
        .await
        .unwrap()
    {
        ax_protocol::queue::QueueAnswer::Queued { item, .. } => item.id,
        other => panic!("expected it queued: {other:?}"),
    };
    let pid = first.permission.unwrap().id;
    let before_reply = first.message.id;
    let before = (
        b.client.get_session(&theirs).await.unwrap(),
        b.client.messages(&theirs).await.unwrap(),
        b.client.prompt_queue(&theirs).await.unwrap(),
        b.client.permissions().await.unwrap(),
    );

    let other = tempfile::tempdir().unwrap();
    let mut config = ax_server::ServerConfig::new(other.path(), b.data.path());
    config.register = false;
    let neighbour = ax_server::start(config).await.unwrap();
    let http = reqwest::Client::builder().no_proxy().build().unwrap();
    let base = neighbour.url().to_owned();
    let text = serde_json::json!({"parts": [{"type": "text", "text": "x"}]});
    let s = format!("/session/{theirs}");
    let routes: Vec<(reqwest::Method, String, Option<serde_json::Value>)> = vec![
        (reqwest::Method::GET, s.clone(), None),
        (reqwest::Method::GET, format!("{s}/message"), None),
        (reqwest::Method::GET, format!("{s}/queue"), None),
        (
            reqwest::Method::PATCH,
            s.clone(),
            Some(serde_json::json!({"title": "taken"})),
        ),
        (
            reqwest::Method::POST,
            format!("{s}/prompt"),
            Some(text.clone()),
        ),
        (
            reqwest::Method::POST,
            format!("{s}/queue"),
            Some(text.clone()),
        ),
        (
            reqwest::Method::PATCH,
            format!("{s}/queue/{queued}"),
            Some(text.clone()),
        ),
        (
            reqwest::Method::POST,
            format!("{s}/queue/{queued}/send"),
            None,
        ),
        (reqwest::Method::POST, format!("{s}/queue/resume"), None),
        (
            reqwest::Method::POST,
            format!("{s}/permission/{pid}"),
            Some(serde_json::json!({"reply": "once"})),
        ),
        (
            reqwest::Method::POST,
            format!("{s}/mode"),
            Some(serde_json::json!({"modeId": "x"})),
        ),
        (
            reqwest::Method::POST,
            format!("{s}/config"),
            Some(serde_json::json!({"configId": "model", "value": "x"})),
        ),
        (
            reqwest::Method::GET,
            format!("{s}/message/{}/image/0", before_reply),
            None,
        ),
        (reqwest::Method::POST, format!("{s}/abort"), None),
        (
            reqwest::Method::DELETE,
            format!("{s}/standing"),
            Some(serde_json::json!({"title": "x"})),
        ),
        (reqwest::Method::DELETE, format!("{s}/queue/{queued}"), None),
        (reqwest::Method::DELETE, s.clone(), None),
    ];
    for (method, path, body) in routes {
        let mut request = http
            .request(method.clone(), format!("{base}{path}"))
            .bearer_auth(neighbour.token().expose());
        if let Some(body) = body {
            request = request.json(&body);
        }
        let answer = within(request.send()).await.unwrap();
        let status = answer.status().as_u16();
        let text = answer.text().await.unwrap();
        assert_eq!(status, 404, "{method} {path}: {text}");
    }
    let listed = Client::new(neighbour.url(), neighbour.token().expose())
        .unwrap()
        .list_sessions()
        .await
        .unwrap();
    assert!(listed.is_empty(), "{listed:?}");
    let after = (
        b.client.get_session(&theirs).await.unwrap(),
        b.client.messages(&theirs).await.unwrap(),
        b.client.prompt_queue(&theirs).await.unwrap(),
        b.client.permissions().await.unwrap(),
    );
    assert_eq!(after, before);
    neighbour.shutdown().await;
    b.server.shutdown().await;
}

/// A backend stopped cleanly leaves its data directory's store whole in `ax-code.db`, even
/// while a client's idle connection keeps the backend's state alive: a copy of that one file
/// is a backup (docs/backend.md §1).
#[tokio::test]
async fn a_clean_shutdown_leaves_the_store_in_one_file() {
    let b = Backend::start().await;
    let id = b.session().await;
    b.client.rename_session(&id, "kept").await.unwrap();
    b.server.shutdown().await;
    let db = b.data.path().join(ax_server::store::DB_FILE);
    let copy = tempfile::tempdir().unwrap();
    std::fs::copy(&db, copy.path().join(ax_server::store::DB_FILE)).unwrap();
    let store = ax_server::store::Store::open_read_only(copy.path())
        .unwrap()
        .unwrap();
    let title: String = store
        .read_blocking(|c| {
            Ok(c.query_row(
                "SELECT title FROM session WHERE id = ?1",
                [id.as_str()],
                |r| r.get(0),
            )?)
        })
        .unwrap();
    assert_eq!(title, "kept");
}
