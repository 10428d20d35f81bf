use ax_protocol::SessionStatus;

use crate::util::Backend;

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
