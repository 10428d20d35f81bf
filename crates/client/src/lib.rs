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
//!
//! # The server proves itself before it gets the credential
//!
//! A backend that dies frees its port, and any local user may bind it. So the client never
//! sends `Authorization: Bearer <token>` to a server that has not proven it holds that token:
//! it asks `GET /health?proof=<nonce>` (no credential, a fresh random 256-bit nonce each time)
//! and checks, in constant time, that the answer carries HMAC-SHA256(key = token, message =
//! `"ax-code-server-proof-v2:" + nonce + "@" + address`) (see [`expected_proof`]), where the
//! address is the peer this check's connection actually reached. Otherwise the call fails with
//! [`ClientError::NotProven`] and nothing carrying the credential is sent. A relay on another
//! address (say `[::1]:PORT` beside a backend on `127.0.0.1:PORT`) that forwards the check to
//! the real backend gets a proof for the backend's address, which the client refuses. After a
//! good check a host name such as `localhost` is pinned to the proven address.
//!
//! When it checks (one `/health` round trip each time; no cost per request while verified):
//! - before the first authenticated request of a [`Client`] (its clones share the state);
//! - after any transport error (connection refused or broken, timeout): the client is marked
//!   unverified and the next request checks first;
//! - before each (re)connect of an [`EventStream`]; a stream that breaks also marks its client
//!   unverified;
//! - whenever [`Client::verify`] or [`Client::health`] is called.
//!
//! Residual window: a server that dies and is replaced by a squatter *between two requests*,
//! with no transport error seen in between (the connection pool quietly opens a new
//! connection), is not caught. With the event stream always connected, as in the TUI, a dead
//! backend breaks the stream at once, which marks the client unverified, so the window is the
//! moment between the backend's death and the stream noticing it.
//!
//! # Which credential goes where
//!
//! The local lookups ([`credential_for_url`], [`discover`]) match a record by its exact URL
//! (`localhost`, `127.0.0.1` and `[::1]` are different URLs) and read the screen credential
//! from its own files only (`screen/`). For a URL on this machine only those records count (a
//! backend started with `AX_CODE_SERVER_PASSWORD` recorded it); the variable itself is read
//! only for a backend on another machine, which has no records here.

mod discover;
mod error;
mod events;
mod proof;

use std::{sync::Arc, time::Duration};

use ax_protocol::{
    AbortResult, CreateSession, ErrorBody, Health, Message, MessageId, Permission,
    PermissionAnswer, PermissionId, PermissionReply, Project, Prompt, PromptAccepted, PromptPart,
    RenameSession, Session, SessionId,
};
use reqwest::{Method, RequestBuilder, header};
use serde::{Serialize, de::DeserializeOwned};

/// Credentials are [`Secret`]s: redacted in `Debug`, compared in constant time.
pub use ax_core::Secret;
/// The proof a server holding a credential answers, and the screen credential derived from
/// it: computed in `ax_protocol::proof`, the same code the backend uses.
pub use ax_protocol::proof::{health_proof as expected_proof, screen_credential};
pub use discover::{Found, Kind, credential_for_url, credential_for_url_in, discover};
pub use error::ClientError;
pub use events::EventStream;

/// Time limit of one ordinary request.
const REQUEST_TIMEOUT: Duration = Duration::from_secs(30);

/// A handle to one backend; cheap to clone. Its `Debug` shows the credential redacted.
#[derive(Debug, Clone)]
pub struct Client {
    http: reqwest::Client,
    base: String,
    /// Shared by clones, so [`Client::set_token`] reaches every holder (the TUI's validator).
    token: Arc<std::sync::RwLock<Secret>>,
    verification: Arc<proof::Verification>,
}

/// The `Authorization` header for `token`, marked sensitive so HTTP logging leaves it out.
pub(crate) fn bearer(token: &Secret) -> header::HeaderValue {
    let mut value = header::HeaderValue::from_str(&format!("Bearer {}", token.expose()))
        .unwrap_or_else(|_| header::HeaderValue::from_static("Bearer"));
    value.set_sensitive(true);
    value
}

