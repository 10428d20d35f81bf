//! Several machines over TLS, as real processes (docs/hub.md §1): a nats-server that asks
//! for TLS with a certificate a throwaway private CA signed (made with `openssl` at test time),
//! `ax-code serve --join tls://… --nats-ca CA` and `ax-code hub --nats tls://… --nats-ca CA`.
//! With the CA both work; without it, or with another CA, both refuse at start saying TLS
//! verification failed; a CA file that is not PEM certificates is refused naming it. With
//! mutual TLS (`--nats-cert`, `--nats-key`), a server that maps certificates to users lets
//! both in with no password anywhere, and refuses clearly a client without a certificate, with
//! one it maps to no user, or with one another CA signed.

mod support;

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

use ax_hub::{
    MachineName,
    nats::{ClientCert, backend_permissions, hub_permissions},
    testing::{NatsServer, NatsUser, TestCa},
};
use serde_json::Value;
use support::{Env, HUB_WAIT as LONG_WAIT, Reaped, line_channel, line_starting, url_in};
const HUB_PASSWORD: &str = "hub-tls-credential-0123456789abcdef";
const BACKEND_PASSWORD: &str = "pw-tls-backend-0123456789abcdef";
const LAPTOP_NATS_PW: &str = "laptop-nats-pw-tls-4711";
const HUB_NATS_PW: &str = "hub-nats-pw-tls-0815";

/// The TLS server with the two users of docs/hub.md §1, its certificate signed by `ca`.
fn tls_nats(ca: &TestCa) -> NatsServer {
    NatsServer::start_tls_with_users(
        &[
            NatsUser {
                user: "laptop".into(),
                password: LAPTOP_NATS_PW.into(),
                permissions: backend_permissions(&MachineName::new("laptop").unwrap()),
            },
            NatsUser {
                user: "hub".into(),
                password: HUB_NATS_PW.into(),
                permissions: hub_permissions(),
            },
        ],
        ca,
    )
}

/// `ax-code serve --port 0 --join URL --name laptop --nats-user laptop` (its NATS password in
/// the environment), plus `--nats-ca CA` when given.
fn serve_command(env: &Env, url: &str, ca: Option<&Path>) -> Command {
    let mut command = env.command(&[
        "serve",
        "--port",
        "0",
        "--join",
        url,
        "--name",
        "laptop",
        "--nats-user",
        "laptop",
    ]);
    if let Some(ca) = ca {
        command.arg("--nats-ca").arg(ca);
    }
    command
        .env("AX_CODE_SERVER_PASSWORD", BACKEND_PASSWORD)
        .env("AX_CODE_NATS_PASSWORD", LAPTOP_NATS_PW);
    command
}

/// `ax-code hub --nats URL --port 0 --nats-user hub --nats-password-file FILE`, plus
/// `--nats-ca CA` when given.
fn hub_command(env: &Env, url: &str, password_file: &Path, ca: Option<&Path>) -> Command {
    let mut command = env.command(&["hub", "--nats", url, "--port", "0", "--nats-user", "hub"]);
    command.arg("--nats-password-file").arg(password_file);
    if let Some(ca) = ca {
        command.arg("--nats-ca").arg(ca);
    }
    command.env("AX_CODE_HUB_PASSWORD", HUB_PASSWORD);
    command
}

/// The mutual-TLS server: users `laptop` and `hub` (docs/hub.md §1) without passwords, each
/// named by the subject of a client certificate `ca` signed.
fn mtls_nats(ca: &TestCa) -> NatsServer {
    NatsServer::start_mtls_with_users(
        &[
            NatsUser {
                user: "laptop".into(),
                password: String::new(),
                permissions: backend_permissions(&MachineName::new("laptop").unwrap()),
            },
            NatsUser {
                user: "hub".into(),
                password: String::new(),
                permissions: hub_permissions(),
            },
        ],
        ca,
    )
}

/// `--nats-cert CERT --nats-key KEY` of `client`.
fn show_cert(command: &mut Command, client: &ClientCert) {
    command
        .arg("--nats-cert")
        .arg(&client.cert)
        .arg("--nats-key")
        .arg(&client.key);
}

