"""How each real ACP adapter runs offline against the fake model server (docs/agents.md §10).

`setup(name, cache, fake_url, home)` returns `(command, args, env)` for the agent `name` with
everything it needs written under `home` (a private HOME: settings, CODEX_HOME). Each agent
reaches only `fake_url`.
"""

import json
import os

AGENTS = ("claude", "codex", "gemini")
# The pinned adapters (scripts/real-agents.sh installs exactly these).
PINS = {
    "claude": "@zed-industries/claude-agent-acp@0.23.1",
    "codex": "@zed-industries/codex-acp@0.16.0",
    "gemini": "@google/gemini-cli@0.61.0",
}


def setup(name, cache, fake_url, home):
    """(command, args, env) of agent `name` installed under `cache` (an npm prefix)."""
    bin_dir = os.path.join(cache, "node_modules", ".bin")
    os.makedirs(home, exist_ok=True)
    env = {"HOME": home, "NO_UPDATE_NOTIFIER": "1", "DO_NOT_TRACK": "1"}
    if name == "claude":
        env.update({
            "ANTHROPIC_BASE_URL": fake_url,
            "ANTHROPIC_API_KEY": "sk-ant-conformance-fake",
            "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
            "DISABLE_AUTOUPDATER": "1",
            "CLAUDE_CONFIG_DIR": os.path.join(home, ".claude"),
        })
        return os.path.join(bin_dir, "claude-agent-acp"), [], env
    if name == "codex":
        codex_home = os.path.join(home, ".codex")
        os.makedirs(codex_home, exist_ok=True)
        with open(os.path.join(codex_home, "config.toml"), "w") as f:
            f.write(
                'model = "gpt-5.3-codex"\n'
                'model_provider = "fake"\n'
                'model_reasoning_summary = "auto"\n'
                "[model_providers.fake]\n"
                'name = "fake"\n'
                f'base_url = "{fake_url}/v1"\n'
                'wire_api = "responses"\n'
                'env_key = "FAKE_MODEL_KEY"\n'
                "request_max_retries = 0\n"
                "stream_max_retries = 0\n"
                "[features]\nuse_legacy_landlock = true\n"
                "[analytics]\nenabled = false\n"
                "[otel]\nexporter = \"none\"\n"
            )
        env.update({"CODEX_HOME": codex_home, "FAKE_MODEL_KEY": "fake-key"})
        return os.path.join(bin_dir, "codex-acp"), [], env
    if name == "gemini":
        gemini_dir = os.path.join(home, ".gemini")
        os.makedirs(gemini_dir, exist_ok=True)
        with open(os.path.join(gemini_dir, "settings.json"), "w") as f:
            json.dump({
                # An untrusted folder makes Gemini fail every "allow always" answer ("Cannot
                # enable privileged approval modes in an untrusted folder").
                "security": {"auth": {"selectedType": "gemini-api-key"}, "folderTrust": {"enabled": False}},
                "telemetry": {"enabled": False},
                "privacy": {"usageStatisticsEnabled": False},
                "general": {"disableAutoUpdate": True, "disableUpdateNag": True},
                "model": {"name": "gemini-2.5-pro"},
            }, f)
        env.update({
            "GOOGLE_GEMINI_BASE_URL": fake_url,
            "GEMINI_API_KEY": "fake-gemini-key",
            "GEMINI_CLI_NO_RELAUNCH": "true",
        })
        return os.path.join(bin_dir, "gemini"), ["--acp"], env
    raise ValueError(f"unknown agent {name}")