impl Client {
    /// `url` is the base URL (`http://127.0.0.1:4096`, a trailing slash is fine).
    pub fn new(url: impl Into<String>, token: impl Into<Secret>) -> Result<Client, ClientError> {
        let base = url.into().trim_end_matches('/').to_owned();
        let parsed =
            reqwest::Url::parse(&base).map_err(|e| ClientError::BadUrl(format!("{base}: {e}")))?;
        if parsed.scheme() != "http" || parsed.host_str().is_none() {
            return Err(ClientError::BadUrl(format!(
                "{base}: expected http://HOST:PORT"
            )));
        }
        let verification = Arc::new(proof::Verification::default());
        let http = reqwest::Client::builder()
            .connect_timeout(Duration::from_secs(5))
            // Below the backend's idle timeout, so a pooled connection is not reused just as
            // the backend closes it.
            .pool_idle_timeout(Duration::from_secs(5))
            .dns_resolver(verification.pin.clone())
            .no_proxy()
            // The backend never redirects; a server that does is not followed.
            .redirect(reqwest::redirect::Policy::none())
            .build()
            .map_err(ClientError::transport)?;
        Ok(Client {
            http,
            base,
            token: Arc::new(std::sync::RwLock::new(token.into())),
            verification,
        })
    }

    /// The base URL.
    pub fn url(&self) -> &str {
        &self.base
    }

    fn token(&self) -> Secret {
        self.token.read().unwrap_or_else(|e| e.into_inner()).clone()
    }

    /// Replaces the credential for this client and its clones (e.g. re-read from the local
    /// credential file after the backend restarted with a new one). The server must prove it
    /// holds the new one before it is sent; event streams started later use it.
    pub fn set_token(&self, token: impl Into<Secret>) {
        *self.token.write().unwrap_or_else(|e| e.into_inner()) = token.into();
        self.verification.set(false);
    }

    /// Whether `token` is the credential this client holds (compared in constant time).
    pub fn holds_token(&self, token: &Secret) -> bool {
        self.token() == *token
    }

    fn request(&self, method: Method, path: &str) -> RequestBuilder {
        self.http
            .request(method, format!("{}{path}", self.base))
            .header(header::AUTHORIZATION, bearer(&self.token()))
    }

    /// Whether the server has proven it holds the credential since the last transport error
    /// (then requests go out without another check).
    pub fn is_verified(&self) -> bool {
        self.verification.is_verified()
    }

    /// Checks now, with a fresh nonce, that the server holds the credential (one
    /// `GET /health?proof=` round trip, without the credential). Callers that hand the
    /// credential to another channel (the gateway's connect frame) call this first.
    pub async fn verify(&self) -> Result<Health, ClientError> {
        self.verification
            .check_now(&self.http, &self.base, &self.token())
            .await
    }

    /// For a client built with the screen credential (see [`screen_credential`]): checks now,
    /// with a fresh nonce, that the server holds it (`screenProof` of `GET /health?proof=`),
    /// without sending it. Such a client makes no API calls (the API refuses that credential);
    /// it only checks the server before the gateway's connect frame carries the credential.
    pub async fn verify_screen(&self) -> Result<Health, ClientError> {
        proof::check(
            &self.http,
            &self.base,
            &self.token(),
            proof::ProofField::Screen,
        )
        .await
        .map(|(health, _)| health)
    }

    async fn send<T: DeserializeOwned>(&self, builder: RequestBuilder) -> Result<T, ClientError> {
        let (_, bytes) = self.send_bytes(builder).await?;
        serde_json::from_slice(&bytes).map_err(|e| ClientError::Decode(e.to_string()))
    }

