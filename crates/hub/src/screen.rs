//! `screen` through the hub (docs/hub.md §2, §4): the hub's `POST /machine/{m}/screen/layout`
//! and `POST /machine/{m}/screen/command` become a [`Request::Screen`] on `ax.req.<machine>`,
//! and the join answers it by opening a gateway connection to its own backend on loopback
//! with its own credential, asking only for the scope the method needs, and sending the
//! gateway method as it is. So the gateway's rules (closed params, targets, the session gate
//! of the screen credential, at most 8 waiting commands, the UIs' own refusals) are applied by
//! the backend itself, and its errors come back with their gateway code.

use crate::wire::{Reply, ReplyError, ScreenMethod};
use ax_client::Secret;
use ax_gateway::{
    ClientError, ClientMode, ConnectOptions, ErrorCode, GatewayClient, Method, Scope,
    client::gateway_url,
};

/// The gateway side of a relayed method. The enum itself is a wire type (`wire.rs`, with
/// the request that carries it); what it means on the gateway is only this module's concern.
impl ScreenMethod {
    fn method(self) -> Method {
        match self {
            ScreenMethod::Layout => Method::UiLayout,
            ScreenMethod::Command => Method::UiCommand,
        }
    }

    /// Least privilege: the backend credential could do more, the connection asks for this.
    fn scope(self) -> Scope {
        match self {
            ScreenMethod::Layout => Scope::Read,
            ScreenMethod::Command => Scope::Write,
        }
    }
}

/// The HTTP status a gateway error code is answered with through the hub.
pub fn status_of(code: ErrorCode) -> u16 {
    match code {
        ErrorCode::InvalidRequest => 400,
        ErrorCode::Forbidden => 403,
        ErrorCode::NotFound => 404,
        ErrorCode::Unavailable => 503,
        ErrorCode::Internal => 500,
    }
}

/// A gateway client's error as a reply, its code and HTTP status kept.
pub(crate) fn error_reply(e: &ClientError) -> Reply {
    let code = e.code();
    Reply::Error(ReplyError {
        status: status_of(code),
        code: code.as_str().to_owned(),
        message: match e.gateway_error() {
            Some(shape) => shape.message.clone(),
            None => e.to_string(),
        },
    })
}

/// Sends one `screen` method to the backend's own gateway and returns its answer.
pub async fn answer(
    backend_url: &str,
    token: &Secret,
    method: ScreenMethod,
    params: serde_json::Value,
) -> Reply {
    let url = match gateway_url(backend_url) {
        Ok(u) => u,
        Err(e) => return error_reply(&e),
    };
    let options = ConnectOptions::new(token.clone(), ClientMode::Cli, vec![method.scope()])
        .with_client_id("ax-code-hub-relay");
    let client = match GatewayClient::connect(&url, options).await {
        Ok(c) => c,
        Err(e) => return error_reply(&e),
    };
    let reply = match client.request(method.method(), params).await {
        Ok(value) => Reply::Ok(value),
        Err(e) => error_reply(&e),
    };
    client.close().await;
    reply
}
