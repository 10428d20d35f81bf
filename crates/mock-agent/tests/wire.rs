//! The mock agent on the wire, without the ax-acp runtime: what it offers and answers for the
//! daily-driver features (config options, session titles, prompt blocks, prompt queueing), as
//! a client sees it in raw JSON-RPC lines. The runtime's own tests build on these facts.

use std::{
    io::{BufRead, BufReader, Write},
    process::{Child, ChildStdin, Command, Stdio},
    sync::mpsc::{Receiver, RecvTimeoutError},
    time::{Duration, Instant},
};

use serde_json::{Value, json};

const WAIT: Duration = Duration::from_secs(20);

/// One mock agent process and the lines it writes.
struct Wire {
    child: Child,
    stdin: ChildStdin,
    lines: Receiver<Value>,
    next_id: u64,
    /// Lines read while waiting for something else, oldest first.
    seen: Vec<Value>,
}

impl Wire {
    fn start(env: &[(&str, &str)]) -> Wire {
        let project = std::env::temp_dir();
        let mut child = Command::new(env!("CARGO_BIN_EXE_ax-mock-agent"))
            .envs(env.iter().copied())
            .current_dir(project)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let stdin = child.stdin.take().unwrap();
        let stdout = child.stdout.take().unwrap();
        let (tx, lines) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                if let Ok(v) = serde_json::from_str::<Value>(&line)
                    && tx.send(v).is_err()
                {
                    break;
                }
            }
        });
        let mut wire = Wire {
            child,
            stdin,
            lines,
            next_id: 0,
            seen: Vec::new(),
        };
        let init = wire.call(
            "initialize",
            json!({"protocolVersion": 1, "clientCapabilities": {}}),
        );
        assert!(init["result"].is_object(), "{init}");
        wire.seen.push(init);
        wire
    }

    fn send(&mut self, method: &str, params: Value) -> u64 {
        self.next_id += 1;
        let line =
            json!({"jsonrpc": "2.0", "id": self.next_id, "method": method, "params": params});
        writeln!(self.stdin, "{line}").unwrap();
        self.stdin.flush().unwrap();
        self.next_id
    }

    /// The next line that satisfies `want`, keeping the others in `seen`.
    fn wait_for(&mut self, what: &str, want: impl Fn(&Value) -> bool) -> Value {
        if let Some(i) = self.seen.iter().position(&want) {
            return self.seen.remove(i);
        }
        let deadline = Instant::now() + WAIT;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.lines.recv_timeout(left) {
                Ok(v) if want(&v) => return v,
                Ok(v) => self.seen.push(v),
                Err(RecvTimeoutError::Timeout) => panic!("no {what} within {WAIT:?}"),
                Err(RecvTimeoutError::Disconnected) => panic!("the agent exited before {what}"),
            }
        }
    }

    fn answer(&mut self, id: u64) -> Value {
        self.wait_for(&format!("answer {id}"), |v| {
            v["id"] == json!(id) && v.get("method").is_none()
        })
    }

    fn call(&mut self, method: &str, params: Value) -> Value {
        let id = self.send(method, params);
        self.answer(id)
    }

    fn new_session(&mut self) -> (String, Value) {
        let answer = self.call("session/new", json!({"cwd": "/", "mcpServers": []}));
        let id = answer["result"]["sessionId"].as_str().unwrap().to_owned();
        (id, answer["result"].clone())
    }

    /// Everything the agent said in updates of `session` (text chunks) since the last call.
    fn said(&mut self, session: &str) -> String {
        let mut text = String::new();
        for v in self.seen.drain(..) {
            if v["method"] == "session/update"
                && v["params"]["sessionId"] == session
                && v["params"]["update"]["sessionUpdate"] == "agent_message_chunk"
            {
                text.push_str(v["params"]["update"]["content"]["text"].as_str().unwrap());
            }
        }
        text
    }

    fn prompt(&mut self, session: &str, blocks: Value) -> Value {
        self.call(
            "session/prompt",
            json!({"sessionId": session, "prompt": blocks}),
        )
    }

    fn updates(&self, kind: &str) -> Vec<Value> {
        self.seen
            .iter()
            .filter(|v| v["params"]["update"]["sessionUpdate"] == kind)
            .map(|v| v["params"]["update"].clone())
            .collect()
    }
}