    /// Sends a request; a success answers its `Content-Type` and body.
    async fn send_bytes(
        &self,
        builder: RequestBuilder,
    ) -> Result<(String, bytes::Bytes), ClientError> {
        // Nothing carrying the credential leaves before the server proved it holds it.
        self.verification
            .ensure(&self.http, &self.base, &self.token())
            .await?;
        let lost = |e: reqwest::Error| {
            // Whoever answers next must prove itself again.
            self.verification.set(false);
            ClientError::transport(e)
        };
        let response = builder
            .timeout(REQUEST_TIMEOUT)
            .send()
            .await
            .map_err(lost)?;
        let status = response.status();
        let kind = response
            .headers()
            .get(header::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .unwrap_or_default()
            .to_owned();
        let bytes = response.bytes().await.map_err(lost)?;
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
        Ok((kind, bytes))
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

    /// `GET /health` with a proof check; the same as [`Client::verify`]. It never sends the
    /// credential.
    pub async fn health(&self) -> Result<Health, ClientError> {
        self.verify().await
    }

    /// The project the backend serves.
    pub async fn project(&self) -> Result<Project, ClientError> {
        self.get("/project").await
    }

    /// Newest first.
    pub async fn list_sessions(&self) -> Result<Vec<Session>, ClientError> {
        self.get("/session").await
    }

    /// The listing as the backend wrote it, unparsed: for a relay that passes it on (a hub's
    /// join, docs/hub.md §3), where parsing and writing 1,000 sessions again is pure cost.
    pub async fn list_sessions_json(
        &self,
    ) -> Result<Box<serde_json::value::RawValue>, ClientError> {
        self.get("/session").await
    }

    /// The newest `limit` sessions.
    pub async fn list_sessions_limit(&self, limit: u32) -> Result<Vec<Session>, ClientError> {
        self.get(&format!("/session?limit={limit}")).await
    }

    /// Creates a session with the backend's default agent (`title`: the backend picks one when `None`).
    pub async fn create_session(&self, title: Option<&str>) -> Result<Session, ClientError> {
        self.create_session_with(title, None).await
    }

    /// Creates a session with a named agent (`None`: the backend's default agent).
    pub async fn create_session_with(
        &self,
        title: Option<&str>,
        agent: Option<&str>,
    ) -> Result<Session, ClientError> {
        let body = CreateSession {
            title: title.map(str::to_owned),
            agent: agent.map(str::to_owned),
        };
        self.post("/session", &body).await
    }

    /// Switches the session's agent to another of its modes.
    pub async fn set_mode(&self, id: &SessionId, mode_id: &str) -> Result<Session, ClientError> {
        let body = ax_protocol::SetMode {
            mode_id: mode_id.to_owned(),
        };
        self.post(&format!("/session/{id}/mode"), &body).await
    }

    /// Changes one of the agent's config options (`POST /session/{id}/config`): `value` is a
    /// select's value id or a boolean's state. Answers the session with the agent's full list.
    pub async fn set_config(
        &self,
        id: &SessionId,
        config_id: &str,
        value: ax_protocol::ConfigValue,
    ) -> Result<Session, ClientError> {
        let body = ax_protocol::SetConfigOption {
            config_id: config_id.to_owned(),
            value,
        };
        self.post(&format!("/session/{id}/config"), &body).await
    }

    /// The configured agents a new session can run, the default first (`GET /agent`).
    pub async fn agents(&self) -> Result<ax_protocol::AgentList, ClientError> {
        self.get("/agent").await
    }

    /// Forgets every standing "always" of the session (`DELETE /session/{id}/standing`).
    pub async fn revoke_standing(&self, id: &SessionId) -> Result<Session, ClientError> {
        self.send(self.request(Method::DELETE, &format!("/session/{id}/standing")))
            .await
    }

    /// One session, as stored now.
    pub async fn get_session(&self, id: &SessionId) -> Result<Session, ClientError> {
        self.get(&format!("/session/{id}")).await
    }

    /// Gives the session a new title.
    pub async fn rename_session(
        &self,
        id: &SessionId,
        title: &str,
    ) -> Result<Session, ClientError> {
        let body = RenameSession {
            title: title.to_owned(),
        };
        self.send(
            self.request(Method::PATCH, &format!("/session/{id}"))
                .json(&body),
        )
        .await
    }

    /// Deletes the session and its messages (killing a running command first).
    pub async fn delete_session(&self, id: &SessionId) -> Result<Session, ClientError> {
        self.send(self.request(Method::DELETE, &format!("/session/{id}")))
            .await
    }

    /// The project's files that match `query` (fuzzy, `.gitignore` respected), best first; at
    /// most `limit` (1 to 200).
    pub async fn find_files(
        &self,
        query: &str,
        limit: u32,
    ) -> Result<ax_protocol::FoundFiles, ClientError> {
        self.send(
            self.request(Method::GET, "/find/file")
                .query(&[("query", query), ("limit", &limit.to_string())]),
        )
        .await
    }

    /// The session's transcript, oldest first.
    pub async fn messages(&self, id: &SessionId) -> Result<Vec<Message>, ClientError> {
        self.get(&format!("/session/{id}/message")).await
    }

    /// Image `index` of message `message` (a person's message with `image` parts): its MIME
    /// type and bytes.
    pub async fn image(
        &self,
        id: &SessionId,
        message: &MessageId,
        index: u32,
    ) -> Result<(String, Vec<u8>), ClientError> {
        let path = format!("/session/{id}/message/{message}/image/{index}");
        let (kind, bytes) = self.send_bytes(self.request(Method::GET, &path)).await?;
        Ok((kind, bytes.to_vec()))
    }

    /// Sends a prompt; the answer says what was stored and which approval, if any, the agent waits for.
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

    /// Sends a prompt now when the session is free and nothing is queued, else queues it
    /// behind the running turn (docs/backend.md §3).
    pub async fn queue_prompt(
        &self,
        id: &SessionId,
        prompt: &Prompt,
    ) -> Result<ax_protocol::queue::QueueAnswer, ClientError> {
        self.post(&format!("/session/{id}/queue"), prompt).await
    }

    /// The session's prompt queue, next first.
    pub async fn prompt_queue(
        &self,
        id: &SessionId,
    ) -> Result<ax_protocol::queue::PromptQueue, ClientError> {
        self.get(&format!("/session/{id}/queue")).await
    }

    /// Replaces a queued prompt; 404 once it was sent or cancelled.
    pub async fn edit_queued(
        &self,
        id: &SessionId,
        qid: &ax_protocol::QueuedId,
        prompt: &Prompt,
    ) -> Result<ax_protocol::queue::QueuedPrompt, ClientError> {
        self.send(
            self.request(Method::PATCH, &format!("/session/{id}/queue/{qid}"))
                .json(prompt),
        )
        .await
    }

    /// Cancels a queued prompt; 404 once it was sent or cancelled.
    pub async fn cancel_queued(
        &self,
        id: &SessionId,
        qid: &ax_protocol::QueuedId,
    ) -> Result<ax_protocol::queue::PromptQueue, ClientError> {
        self.send(self.request(Method::DELETE, &format!("/session/{id}/queue/{qid}")))
            .await
    }

    /// Sends a queued prompt now: the running turn is stopped and this prompt goes next.
    pub async fn send_queued_now(
        &self,
        id: &SessionId,
        qid: &ax_protocol::QueuedId,
    ) -> Result<ax_protocol::queue::PromptQueue, ClientError> {
        self.send(self.request(Method::POST, &format!("/session/{id}/queue/{qid}/send")))
            .await
    }

    /// Lets a paused queue flow again.
    pub async fn resume_queue(
        &self,
        id: &SessionId,
    ) -> Result<ax_protocol::queue::PromptQueue, ClientError> {
        self.send(self.request(Method::POST, &format!("/session/{id}/queue/resume")))
            .await
    }

    /// Stops the running work; answers once it has stopped.
    pub async fn abort(&self, id: &SessionId) -> Result<AbortResult, ClientError> {
        self.send(self.request(Method::POST, &format!("/session/{id}/abort")))
            .await
    }

    /// A one-time Control UI sign-in code (`POST /signin/code`), for a link `URL/#code=CODE`
    /// that carries no credential.
    pub async fn sign_in_code(&self) -> Result<ax_protocol::SignInCode, ClientError> {
        self.send(self.request(Method::POST, "/signin/code")).await
    }

    /// Pending approvals.
    pub async fn permissions(&self) -> Result<Vec<Permission>, ClientError> {
        self.get("/permission").await
    }

    /// Answers a pending permission (its ID as the backend gave it).
    pub async fn reply_permission(
        &self,
        id: &SessionId,
        permission_id: &PermissionId,
        reply: PermissionReply,
    ) -> Result<Permission, ClientError> {
        self.post(
            &format!("/session/{id}/permission/{permission_id}"),
            &PermissionAnswer {
                reply,
                option_id: None,
            },
        )
        .await
    }

    /// Answers a pending permission with the exact option `option_id` of its `options` (an
    /// agent may offer several of one kind, docs/agents.md §5); `reply` is that option's kind.
    pub async fn reply_permission_option(
        &self,
        id: &SessionId,
        permission_id: &PermissionId,
        reply: PermissionReply,
        option_id: &str,
    ) -> Result<Permission, ClientError> {
        self.post(
            &format!("/session/{id}/permission/{permission_id}"),
            &PermissionAnswer {
                reply,
                option_id: Some(option_id.to_owned()),
            },
        )
        .await
    }

    /// The live event stream, resuming after `last_id` when given. It reconnects by itself
    /// (backoff 100 ms doubling to 5 s) and resumes with `Last-Event-ID`; a `reset` event means
    /// the gap could not be replayed and the caller should reload its state. It ends with one
    /// `Err` only for a fatal error (wrong credential, refused Host/Origin, bad URL, or
    /// [`ClientError::NotProven`]: the server failed the proof check made before every
    /// connect, so the credential was not sent).
    pub fn events(&self, last_id: Option<u64>) -> EventStream {
        events::spawn(
            self.http.clone(),
            self.base.clone(),
            self.token(),
            self.verification.clone(),
            last_id,
        )
    }
}
