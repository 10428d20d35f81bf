use reqwest::{StatusCode, header};

use crate::util::Backend;

#[tokio::test]
async fn the_credential_is_required_and_never_echoed() {
    let b = Backend::start().await;
    let raw = b.raw();
    let token = b.server.token().expose().to_owned();

    let health = raw.get(b.url("/health")).send().await.unwrap();
    assert_eq!(
        health.status(),
        StatusCode::OK,
        "/health needs no credential"
    );

    for path in [
        "/session",
        "/project",
        "/permission",
        "/event",
        "/session/ses_0123456789abABCDEFGHIJKLMN",
    ] {
        let none = raw.get(b.url(path)).send().await.unwrap();
        assert_eq!(
            none.status(),
            StatusCode::UNAUTHORIZED,
            "{path} without a token"
        );
        let body = none.text().await.unwrap();
        assert!(body.contains("\"unauthorized\""), "{body}");
        assert!(!body.contains(&token));

        let wrong = raw
            .get(b.url(path))
            .header(header::AUTHORIZATION, format!("Bearer {token}x"))
            .send()
            .await
            .unwrap();
        assert_eq!(
            wrong.status(),
            StatusCode::UNAUTHORIZED,
            "{path} with a wrong token"
        );
        assert!(!wrong.text().await.unwrap().contains(&token));
    }
    // The right token in a query string is not a credential.
    let query = raw
        .get(b.url(&format!("/session?token={token}")))
        .send()
        .await
        .unwrap();
    assert_eq!(query.status(), StatusCode::UNAUTHORIZED);
    // POSTs are refused before anything is stored.
    let post = raw
        .post(b.url("/session"))
        .json(&serde_json::json!({"title": "x"}))
        .send()
        .await
        .unwrap();
    assert_eq!(post.status(), StatusCode::UNAUTHORIZED);
    assert!(b.client.list_sessions().await.unwrap().is_empty());
    // Errors with the right token carry no credential either.
    let err = b
        .client
        .get_session(&"ses_0123456789abABCDEFGHIJKLMN".parse().unwrap())
        .await
        .unwrap_err();
    assert!(!err.to_string().contains(&token));
    assert!(!format!("{:?}", b.client).contains(&token));
}

#[tokio::test]
async fn foreign_host_or_origin_is_refused() {
    let b = Backend::start().await;
    let raw = b.raw();
    let port = b.server.local_addr().port();
    let get = |host: &str, origin: Option<&str>| {
        let mut r = raw
            .get(b.url("/session"))
            .header(header::HOST, host)
            .header(header::AUTHORIZATION, b.bearer());
        if let Some(o) = origin {
            r = r.header(header::ORIGIN, o);
        }
        r.send()
    };
    for host in [
        format!("localhost:{port}"),
        format!("127.0.0.1:{port}"),
        format!("[::1]:{port}"),
    ] {
        assert_eq!(
            get(&host, None).await.unwrap().status(),
            StatusCode::OK,
            "{host}"
        );
    }
    let own = format!("http://127.0.0.1:{port}");
    assert_eq!(
        get(&format!("127.0.0.1:{port}"), Some(&own))
            .await
            .unwrap()
            .status(),
        StatusCode::OK
    );

    // DNS rebinding: a foreign name resolving to 127.0.0.1.
    let rebound = get(&format!("evil.example:{port}"), None).await.unwrap();
    assert_eq!(rebound.status(), StatusCode::FORBIDDEN);
    assert!(rebound.text().await.unwrap().contains("\"forbidden\""));
    assert_eq!(
        get("127.0.0.1:1", None).await.unwrap().status(),
        StatusCode::FORBIDDEN
    );
    // Cross-site requests.
    for origin in [
        "http://evil.example",
        "null",
        &format!("http://localhost:{port}"),
        &format!("https://127.0.0.1:{port}"),
    ] {
        let r = get(&format!("127.0.0.1:{port}"), Some(origin))
            .await
            .unwrap();
        assert_eq!(r.status(), StatusCode::FORBIDDEN, "Origin {origin}");
        assert!(r.headers().get("access-control-allow-origin").is_none());
    }
    // Also on the public routes and the gateway.
    let health = raw
        .get(b.url("/health"))
        .header(header::HOST, format!("evil.example:{port}"))
        .send()
        .await
        .unwrap();
    assert_eq!(health.status(), StatusCode::FORBIDDEN);
    let gateway = raw
        .get(b.url("/gateway"))
        .header(header::ORIGIN, "http://evil.example")
        .send()
        .await
        .unwrap();
    assert_eq!(gateway.status(), StatusCode::FORBIDDEN);
}

#[tokio::test]
async fn non_loopback_binds_need_the_explicit_flag() {
    let project = tempfile::tempdir().unwrap();
    let data = tempfile::tempdir().unwrap();
    let mut config = ax_server::ServerConfig::new(project.path(), data.path());
    config.bind = "0.0.0.0:0".parse().unwrap();
    config.register = false;
    let err = ax_server::start(config.clone()).await.unwrap_err();
    assert!(err.to_string().contains("not a loopback address"), "{err}");
    config.token = Some("short".into());
    config.allow_remote = true;
    assert!(
        ax_server::start(config).await.is_err(),
        "a weak credential is refused"
    );
}

/// Printing the configuration or the running server (a `{:?}` in a log line, an error) never
/// shows the credential, the screen credential or a sign-in code.
#[tokio::test]
async fn debug_output_never_shows_a_credential() {
    let token = "debug-test-credential-0123456789";
    let mut printed = Vec::new();
    let b = Backend::start_with(|config| {
        config.token = Some(token.into());
        printed.push(format!("{config:?} {config:#?}"));
    })
    .await;
    let code = b.server.sign_in_code().unwrap();
    printed.push(format!("{:?} {:#?} {code:?} {code}", b.server, b.server));
    let screen = b.server.screen_token();
    let mut secrets = vec![token.to_owned(), screen.expose().to_owned()];
    secrets.push(code.expose().to_owned());
    for text in &printed {
        assert!(text.contains("<redacted>"), "{text}");
        for secret in &secrets {
            assert!(!text.contains(secret.as_str()), "{text}");
        }
    }
    assert_eq!(b.server.token().expose(), token);
}
