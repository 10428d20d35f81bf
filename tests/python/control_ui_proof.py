"""The Control UI proves the server before anything carries the credential (SECURITY.md, "web
pages in the person's browser" and "other OS users").

Run by crates/cli/tests/control_ui_proof.rs:
    python control_ui_proof.py BINARY
1. In headless Chromium the page computes the same proof as the Rust side: the committed
   vector of crates/protocol/src/proof.rs (read from that file, so both sides test one vector).
2. Signed in, the backend stops: the page drops the credential from sessionStorage at once (a
   reload must not hand it to whatever serves the port next); the backend comes back on the same
   port with the same credential: the page proves it, reconnects and stores the credential again.
3. The backend stops again and a squatter takes the port (HTTP and WebSocket, recording every
   byte): the squatter gets proof requests but never the credential (no Authorization header, no
   connect frame with it); the page stops, forgets the credential and says why.
"""

import os
import re
import shutil
import sys
import tempfile

from selenium.webdriver.common.by import By

from axtest import Backend, browser, check, close_browser, run_checks, wait_for
from squatter import Squatter

HERE = os.path.dirname(os.path.abspath(__file__))
PROOF_RS = os.path.join(HERE, "..", "..", "crates", "protocol", "src", "proof.rs")


def stored_token(driver):
    return driver.execute_script("return sessionStorage.getItem('ax-code.token')")


def state(driver, which):
    """The state of one connection (`gateway-status` or `stream-status`), as the page's one
    connection indicator records it."""
    attr = {"gateway-status": "data-gateway", "stream-status": "data-stream"}[which]
    return driver.find_element(By.CSS_SELECTOR, '[data-testid="connection"]').get_attribute(attr)


def sign_in(driver, backend):
    driver.get(backend.url + "/")
    field = wait_for(lambda: driver.find_element(By.ID, "token"), "the sign-in form shows")
    field.send_keys(backend.token + "\n")
    wait_for(lambda: state(driver, "gateway-status") == "connected"
             and state(driver, "stream-status") == "live",
             "signed in: the gateway and the event stream are live")
    check(stored_token(driver) == backend.token, "the credential is in sessionStorage")


def page_call(driver, expression):
    """Evaluates `expression` (using `m`, the page's proof.js module) in the page."""
    return driver.execute_async_script("""
        const done = arguments[arguments.length - 1];
        import('/assets/proof.js')
          .then((m) => %s)
          .then(done, (e) => done('error: ' + e));
    """ % expression)


def proof_vector(driver):
    text = open(PROOF_RS).read()
    vector = re.search(r'const PROOF_VECTOR: &str = "([0-9a-f]{64})"', text).group(1)
    vector_v6 = re.search(r'const PROOF_VECTOR_V6: &str =\s*"([0-9a-f]{64})"', text).group(1)
    nonce = "'0123456789abcdef'.repeat(4)"
    computed = page_call(driver, f"m.computeProof('test-credential-0123456789', {nonce}, '127.0.0.1:4096')")
    check(computed == vector, f"the page's proof matches the Rust vector ({computed})")
    computed_v6 = page_call(driver, f"m.computeProof('test-credential-0123456789', {nonce}, '[::1]:4096')")
    check(computed_v6 == vector_v6, f"the page's IPv6 proof matches the Rust vector ({computed_v6})")
    other = page_call(driver, f"m.computeProof('test-credential-0123456780', {nonce}, '127.0.0.1:4096')")
    check(other != vector and len(other) == 64, "another credential gives another proof")
    elsewhere = page_call(driver, f"m.computeProof('test-credential-0123456789', {nonce}, '127.0.0.1:4097')")
    check(elsewhere != vector and len(elsewhere) == 64, "another address gives another proof")
    # Which server addresses the page accepts a proof for, by the host it was opened as.
    for host, expected in [
        ("127.0.0.1:4096", ["127.0.0.1:4096"]),
        ("[::1]:4096", ["[::1]:4096"]),
        ("localhost:4096", ["127.0.0.1:4096", "[::1]:4096"]),
        ("LOCALHOST:4096", ["127.0.0.1:4096", "[::1]:4096"]),
        ("127.0.0.1", ["127.0.0.1:80"]),
        ("ax.example:4096", []),
        ("localhost.ax.example:4096", []),
        ("0123abcd.localhost:4096", ["127.0.0.1:4096", "[::1]:4096"]),
        ("a.b.localhost:4096", []),
        ("1.2.3:4096", []),
    ]:
        got = page_call(driver, f"m.proofAddresses({host!r})")
        check(got == expected, f"a page at {host} accepts a proof for {expected} (got {got})")


def run(binary):
    root = tempfile.mkdtemp(prefix="axproof")
    backend = Backend(binary, os.path.join(root, "first"))
    port, token = backend.port, backend.token
    driver = None
    squatter = None
    try:
        backend.api("POST", "/session", {"title": "alpha"})
        driver = browser(os.path.join(root, "profile"), console_log=True)
        sign_in(driver, backend)

        # The backend stops: the tab forgets the stored credential while nothing proves it.
        backend.stop()
        wait_for(lambda: state(driver, "stream-status") == "down", "the page sees the stream drop")
        wait_for(lambda: stored_token(driver) is None,
                 "with the server gone, the credential is no longer in sessionStorage")

        # The same backend comes back (same port and credential): proven, reconnected, stored.
        backend = Backend(binary, os.path.join(root, "second"), port=port, token=token)
        wait_for(lambda: state(driver, "gateway-status") == "connected"
                 and state(driver, "stream-status") == "live",
                 "the page proves the restarted backend and reconnects", timeout=20)
        wait_for(lambda: stored_token(driver) == token, "the credential is stored again")

        # It stops again, and another process takes the port.
        backend.stop()
        wait_for(lambda: state(driver, "stream-status") == "down", "the page sees the stream drop again")
        squatter = Squatter(port)
        wait_for(lambda: driver.find_element(By.CSS_SELECTOR, '[data-testid="signin"]').is_displayed()
                 and driver.find_element(By.CSS_SELECTOR, '[data-testid="signin"]')
                 .get_attribute("data-reason") == "not-proven",
                 "the page stops and shows the sign-in form", timeout=20)
        message = driver.find_element(By.ID, "signin-error").text
        check("could not prove" in message and "ax-code link" in message,
              f"it tells the person what happened and what to do: {message!r}")
        requests = squatter.requests()
        check(any(r.startswith("GET /health?proof=") for r in requests),
              f"the squatter was asked for a proof: {requests}")
        check(not squatter.saw(token), f"the squatter never received the credential: {requests}")
        check(stored_token(driver) is None, "the credential is gone from sessionStorage")
        check(token not in driver.execute_script("return JSON.stringify(sessionStorage) + location.href"),
              "and nowhere in the tab's storage or address")

        # The page computes the Rust side's proof (the check above is that proof at work).
        squatter.close()
        squatter = None
        backend = Backend(binary, os.path.join(root, "third"))
        driver.get(backend.url + "/")
        proof_vector(driver)
    finally:
        if squatter is not None:
            squatter.close()
        close_browser(driver)
        backend.stop()
        shutil.rmtree(root, ignore_errors=True)


def main():
    run_checks(run, sys.argv[1])
    print("all Control UI proof checks passed", flush=True)


if __name__ == "__main__":
    main()
