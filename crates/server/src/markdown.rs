//! `POST /markdown`: an agent's Markdown as a tree of plain data, for the Control UI.
//!
//! The tree, its rules (raw HTML as text, only `http`, `https` and `mailto` link targets, no
//! image ever loaded) and its bounds are `ax-markdown`'s, shared with the hub, which serves
//! the same route for its page (docs/hub.md §4). This is the route: a strict body, the text
//! at most [`MAX_TEXT_BYTES`], the parse run off the async workers (`spawn_blocking`).
//! See `docs/backend.md` §3 and `docs/control-ui.md`.

use ax_markdown::{MAX_TEXT_BYTES, MarkdownRequest, MarkdownTree, parse};
use axum::{Json, extract::rejection::JsonRejection, http::StatusCode};

use crate::error::Failure;

/// The body as a JSON object `{"text"}` and nothing else (serde alone would also take `["…"]`).
pub fn parse_request(value: serde_json::Value) -> Result<MarkdownRequest, Failure> {
    ax_markdown::parse_request(value).map_err(Failure::bad_request)
}

/// The handler: strict body, bounded text, the tree.
pub async fn render(
    input: Result<Json<serde_json::Value>, JsonRejection>,
) -> Result<Json<MarkdownTree>, Failure> {
    let request = match input {
        Ok(Json(v)) => parse_request(v)?,
        Err(rejection) if rejection.status() == StatusCode::PAYLOAD_TOO_LARGE => {
            return Err(Failure::too_large(
                "the request body is larger than this API accepts",
            ));
        }
        Err(rejection) => return Err(Failure::bad_request(rejection.body_text())),
    };
    if request.text.len() > MAX_TEXT_BYTES {
        return Err(Failure::too_large(format!(
            "Markdown text is at most {MAX_TEXT_BYTES} bytes"
        )));
    }
    let blocks = tokio::task::spawn_blocking(move || parse(&request.text))
        .await
        .map_err(|_| Failure::internal("the Markdown parser failed"))?;
    Ok(Json(MarkdownTree { blocks }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn the_request_shape_is_strict() {
        assert!(parse_request(json!({"text": "a"})).is_ok());
        for bad in [
            json!({"text": "a", "html": true}),
            json!({}),
            json!({"text": 1}),
            json!(["a"]),
            json!("a"),
        ] {
            let e = parse_request(bad.clone()).unwrap_err();
            assert_eq!(e.status, StatusCode::BAD_REQUEST, "{bad}");
        }
        let bad = json!({"blocks": [{"t": "script", "text": "x"}]});
        assert!(serde_json::from_value::<MarkdownTree>(bad).is_err());
        let bad = json!({"blocks": [{"t": "text", "text": "x", "html": "<b>"}]});
        assert!(serde_json::from_value::<MarkdownTree>(bad).is_err());
    }

    /// The route over real HTTP: the credential, the strict body, the size bound.
    #[tokio::test]
    async fn the_endpoint_needs_the_credential_is_strict_and_bounded() {
        let dir = tempfile::tempdir().unwrap();
        let project = dir.path().join("project");
        std::fs::create_dir(&project).unwrap();
        let mut config = crate::ServerConfig::new(&project, dir.path().join("data"));
        config.register = false;
        let server = crate::start(config).await.unwrap();
        let url = format!("{}/markdown", server.url());
        let http = reqwest::Client::new();
        let post = |body: String, token: Option<String>| {
            let mut req = http
                .post(&url)
                .header("Content-Type", "application/json")
                .body(body);
            if let Some(t) = token {
                req = req.bearer_auth(t);
            }
            req.send()
        };
        let token = Some(server.token().expose().to_owned());
        let ok = json!({"text": "**hi** <b>x</b>"}).to_string();

        let res = post(ok.clone(), None).await.unwrap();
        assert_eq!(res.status(), 401);
        let res = post(ok.clone(), Some("wrong-token-0123456789".into()))
            .await
            .unwrap();
        assert_eq!(res.status(), 401);
        let res = post(ok.clone(), Some(server.screen_token().expose().to_owned()))
            .await
            .unwrap();
        assert_eq!(res.status(), 401, "the screen credential is refused");

        let res = post(ok, token.clone()).await.unwrap();
        assert_eq!(res.status(), 200);
        let v: serde_json::Value = res.json().await.unwrap();
        assert_eq!(
            v,
            json!({"blocks": [{"t": "p", "c": [
                {"t": "strong", "c": [{"t": "text", "text": "hi"}]},
                {"t": "text", "text": " <b>x</b>"}
            ]}]})
        );

        for (body, status) in [
            (json!({"text": "a", "extra": 1}).to_string(), 400),
            ("{}".to_owned(), 400),
            (r#"["a"]"#.to_owned(), 400),
            ("not json".to_owned(), 400),
            (
                json!({"text": "a".repeat(MAX_TEXT_BYTES + 1)}).to_string(),
                413,
            ),
            (json!({"text": "a".repeat(600 * 1024)}).to_string(), 413),
        ] {
            let res = post(body.clone(), token.clone()).await.unwrap();
            assert_eq!(res.status(), status, "{}", &body[..body.len().min(60)]);
            let e: serde_json::Value = res.json().await.unwrap();
            assert!(e["error"]["code"].is_string(), "{e}");
        }
        let res = post(
            json!({"text": "a".repeat(MAX_TEXT_BYTES)}).to_string(),
            token.clone(),
        )
        .await
        .unwrap();
        assert_eq!(res.status(), 200, "exactly the bound is accepted");
        server.shutdown().await;
    }
}