impl Drop for Wire {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn script(text: &str) -> Value {
    json!([{"type": "text", "text": text}])
}

fn current(options: &Value, id: &str) -> Value {
    options
        .as_array()
        .unwrap()
        .iter()
        .find(|o| o["id"] == id)
        .unwrap_or_else(|| panic!("no option {id} in {options}"))["currentValue"]
        .clone()
}

#[test]
fn config_options_are_offered_set_and_answered_in_full() {
    let mut w = Wire::start(&[]);
    let (sid, opened) = w.new_session();
    let options = &opened["configOptions"];
    let ids: Vec<&str> = options
        .as_array()
        .unwrap()
        .iter()
        .map(|o| o["id"].as_str().unwrap())
        .collect();
    assert_eq!(ids, ["mode", "model", "reasoning_effort", "fast"]);
    assert_eq!(options[1]["category"], "model");
    assert_eq!(options[1]["type"], "select");
    assert_eq!(options[2]["category"], "thought_level");
    assert_eq!(options[3]["type"], "boolean");
    assert_eq!(current(options, "fast"), json!(false));

    let set = w.call(
        "session/set_config_option",
        json!({"sessionId": sid, "configId": "model", "value": "mock-small"}),
    );
    assert_eq!(
        current(&set["result"]["configOptions"], "model"),
        "mock-small"
    );
    assert_eq!(set["result"]["configOptions"].as_array().unwrap().len(), 4);
    let set = w.call(
        "session/set_config_option",
        json!({"sessionId": sid, "configId": "fast", "type": "boolean", "value": true}),
    );
    assert_eq!(
        current(&set["result"]["configOptions"], "fast"),
        json!(true)
    );
    // The mode option and the ACP mode are one.
    let set = w.call(
        "session/set_config_option",
        json!({"sessionId": sid, "configId": "mode", "value": "acceptEdits"}),
    );
    assert!(set["result"].is_object(), "{set}");
    w.prompt(&sid, script("config\nmode"));
    assert_eq!(
        w.said(&sid),
        "config: mode=acceptEdits model=mock-small reasoning_effort=medium fast=true\
         mode: acceptEdits"
    );

    for bad in [
        json!({"sessionId": sid, "configId": "model", "value": "gpt-9"}),
        json!({"sessionId": sid, "configId": "nope", "value": "x"}),
        json!({"sessionId": sid, "configId": "fast", "value": "yes"}),
        json!({"sessionId": sid, "configId": "model", "type": "boolean", "value": true}),
    ] {
        let refused = w.call("session/set_config_option", bad.clone());
        assert_eq!(refused["error"]["code"], -32602, "{bad} → {refused}");
    }
    w.prompt(&sid, script("config"));
    assert_eq!(
        w.said(&sid),
        "config: mode=acceptEdits model=mock-small reasoning_effort=medium fast=true",
        "a refused change changes nothing"
    );
}

#[test]
fn the_agent_changes_an_option_itself_and_names_the_session() {
    let mut w = Wire::start(&[]);
    let (sid, _) = w.new_session();
    w.prompt(
        &sid,
        script("config-set model mock-fast\ntitle Fix the parser"),
    );
    let updates = w.updates("config_option_update");
    assert_eq!(updates.len(), 1, "{updates:?}");
    assert_eq!(current(&updates[0]["configOptions"], "model"), "mock-fast");
    let titles = w.updates("session_info_update");
    assert_eq!(titles.len(), 1);
    assert_eq!(titles[0]["title"], "Fix the parser");
}

#[test]
fn without_config_no_options_are_offered_and_setting_one_is_unknown() {
    let mut w = Wire::start(&[("AX_MOCK_NO_CONFIG", "1"), ("AX_MOCK_NO_IMAGE", "1")]);
    let init = w.seen.remove(0);
    let caps = &init["result"]["agentCapabilities"]["promptCapabilities"];
    assert_ne!(caps["image"], json!(true), "{init}");
    let (sid, opened) = w.new_session();
    assert!(opened.get("configOptions").is_none(), "{opened}");
    let refused = w.call(
        "session/set_config_option",
        json!({"sessionId": sid, "configId": "model", "value": "mock-small"}),
    );
    assert_eq!(refused["error"]["code"], -32601, "{refused}");
}

#[test]
fn prompt_blocks_are_reported_and_images_advertised() {
    let mut w = Wire::start(&[]);
    let init = w.seen.remove(0);
    let caps = &init["result"]["agentCapabilities"]["promptCapabilities"];
    assert_eq!(caps["image"], true, "{init}");
    assert_eq!(caps["embeddedContext"], true, "{init}");
    let (sid, _) = w.new_session();
    w.prompt(
        &sid,
        json!([
            {"type": "text", "text": "blocks"},
            {"type": "image", "mimeType": "image/png", "data": "iVBORw0KGgo="},
            {"type": "resource_link", "name": "a.txt", "uri": "file:///p/a.txt"},
            {"type": "resource", "resource": {"uri": "file:///p/b.txt", "text": "hello"}},
        ]),
    );
    assert_eq!(
        w.said(&sid),
        "blocks: image image/png 8; link a.txt file:///p/a.txt; resource file:///p/b.txt 5"
    );
    w.prompt(&sid, script("blocks"));
    assert_eq!(w.said(&sid), "blocks: none");
}

#[test]
fn with_queueing_a_prompt_during_a_turn_runs_after_it() {
    let mut w = Wire::start(&[("AX_MOCK_QUEUE", "1")]);
    let init = w.seen.remove(0);
    assert_eq!(
        init["result"]["agentCapabilities"]["_meta"]["claudeCode"]["promptQueueing"], true,
        "{init}"
    );
    let (sid, _) = w.new_session();
    let first = w.send(
        "session/prompt",
        json!({"sessionId": sid, "prompt": script("text one-\nsleep 300\ntext two-")}),
    );
    let second = w.send(
        "session/prompt",
        json!({"sessionId": sid, "prompt": script("text three")}),
    );
    let a = w.answer(first);
    let b = w.answer(second);
    assert_eq!(a["result"]["stopReason"], "end_turn");
    assert_eq!(b["result"]["stopReason"], "end_turn");
    assert_eq!(
        w.said(&sid),
        "one-two-three",
        "the second turn waited for the first"
    );

    // Without queueing the two turns overlap (what the backend must never do to such an agent).
    let mut w = Wire::start(&[]);
    let (sid, _) = w.new_session();
    let first = w.send(
        "session/prompt",
        json!({"sessionId": sid, "prompt": script("text one-\nsleep 300\ntext two-")}),
    );
    let second = w.send(
        "session/prompt",
        json!({"sessionId": sid, "prompt": script("text three")}),
    );
    w.answer(first);
    w.answer(second);
    assert_eq!(w.said(&sid), "one-threetwo-");
}

#[test]
fn commands_follow_session_new_and_change_and_a_slash_prompt_runs_one() {
    let mut w = Wire::start(&[]);
    let (sid, _) = w.new_session();
    let first = w.wait_for("the command list", |v| {
        v["params"]["update"]["sessionUpdate"] == "available_commands_update"
    });
    assert_eq!(first["params"]["sessionId"], json!(sid));
    let list = &first["params"]["update"]["availableCommands"];
    assert_eq!(list[0]["name"], "compact");
    assert!(list[0].get("input").is_none(), "{list}");
    assert_eq!(list[1]["name"], "review");
    assert_eq!(list[1]["input"]["hint"], "what to review");

    w.prompt(&sid, script("/review the parser"));
    assert_eq!(w.said(&sid), "command review: the parser");

    w.prompt(&sid, script("commands compact init"));
    let changed = w.updates("available_commands_update");
    assert_eq!(changed.len(), 1, "{changed:?}");
    let names: Vec<&str> = changed[0]["availableCommands"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["compact", "init"]);
}
