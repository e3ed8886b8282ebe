"""examples/frameworks/: each framework's example in its own process, offline (its scripted model), against
the example servers: it calls a tool through jit and exits 0; when no call can succeed it says why and exits 1."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
from conftest import REPO, write_example_config

pytestmark = [pytest.mark.frameworks, pytest.mark.slow]  # the example in its own process, with the servers

EXAMPLES = REPO / "examples" / "frameworks"


def run(example: str, config, cwd) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k not in ("ANTHROPIC_API_KEY", "OPENAI_API_KEY")}
    env |= {"HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}
    return subprocess.run([sys.executable, str(EXAMPLES / f"{example}.py"), "--config", str(config), "--offline"],
                          capture_output=True, text=True, env=env, cwd=cwd, timeout=300)


@pytest.mark.parametrize("example", ["pydantic_ai_agent", "openai_agents_agent", "langgraph_agent", "adk_agent"])
def test_a_framework_example_runs_offline_and_its_call_reaches_the_server(tmp_path, example):
    done = run(example, write_example_config(tmp_path), tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "call: workspace__search_text -> workspace/search_text" in done.stdout and ": ok" in done.stdout
    assert "src/app.py" in done.stdout.split("Found it:", 1)[1]  # the server's answer reached the model


def test_a_framework_example_whose_calls_all_fail_exits_1_and_says_why(tmp_path):
    path = write_example_config(tmp_path)
    body = json.loads(path.read_text())
    body["servers"]["workspace"]["args"][0] = str(tmp_path / "no-such-server.py")  # the workspace never starts
    path.write_text(json.dumps(body))
    failed = run("pydantic_ai_agent", path, tmp_path)
    assert failed.returncode == 1, failed.stdout + failed.stderr
    assert "the example failed, no tool call succeeded" in failed.stderr
    assert "workspace__search_text failed" in failed.stderr or "no tool was called" in failed.stderr
