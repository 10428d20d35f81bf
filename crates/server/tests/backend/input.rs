use reqwest::{StatusCode, header};
use serde_json::{Value, json};

use crate::util::Backend;

async fn post(b: &Backend, path: &str, body: Value) -> (StatusCode, Value) {
    let r = b
        .raw()
        .post(b.url(path))
        .header(header::AUTHORIZATION, b.bearer())
        .json(&body)
        .send()
        .await
        .unwrap();
    let status = r.status();
    (status, r.json().await.unwrap())
}

fn code(v: &Value) -> &str {
    v["error"]["code"].as_str().unwrap_or("<no error code>")
}

#[tokio::test]
async fn unknown_fields_and_bad_shapes_are_400_and_store_nothing() {
    let b = Backend::start().await;
    let (s, v) = post(&b, "/session", json!({"titel": "typo"})).await;
    assert_eq!(s, StatusCode::BAD_REQUEST, "{v}");
    assert!(
        v["error"]["message"].as_str().unwrap().contains("titel"),
        "{v}"
    );
    let (s, _) = post(&b, "/session", json!({"title": 5})).await;
    assert_eq!(s, StatusCode::BAD_REQUEST);
    let (s, _) = post(&b, "/session", json!({"title": "a\u{7}b"})).await;
    assert_eq!(s, StatusCode::BAD_REQUEST);
    let (s, _) = post(&b, "/session", json!({"title": "x".repeat(201)})).await;
    assert_eq!(s, StatusCode::BAD_REQUEST);
    let not_json = b
        .raw()
        .post(b.url("/session"))
        .header(header::AUTHORIZATION, b.bearer())
        .header(header::CONTENT_TYPE, "application/json")
        .body("{")
        .send()
        .await
        .unwrap();
    assert_eq!(not_json.status(), StatusCode::BAD_REQUEST);
    assert!(b.client.list_sessions().await.unwrap().is_empty());

    let id = b.session().await;
    let path = format!("/session/{id}/prompt");
    for bad in [
        json!({"parts": [{"type": "text", "text": "ls", "extra": 1}]}),
        json!({"parts": [{"type": "text", "text": "ls"}], "agent": "x"}),
        json!({"parts": [{"type": "image", "url": "x"}]}),
        json!({"parts": []}),
        json!({"parts": [{"type": "text", "text": "   "}]}),
        json!({"parts": (0..65).map(|_| json!({"type": "text", "text": "x"})).collect::<Vec<_>>()}),
    ] {
        let (s, v) = post(&b, &path, bad.clone()).await;
        assert_eq!(s, StatusCode::BAD_REQUEST, "{bad} -> {v}");
    }
    let (s, v) = post(
        &b,
        &format!("/session/{id}/permission/per_0123456789abABCDEFGHIJKLMN"),
        json!({"reply": "maybe"}),
    )
    .await;
    assert_eq!(s, StatusCode::BAD_REQUEST, "{v}");
    assert!(b.client.messages(&id).await.unwrap().is_empty());
    assert!(b.client.permissions().await.unwrap().is_empty());
}

#[tokio::test]
async fn oversize_bodies_and_prompts_are_413() {
    let b = Backend::start().await;
    let id = b.session().await;
    let huge = json!({"parts": [{"type": "text", "text": "x".repeat(600 * 1024)}]});
    let (s, v) = post(&b, &format!("/session/{id}/prompt"), huge).await;
    assert_eq!(s, StatusCode::PAYLOAD_TOO_LARGE, "{v}");
    assert_eq!(code(&v), "too_large");
    // A prompt's own bound (it may carry 10 MiB of images in base64) is larger, not absent.
    let image = json!({"parts": [{"type": "image", "mimeType": "image/png", "data": "A".repeat(15 * 1024 * 1024)}]});
    // The server answers before reading the whole body; the client may still be writing it
    // then, and sees its connection closed (a broken pipe) instead of the 413: either way the
    // request was refused, and nothing is stored (checked below).
    let sent = b
        .raw()
        .post(b.url(&format!("/session/{id}/prompt")))
        .header(header::AUTHORIZATION, b.bearer())
        .json(&image)
        .send()
        .await;
    match sent {
        Ok(r) => {
            assert_eq!(r.status(), StatusCode::PAYLOAD_TOO_LARGE);
            let v: Value = r.json().await.unwrap();
            assert!(
                v["error"]["message"]
                    .as_str()
                    .unwrap()
                    .contains("request body"),
                "{v}"
            );
        }
        Err(e) => assert!(e.is_request() || e.is_body(), "{e:?}"),
    }
    let long = json!({"parts": [{"type": "text", "text": "x".repeat(65 * 1024)}]});
    let (s, v) = post(&b, &format!("/session/{id}/prompt"), long).await;
    assert_eq!(s, StatusCode::PAYLOAD_TOO_LARGE, "{v}");
    assert!(b.client.messages(&id).await.unwrap().is_empty());
}

