//! The answers of `POST /signin/code` and `POST /signin` as axum responses (feature `serve`),
//! one implementation for the backend and the hub. Both answers carry a secret (a code or the
//! credential), so neither may be stored by a cache. The code store is `ax_core::signin`.

use std::time::Instant;

use ax_core::{RandomError, Secret, signin::Codes};
use axum::{
    Json,
    http::{HeaderValue, StatusCode, header},
    response::{IntoResponse, Response},
};

use crate::{SignInCode, SignInGrant};

/// `response` with `Cache-Control: no-store`.
pub fn no_store(mut response: Response) -> Response {
    response
        .headers_mut()
        .insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    response
}

/// `POST /signin/code`'s 201: a fresh code from `codes`, valid from `now`.
pub fn minted(codes: &Codes, now: Instant) -> Result<Response, RandomError> {
    let code = codes.mint(now)?;
    let expires_in_ms = u64::try_from(codes.ttl().as_millis()).unwrap_or(u64::MAX);
    let answer = SignInCode {
        code,
        expires_in_ms,
    };
    Ok(no_store(
        (StatusCode::CREATED, Json(answer)).into_response(),
    ))
}

/// `POST /signin`'s answer to a code that was live: the credential.
pub fn granted(token: Secret) -> Response {
    no_store(Json(SignInGrant { token }).into_response())
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    async fn body(res: Response) -> serde_json::Value {
        let bytes = axum::body::to_bytes(res.into_body(), usize::MAX)
            .await
            .unwrap();
        serde_json::from_slice(&bytes).unwrap()
    }

    #[tokio::test]
    async fn a_minted_code_is_201_uncached_and_redeems_once() {
        let codes = Codes::new(Duration::from_secs(60));
        let now = Instant::now();
        let res = minted(&codes, now).unwrap();
        assert_eq!(res.status(), StatusCode::CREATED);
        assert_eq!(res.headers()[header::CACHE_CONTROL], "no-store");
        let answer: SignInCode = serde_json::from_value(body(res).await).unwrap();
        assert_eq!(answer.expires_in_ms, 60_000);
        assert!(codes.redeem(answer.code.expose(), now));
        assert!(!codes.redeem(answer.code.expose(), now));
    }

    #[tokio::test]
    async fn a_grant_carries_the_token_uncached() {
        let res = granted(Secret::new("t0ken".to_owned()));
        assert_eq!(res.status(), StatusCode::OK);
        assert_eq!(res.headers()[header::CACHE_CONTROL], "no-store");
        assert_eq!(body(res).await, serde_json::json!({"token": "t0ken"}));
    }
}
