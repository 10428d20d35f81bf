//! Typed client for the ax-code backend: every API route, the `/event` stream with reconnect
//! and `Last-Event-ID` resume, and the local credential lookup (`servers/` registry and the
//! `serve` credential file) that `attach`, `session list` and the TUI use.
//!
//! ```no_run
//! # async fn demo() -> Result<(), ax_client::ClientError> {
//! use ax_client::Client;
//! let client = Client::new("http://127.0.0.1:4096", "the-token")?;
//! let session = client.create_session(Some("demo")).await?;
//! let mut events = client.events(None);
//! client.prompt_text(&session.id, "echo hi").await?;
//! while let Some(item) = events.next().await {
//!     println!("{:?}", item?.event);
//! }
//! # Ok(()) }
//! ```

mod discover;
mod error;
mod events;

use std::time::Duration;

use ax_protocol::{
    AbortResult, CreateSession, ErrorBody, Health, Message, Permission, PermissionAnswer,
    PermissionReply, Project, Prompt, PromptAccepted, PromptPart, Session, SessionId,
};
use reqwest::{Method, RequestBuilder, header};
use serde::{Serialize, de::DeserializeOwned};

pub use discover::{credential_for_url, credential_for_url_in, discover, same_origin};
pub use error::ClientError;
pub use events::EventStream;

/// Time limit of one ordinary request.
const REQUEST_TIMEOUT: Duration = Duration::from_secs(30);

/// A handle to one backend; cheap to clone.
#[derive(Clone)]
pub struct Client {
    http: reqwest::Client,
    base: String,
    token: String,
}

impl std::fmt::Debug for Client {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Client")
            .field("url", &self.base)
            .finish_non_exhaustive()
    }
}

impl Client {
    /// `url` is the base URL (`http://127.0.0.1:4096`, a trailing slash is fine).
    pub fn new(url: impl Into<String>, token: impl Into<String>) -> Result<Client, ClientError> {
        let base = url.into().trim_end_matches('/').to_owned();
        let parsed =
            reqwest::Url::parse(&base).map_err(|e| ClientError::BadUrl(format!("{base}: {e}")))?;
        if parsed.scheme() != "http" || parsed.host_str().is_none() {
            return Err(ClientError::BadUrl(format!(
                "{base}: expected http://HOST:PORT"
            )));
        }
        let http = reqwest::Client::builder()
            .connect_timeout(Duration::from_secs(5))
            .no_proxy()
            .build()
            .map_err(ClientError::transport)?;
        Ok(Client {
            http,
            base,
            token: token.into(),
        })
    }

    /// The base URL.
    pub fn url(&self) -> &str {
        &self.base
    }

    fn request(&self, method: Method, path: &str) -> RequestBuilder {
        self.http
            .request(method, format!("{}{path}", self.base))
            .header(header::AUTHORIZATION, format!("Bearer {}", self.token))
    }

    async fn send<T: DeserializeOwned>(&self, builder: RequestBuilder) -> Result<T, ClientError> {
        let response = builder
            .timeout(REQUEST_TIMEOUT)
            .send()
            .await
            .map_err(ClientError::transport)?;
        let status = response.status();
        let bytes = response.bytes().await.map_err(ClientError::transport)?;
        if !status.is_success() {
            return Err(match serde_json::from_slice::<ErrorBody>(&bytes) {
                Ok(body) => ClientError::Api {
                    status: status.as_u16(),
                    error: body.error,
                },
                Err(_) => ClientError::Status {
                    status: status.as_u16(),
                },
            });
        }
        serde_json::from_slice(&bytes).map_err(|e| ClientError::Decode(e.to_string()))
    }

    async fn get<T: DeserializeOwned>(&self, path: &str) -> Result<T, ClientError> {
        self.send(self.request(Method::GET, path)).await
    }

    async fn post<B: Serialize, T: DeserializeOwned>(
        &self,
        path: &str,
        body: &B,
    ) -> Result<T, ClientError> {
        self.send(self.request(Method::POST, path).json(body)).await
    }

    /// `GET /health` (needs no credential, but sending it does no harm).
    pub async fn health(&self) -> Result<Health, ClientError> {
        self.get("/health").await
    }

    pub async fn project(&self) -> Result<Project, ClientError> {
        self.get("/project").await
    }

    /// Newest first.
    pub async fn list_sessions(&self) -> Result<Vec<Session>, ClientError> {
        self.get("/session").await
    }

    /// The newest `limit` sessions.
    pub async fn list_sessions_limit(&self, limit: u32) -> Result<Vec<Session>, ClientError> {
        self.get(&format!("/session?limit={limit}")).await
    }

    pub async fn create_session(&self, title: Option<&str>) -> Result<Session, ClientError> {
        let body = CreateSession {
            title: title.map(str::to_owned),
        };
        self.post("/session", &body).await
    }

    pub async fn get_session(&self, id: &SessionId) -> Result<Session, ClientError> {
        self.get(&format!("/session/{id}")).await
    }

    /// Deletes the session and its messages (killing a running command first).
    pub async fn delete_session(&self, id: &SessionId) -> Result<Session, ClientError> {
        self.send(self.request(Method::DELETE, &format!("/session/{id}")))
            .await
    }

    pub async fn messages(&self, id: &SessionId) -> Result<Vec<Message>, ClientError> {
        self.get(&format!("/session/{id}/message")).await
    }

    pub async fn prompt(
        &self,
        id: &SessionId,
        prompt: &Prompt,
    ) -> Result<PromptAccepted, ClientError> {
        self.post(&format!("/session/{id}/prompt"), prompt).await
    }

    /// A prompt of one text part.
    pub async fn prompt_text(
        &self,
        id: &SessionId,
        text: &str,
    ) -> Result<PromptAccepted, ClientError> {
        let prompt = Prompt {
            parts: vec![PromptPart::Text {
                text: text.to_owned(),
            }],
        };
        self.prompt(id, &prompt).await
    }

    /// Stops the running work; answers once it has stopped.
    pub async fn abort(&self, id: &SessionId) -> Result<AbortResult, ClientError> {
        self.send(self.request(Method::POST, &format!("/session/{id}/abort")))
            .await
    }

    /// Pending approvals.
    pub async fn permissions(&self) -> Result<Vec<Permission>, ClientError> {
        self.get("/permission").await
    }

    pub async fn reply_permission(
        &self,
        id: &SessionId,
        permission_id: &str,
        reply: PermissionReply,
    ) -> Result<Permission, ClientError> {
        self.post(
            &format!("/session/{id}/permission/{permission_id}"),
            &PermissionAnswer { reply },
        )
        .await
    }

    /// The live event stream, resuming after `last_id` when given. It reconnects by itself
    /// (backoff 100 ms doubling to 5 s) and resumes with `Last-Event-ID`; a `reset` event means
    /// the gap could not be replayed and the caller should reload its state. It ends with one
    /// `Err` only for a fatal error (wrong credential, refused Host/Origin, bad URL).
    pub fn events(&self, last_id: Option<u64>) -> EventStream {
        events::spawn(
            self.http.clone(),
            format!("{}/event", self.base),
            self.token.clone(),
            last_id,
        )
    }
}
