//! The server proof: before the credential goes anywhere, the server answers
//! `GET /health?proof=<nonce>` with HMAC-SHA256(key = credential, message =
//! `"ax-code-server-proof-v2:" + nonce + "@" + the server's address`), which only a holder of
//! the credential can compute. The nonce is fresh and random per check, so an old answer cannot
//! be replayed; the address is the peer the client actually connected to, so a relay that
//! forwards the check to the real backend gets a proof for the backend's address, not its own.
//!
//! After a good check the client pins the proven address for its host name ([`Pin`]), so
//! later connections to a name such as `localhost` go where the proof was made, not to
//! whichever address the resolver lists first.

use std::{
    net::{IpAddr, SocketAddr},
    sync::{
        Mutex,
        atomic::{AtomicBool, Ordering},
    },
    time::Duration,
};

use ax_core::Secret;
use ax_protocol::Health;
use reqwest::{
    StatusCode,
    dns::{Addrs, Name, Resolve, Resolving},
};
use subtle::ConstantTimeEq;

use crate::ClientError;

/// Time limit of one proof check (connect included).
const CHECK_TIMEOUT: Duration = Duration::from_secs(10);
/// A `/health` answer is far smaller; a bigger one is not a backend's.
const MAX_HEALTH_BYTES: usize = 16 * 1024;

/// Whether the server behind one base URL has proven it holds the credential since the last
/// transport error. Shared by a client's clones and its event streams.
#[derive(Debug, Default)]
pub(crate) struct Verification {
    verified: AtomicBool,
    /// Serializes checks, so concurrent first requests cost one round trip, not one each.
    check: tokio::sync::Mutex<()>,
    /// The client's resolver, pinned to the address of the last good check.
    pub(crate) pin: std::sync::Arc<Pin>,
}

/// The client's resolver for host names: the system's until a proof check succeeds, then only
/// the proven address. (URLs with an IP address never reach a resolver.)
#[derive(Debug, Default)]
pub(crate) struct Pin {
    addr: Mutex<Option<IpAddr>>,
}

impl Pin {
    fn set(&self, addr: SocketAddr) {
        *self.addr.lock().unwrap_or_else(|e| e.into_inner()) = Some(addr.ip());
    }
}

impl Resolve for Pin {
    fn resolve(&self, name: Name) -> Resolving {
        let pinned = *self.addr.lock().unwrap_or_else(|e| e.into_inner());
        let host = name.as_str().to_owned();
        Box::pin(async move {
            let addrs: Vec<SocketAddr> = match pinned {
                Some(ip) => vec![SocketAddr::new(ip, 0)],
                None => tokio::net::lookup_host((host.as_str(), 0)).await?.collect(),
            };
            Ok(Box::new(addrs.into_iter()) as Addrs)
        })
    }
}

impl Verification {
    pub(crate) fn is_verified(&self) -> bool {
        self.verified.load(Ordering::Acquire)
    }

    pub(crate) fn set(&self, verified: bool) {
        self.verified.store(verified, Ordering::Release);
    }

    /// Checks the server unless it is verified already.
    pub(crate) async fn ensure(
        &self,
        http: &reqwest::Client,
        base: &str,
        token: &Secret,
    ) -> Result<(), ClientError> {
        if self.is_verified() {
            return Ok(());
        }
        let _one_at_a_time = self.check.lock().await;
        if self.is_verified() {
            return Ok(());
        }
        self.check_now(http, base, token).await.map(|_| ())
    }

    /// A fresh check, whatever the state; records its outcome.
    pub(crate) async fn check_now(
        &self,
        http: &reqwest::Client,
        base: &str,
        token: &Secret,
    ) -> Result<Health, ClientError> {
        let result = check(http, base, token, ProofField::Full).await;
        self.set(result.is_ok());
        result.map(|(health, server)| {
            self.pin.set(server);
            health
        })
    }
}

/// Which field of the `/health` answer proves the credential checked.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ProofField {
    /// `proof`, keyed by the full backend credential.
    Full,
    /// `screenProof`, keyed by the screen credential.
    Screen,
}

/// 32 random bytes as 64 lowercase hex characters.
pub(crate) fn nonce() -> Result<String, ax_core::RandomError> {
    ax_core::random::random_hex(32)
}

/// One `GET /health?proof=<fresh nonce>` round trip, without the credential. `Ok` (with the
/// address the proof was made for) only when the answer carries the right proof for the
/// address this check connected to; a server that cannot be reached is a transport error, any
/// other answer is [`ClientError::NotProven`].
pub(crate) async fn check(
    http: &reqwest::Client,
    base: &str,
    token: &Secret,
    field: ProofField,
) -> Result<(Health, SocketAddr), ClientError> {
    let not_proven = |reason: &str| ClientError::NotProven {
        url: base.to_owned(),
        reason: reason.to_owned(),
    };
    let nonce = nonce().map_err(|_| not_proven("no random nonce could be drawn"))?;
    let mut response = http
        .get(format!("{base}/health?proof={nonce}"))
        .timeout(CHECK_TIMEOUT)
        .send()
        .await
        .map_err(ClientError::transport)?;
    // The peer this connection reached: the proof must be bound to it, whatever the Host said.
    let Some(server) = response.remote_addr() else {
        return Err(not_proven("the connection has no peer address"));
    };
    if response.status() != StatusCode::OK {
        return Err(not_proven(&format!(
            "/health answered HTTP {}",
            response.status().as_u16()
        )));
    }
    if response
        .content_length()
        .is_some_and(|n| n > MAX_HEALTH_BYTES as u64)
    {
        return Err(not_proven("/health answered too much"));
    }
    let mut body = Vec::new();
    while let Some(chunk) = response.chunk().await.map_err(ClientError::transport)? {
        if body.len() + chunk.len() > MAX_HEALTH_BYTES {
            return Err(not_proven("/health answered too much"));
        }
        body.extend_from_slice(&chunk);
    }
    let health: Health = serde_json::from_slice(&body)
        .map_err(|_| not_proven("/health did not answer a health record"))?;
    let proof = match field {
        ProofField::Full => health.proof.as_deref(),
        ProofField::Screen => health.screen_proof.as_deref(),
    };
    let Some(proof) = proof else {
        return Err(not_proven("/health answered without a proof"));
    };
    let expected = ax_protocol::proof::health_proof(token.expose(), &nonce, server);
    if !bool::from(proof.as_bytes().ct_eq(expected.as_bytes())) {
        return Err(not_proven(&format!(
            "/health answered a wrong proof for {}",
            ax_protocol::proof::proof_address(server)
        )));
    }
    Ok((health, server))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nonces_are_fresh_64_lowercase_hex() {
        let a = nonce().unwrap();
        let b = nonce().unwrap();
        assert_eq!(a.len(), 64);
        assert!(
            a.bytes()
                .all(|c| c.is_ascii_digit() || (b'a'..=b'f').contains(&c))
        );
        assert_ne!(a, b);
    }
}