#[tokio::test]
async fn bad_and_unknown_ids() {
    let b = Backend::start().await;
    let auth = b.bearer();
    for path in [
        "/session/nope",
        "/session/ses_short",
        "/session/ses_0123456789abABCDEFGHIJK%2F",
        "/session/nope/message",
    ] {
        let r = b
            .raw()
            .get(b.url(path))
            .header(header::AUTHORIZATION, &auth)
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), StatusCode::BAD_REQUEST, "{path}");
        let v: Value = r.json().await.unwrap();
        assert!(
            v["error"]["message"].as_str().unwrap().contains("ses_"),
            "{v}"
        );
    }
    let unknown = "ses_0123456789abABCDEFGHIJKLMN";
    let r = b
        .raw()
        .get(b.url(&format!("/session/{unknown}")))
        .header(header::AUTHORIZATION, &auth)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::NOT_FOUND);
    let (s, _) = post(
        &b,
        &format!("/session/{unknown}/prompt"),
        json!({"parts": [{"type": "text", "text": "true"}]}),
    )
    .await;
    assert_eq!(s, StatusCode::NOT_FOUND);
    let id = b.session().await;
    // A malformed permission ID, or an ID of another kind, is refused at the edge with the
    // expected form.
    for bad in ["bad", "msg_0123456789abABCDEFGHIJKLMN"] {
        let (s, v) = post(
            &b,
            &format!("/session/{id}/permission/{bad}"),
            json!({"reply": "once"}),
        )
        .await;
        assert_eq!(s, StatusCode::BAD_REQUEST, "{bad}");
        assert!(
            v["error"]["message"]
                .as_str()
                .unwrap()
                .contains("invalid permission ID: expected `per_`"),
            "{v}"
        );
    }
    let (s, _) = post(
        &b,
        &format!("/session/{id}/permission/per_0123456789abABCDEFGHIJKLMN"),
        json!({"reply": "once"}),
    )
    .await;
    assert_eq!(s, StatusCode::NOT_FOUND);
    let r = b
        .raw()
        .get(b.url("/no/such/route"))
        .header(header::AUTHORIZATION, &auth)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::NOT_FOUND);
    assert!(r.json::<Value>().await.unwrap()["error"]["code"].is_string());
    let r = b
        .raw()
        .put(b.url("/session"))
        .header(header::AUTHORIZATION, &auth)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::METHOD_NOT_ALLOWED);
    let r = b
        .raw()
        .get(b.url("/event"))
        .header(header::AUTHORIZATION, &auth)
        .header("Last-Event-ID", "abc")
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::BAD_REQUEST);
}

#[tokio::test]
async fn attachments_outside_the_project_are_refused() {
    let b = Backend::start().await;
    let outside = tempfile::tempdir().unwrap();
    let secret = outside.path().join("secret.txt");
    std::fs::write(&secret, "secret").unwrap();
    let p = b.project_path();
    std::fs::write(p.join("ok.txt"), "ok").unwrap();
    std::os::unix::fs::symlink(&secret, p.join("link.txt")).unwrap();
    std::os::unix::fs::symlink(outside.path(), p.join("linkdir")).unwrap();
    std::fs::create_dir(p.join("sub")).unwrap();
    let id = b.session().await;
    let path = format!("/session/{id}/prompt");
    let secret_abs = secret.to_string_lossy().into_owned();
    for attachment in [
        "../secret.txt",
        "sub/../ok.txt",
        secret_abs.as_str(),
        "link.txt",
        "linkdir/secret.txt",
        "missing.txt",
        "sub",
        "",
        "/etc/passwd",
    ] {
        let body = json!({"parts": [{"type": "text", "text": "cat \"$1\""}, {"type": "file", "path": attachment}]});
        let (s, v) = post(&b, &path, body).await;
        assert_eq!(s, StatusCode::BAD_REQUEST, "{attachment:?} -> {v}");
        assert_eq!(code(&v), "bad_attachment", "{v}");
    }
    assert!(
        b.client.messages(&id).await.unwrap().is_empty(),
        "nothing stored"
    );
    assert!(b.client.permissions().await.unwrap().is_empty());
    // The same prompt with a file inside the project is fine (absolute paths inside too).
    let inside = std::fs::canonicalize(p.join("ok.txt")).unwrap();
    let body = json!({"parts": [{"type": "text", "text": "cat \"$1\""}, {"type": "file", "path": inside}]});
    let (s, v) = post(&b, &path, body).await;
    assert_eq!(s, StatusCode::ACCEPTED, "{v}");
    assert_eq!(v["message"]["parts"][1]["path"], "ok.txt");
}