/// `ax-code serve --port 0 --join URL --name laptop --nats-ca CA`, showing `client` when given;
/// no NATS user, no NATS password in the environment.
fn serve_with_cert(env: &Env, url: &str, ca: &Path, client: Option<&ClientCert>) -> Command {
    let mut command = env.command(&["serve", "--port", "0", "--join", url, "--name", "laptop"]);
    command.arg("--nats-ca").arg(ca);
    if let Some(client) = client {
        show_cert(&mut command, client);
    }
    command.env("AX_CODE_SERVER_PASSWORD", BACKEND_PASSWORD);
    command
}

/// A 0600 file holding the hub's NATS password.
fn hub_password_file(dir: &Path) -> std::path::PathBuf {
    use std::os::unix::fs::PermissionsExt;
    let file = dir.join("hub-nats-pw");
    std::fs::write(&file, format!("{HUB_NATS_PW}\n")).unwrap();
    std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o600)).unwrap();
    file
}

/// Makes a session titled `title` on the laptop's own API, then waits until the hub lists the
/// laptop online with it, through NATS only; returns the laptop's entry in the hub's listing.
async fn a_session_seen_through_the_hub(laptop_url: &str, hub_url: &str, title: &str) -> Value {
    let http = reqwest::Client::builder().no_proxy().build().unwrap();
    let created = http
        .post(format!("{laptop_url}/session"))
        .bearer_auth(BACKEND_PASSWORD)
        .json(&serde_json::json!({ "title": title }))
        .send()
        .await
        .unwrap();
    assert_eq!(created.status(), 201);
    tokio::time::timeout(LONG_WAIT, async {
        loop {
            let (_, all) =
                support::hub_call(http.get(format!("{hub_url}/session")), HUB_PASSWORD).await;
            if let Some(laptop) = support::machine_entry(&all, "laptop")
                && laptop["online"] == true
                && support::session_titles(laptop).iter().any(|t| t == title)
            {
                return laptop.clone();
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    })
    .await
    .unwrap_or_else(|_| panic!("the laptop and its session {title:?} through the hub"))
}

/// Runs `command` to its end (killed after [`support::WAIT`], so a hang fails) and returns
/// its stderr after checking it failed.
fn refused(command: &mut Command, what: &str) -> String {
    let out = support::output_bounded(command, support::WAIT);
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(!out.status.success(), "{what} started: {err}");
    err
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn serve_and_hub_join_a_tls_nats_server_with_its_private_ca() {
    let ca = TestCa::new();
    let nats = tls_nats(&ca);
    let url = nats.url();
    assert!(url.starts_with("tls://127.0.0.1:"), "{url}");
    let env = Env::new();

    let mut serve = serve_command(&env, &url, Some(&ca.ca_pem()))
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let serve_lines = line_channel(serve.stdout.take().unwrap());
    let _serve = Reaped(serve);
    let laptop_url = url_in(&line_starting(&serve_lines, "ax-code backend"));
    let joined = line_starting(&serve_lines, "Joined");
    assert!(
        joined.contains("laptop") && joined.contains(&url),
        "{joined}"
    );

    let dir = tempfile::tempdir().unwrap();
    let password_file = hub_password_file(dir.path());
    let (_hub, hub_url) =
        support::spawn_hub(hub_command(&env, &url, &password_file, Some(&ca.ca_pem())));

    // The machine and its session, through NATS over TLS only.
    let listed = a_session_seen_through_the_hub(&laptop_url, &hub_url, "over-tls").await;
    let http = reqwest::Client::builder().no_proxy().build().unwrap();
    assert_eq!(listed["sessions"].as_array().unwrap().len(), 1, "{listed}");
    let machines: Value = http
        .get(format!("{hub_url}/machine"))
        .bearer_auth(HUB_PASSWORD)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let names: Vec<&str> = machines
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|m| m["name"].as_str())
        .collect();
    assert_eq!(names, ["laptop"], "{machines}");
    drop(serve_lines);
}

#[test]
fn without_the_servers_ca_serve_and_hub_refuse_to_start_saying_tls_verification_failed() {
    let ca = TestCa::new();
    let other = TestCa::new();
    let nats = tls_nats(&ca);
    let url = nats.url();
    let env = Env::new();
    let dir = tempfile::tempdir().unwrap();
    let password_file = hub_password_file(dir.path());

    // No --nats-ca: the system's CAs, which do not know the private CA.
    let err = refused(
        &mut serve_command(&env, &url, None),
        "serve without --nats-ca",
    );
    assert!(
        err.contains("TLS verification failed") && err.contains("--nats-ca"),
        "{err}"
    );
    let err = refused(
        &mut hub_command(&env, &url, &password_file, None),
        "hub without --nats-ca",
    );
    assert!(
        err.contains("TLS verification failed") && err.contains("--nats-ca"),
        "{err}"
    );

    // Another CA: refused, naming the bundle that did not vouch for the server.
    let other_pem = other.ca_pem();
    let shown = other_pem.display().to_string();
    let err = refused(
        &mut serve_command(&env, &url, Some(&other_pem)),
        "serve with another CA",
    );
    assert!(
        err.contains("TLS verification failed") && err.contains(&shown),
        "{err}"
    );
    let err = refused(
        &mut hub_command(&env, &url, &password_file, Some(&other_pem)),
        "hub with another CA",
    );
    assert!(
        err.contains("TLS verification failed") && err.contains(&shown),
        "{err}"
    );
    // Neither printed a password while refusing.
    assert!(!err.contains(HUB_NATS_PW) && !err.contains(LAPTOP_NATS_PW));
}

#[test]
fn nats_ca_needs_join_and_a_pem_ca_bundle() {
    let env = Env::new();
    let ca = TestCa::new();
    let mut command = env.command(&["serve", "--port", "0", "--nats-ca"]);
    command.arg(ca.ca_pem());
    let err = refused(&mut command, "serve with --nats-ca but no --join");
    assert!(err.contains("--join"), "{err}");

    // Refused before anything connects (nothing listens on the URL's port).
    let url = format!("tls://127.0.0.1:{}", ax_hub::testing::free_port());
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("no-such-ca.pem");
    let not_pem = dir.path().join("notes.txt");
    std::fs::write(&not_pem, "this is not a certificate\n").unwrap();
    let password_file = hub_password_file(dir.path());
    for (file, why) in [
        (&missing, "cannot read it"),
        (&not_pem, "not a PEM CA bundle"),
    ] {
        let shown = file.display().to_string();
        let err = refused(&mut serve_command(&env, &url, Some(file)), "serve");
        assert!(
            err.contains(&format!("--nats-ca {shown}")) && err.contains(why),
            "{err}"
        );
        let err = refused(
            &mut hub_command(&env, &url, &password_file, Some(file)),
            "hub",
        );
        assert!(
            err.contains(&format!("--nats-ca {shown}")) && err.contains(why),
            "{err}"
        );
    }
}

/// docs/hub.md §1, "Users by client certificate": the server maps each client certificate to
/// its user, so `serve --join` and `hub` work with no NATS password anywhere.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn serve_and_hub_join_with_client_certificates_and_no_password() {
    let ca = TestCa::new();
    let nats = mtls_nats(&ca);
    let url = nats.url();
    let env = Env::new();

    let mut serve = serve_with_cert(&env, &url, &ca.ca_pem(), Some(&ca.client_cert("laptop")))
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let serve_lines = line_channel(serve.stdout.take().unwrap());
    let _serve = Reaped(serve);
    let laptop_url = url_in(&line_starting(&serve_lines, "ax-code backend"));
    line_starting(&serve_lines, "Joined");

    let mut hub = env.command(&["hub", "--nats", &url, "--port", "0", "--nats-ca"]);
    hub.arg(ca.ca_pem());
    show_cert(&mut hub, &ca.client_cert("hub"));
    hub.env("AX_CODE_HUB_PASSWORD", HUB_PASSWORD);
    let (_hub, hub_url) = support::spawn_hub(hub);

    // Both joined by certificate: the session made on the machine reaches the hub.
    a_session_seen_through_the_hub(&laptop_url, &hub_url, "by-certificate").await;
    drop(serve_lines);
}

/// Without a client certificate, with one whose subject is no user, and with one another CA
/// signed: `serve` and `hub` refuse to start, each saying what is wrong with the certificate.
#[test]
fn client_certificates_the_server_refuses_stop_serve_and_hub_at_start_clearly() {
    let ca = TestCa::new();
    let nats = mtls_nats(&ca);
    let url = nats.url();
    let env = Env::new();
    let ca_pem = ca.ca_pem();

    let err = refused(
        &mut serve_with_cert(&env, &url, &ca_pem, None),
        "serve without a client certificate",
    );
    assert!(
        err.contains("client certificate") && err.contains("--nats-cert"),
        "{err}"
    );

    let stranger = ca.client_cert("stranger");
    let err = refused(
        &mut serve_with_cert(&env, &url, &ca_pem, Some(&stranger)),
        "serve with a certificate that names no user",
    );
    assert!(
        err.contains(&format!(
            "refused the client certificate {}",
            stranger.cert.display()
        )) && err.contains("authorization violation"),
        "{err}"
    );

    let other_ca = TestCa::new();
    let foreign = other_ca.client_cert("laptop");
    let err = refused(
        &mut serve_with_cert(&env, &url, &ca_pem, Some(&foreign)),
        "serve with a certificate another CA signed",
    );
    assert!(
        err.contains(&format!(
            "refused the client certificate {}",
            foreign.cert.display()
        )),
        "{err}"
    );
    let mut hub = env.command(&["hub", "--nats", &url, "--port", "0", "--nats-ca"]);
    hub.arg(&ca_pem).env("AX_CODE_HUB_PASSWORD", HUB_PASSWORD);
    show_cert(&mut hub, &foreign);
    let err = refused(&mut hub, "hub with a certificate another CA signed");
    assert!(
        err.contains(&format!(
            "refused the client certificate {}",
            foreign.cert.display()
        )),
        "{err}"
    );
}

/// `--nats-cert` and `--nats-key` go together, only with `--join` for `serve`, and files that
/// are not PEM are refused naming the file, before anything connects, without showing what
/// the key file holds.
#[test]
fn nats_cert_and_key_go_together_and_are_checked_before_connecting() {
    let env = Env::new();
    let ca = TestCa::new();
    let client = ca.client_cert("laptop");
    let url = format!("tls://127.0.0.1:{}", ax_hub::testing::free_port());

    let mut command = env.command(&["serve", "--port", "0", "--join", &url, "--nats-cert"]);
    command.arg(&client.cert);
    let err = refused(&mut command, "serve with --nats-cert alone");
    assert!(err.contains("--nats-key"), "{err}");

    let mut command = env.command(&["serve", "--port", "0"]);
    show_cert(&mut command, &client);
    let err = refused(&mut command, "serve with a certificate but no --join");
    assert!(err.contains("--join"), "{err}");

    let dir = tempfile::tempdir().unwrap();
    let secret_words = "a-key-file-that-is-no-key-9f3e";
    let not_a_key = dir.path().join("not-a-key.pem");
    std::fs::write(&not_a_key, format!("{secret_words}\n")).unwrap();
    let bad_key = ClientCert {
        cert: client.cert.clone(),
        key: not_a_key.clone(),
    };
    let bad_cert = ClientCert {
        cert: not_a_key.clone(),
        key: client.key.clone(),
    };
    for (given, flag, why) in [
        (&bad_key, "--nats-key", "not a PEM private key"),
        (&bad_cert, "--nats-cert", "not a PEM certificate"),
    ] {
        let shown = format!("{flag} {}", not_a_key.display());
        let mut serve = serve_with_cert(&env, &url, &ca.ca_pem(), Some(given));
        let err = refused(&mut serve, "serve with a bad certificate file");
        assert!(err.contains(&shown) && err.contains(why), "{err}");
        assert!(!err.contains(secret_words), "{err}");
        let mut hub = env.command(&["hub", "--nats", &url, "--port", "0"]);
        hub.env("AX_CODE_HUB_PASSWORD", HUB_PASSWORD);
        show_cert(&mut hub, given);
        let err = refused(&mut hub, "hub with a bad certificate file");
        assert!(err.contains(&shown) && err.contains(why), "{err}");
    }
}

#[test]
fn nats_ca_is_described_in_help() {
    for command in ["serve", "hub"] {
        let out = support::output_bounded(
            Command::new(support::AX)
                .args([command, "--help"])
                .env("COLUMNS", "200"),
            support::WAIT,
        );
        assert!(out.status.success());
        let help = String::from_utf8_lossy(&out.stdout);
        let line = help
            .lines()
            .find(|l| l.trim_start().starts_with("--nats-ca <FILE>"))
            .unwrap_or_else(|| panic!("--nats-ca in {help}"));
        assert!(line.contains("CA"), "{line}");
        for (flag, says) in [
            ("--nats-cert <FILE>", "client certificate"),
            ("--nats-key <FILE>", "private key"),
        ] {
            let line = help
                .lines()
                .find(|l| l.trim_start().starts_with(flag))
                .unwrap_or_else(|| panic!("{flag} in {help}"));
            assert!(line.contains(says), "{line}");
        }
    }
}
