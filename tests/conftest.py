"""Shared fixtures: CDK scopes, the example app synthesized by the real CDK CLI, a local
moto server (127.0.0.1, free port, stopped afterwards), and a stand-in for CloudFormation's
pre-signed response URL."""

from __future__ import annotations

import os

os.environ.setdefault("JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION", "20")
os.environ.setdefault("JSII_SILENCE_WARNING_DEPRECATED_NODE_VERSION", "1")
os.environ.setdefault("CDK_DISABLE_CLI_TELEMETRY", "true")

import json
import socket
import subprocess
import sys
import threading
import time
import urllib.request
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, HTTPServer
from pathlib import Path
from typing import Any

import aws_cdk as cdk
import boto3
import pytest

REPO = Path(__file__).resolve().parents[1]
CDK_CLI = REPO / "node_modules" / ".bin" / "cdk"
ACCOUNT, REGION = "123456789012", "us-east-1"


@pytest.fixture
def stack() -> cdk.Stack:
    return cdk.Stack(cdk.App(), "Test")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def run_cdk(*args: str, cwd: Path = REPO, env: dict[str, str] | None = None,
            timeout: int = 600) -> subprocess.CompletedProcess[str]:
    """The pinned CDK CLI from node_modules, failing the test with its output on error."""
    assert CDK_CLI.exists(), "the pinned CDK CLI is missing: run `make install`"
    result = subprocess.run(
        [str(CDK_CLI), *args], cwd=cwd, env={**os.environ, **(env or {})},
        capture_output=True, text=True, timeout=timeout,
    )
    if result.returncode != 0:
        pytest.fail(f"cdk {' '.join(args)} exited {result.returncode}:\n"
                    f"{result.stdout[-4000:]}\n{result.stderr[-4000:]}")
    return result


@pytest.fixture(scope="session")
def cli_assembly(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The example app (cdk.json) synthesized by the pinned CDK CLI under the nag packs."""
    outdir = tmp_path_factory.mktemp("cdk") / "cdk.out"
    env = {"PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"}
    run_cdk("synth", "--quiet", "--output", str(outdir), env=env)
    return outdir


@pytest.fixture(scope="session")
def moto_endpoint() -> Iterator[str]:
    """A moto server subprocess on 127.0.0.1; the endpoint uses localhost (S3 path style)."""
    port = free_port()
    server_bin = Path(sys.executable).parent / "moto_server"
    proc = subprocess.Popen(
        [str(server_bin), "-H", "127.0.0.1", "-p", str(port)],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )
    endpoint = f"http://localhost:{port}"
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                urllib.request.urlopen(f"http://127.0.0.1:{port}/moto-api/", timeout=1)
                break
            except OSError:
                if proc.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError("moto server did not start") from None
                time.sleep(0.2)
        yield endpoint
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()


@pytest.fixture(scope="session")
def aws_env(moto_endpoint: str) -> dict[str, str]:
    return {
        "AWS_ENDPOINT_URL": moto_endpoint,
        "CDK_S3_FORCE_PATH_STYLE": "true",
        "AWS_ACCESS_KEY_ID": "test",
        "AWS_SECRET_ACCESS_KEY": "test",
        "AWS_DEFAULT_REGION": REGION,
        "AWS_REGION": REGION,
    }


@pytest.fixture
def aws_client(aws_env: dict[str, str]) -> Any:
    def make(service: str) -> Any:
        return boto3.client(
            service,
            endpoint_url=aws_env["AWS_ENDPOINT_URL"],
            region_name=REGION,
            aws_access_key_id="test",
            aws_secret_access_key="test",
        )

    return make


class ResponseCatcher:
    """An HTTP server on 127.0.0.1 that records the PUTs CloudFormation would receive."""

    def __init__(self) -> None:
        bodies: list[dict[str, Any]] = []
        self.bodies = bodies

        class Handler(BaseHTTPRequestHandler):
            def do_PUT(self) -> None:  # noqa: N802 (http.server's name)
                length = int(self.headers["Content-Length"])
                bodies.append(json.loads(self.rfile.read(length)))
                self.send_response(200)
                self.end_headers()

            def log_message(self, *args: Any) -> None:
                pass

        self.server = HTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/response"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def response_catcher() -> Iterator[ResponseCatcher]:
    catcher = ResponseCatcher()
    yield catcher
    catcher.close()


def cfn_event(request_type: str, response_url: str, properties: dict[str, Any]) -> dict[str, Any]:
    return {
        "RequestType": request_type,
        "ResponseURL": response_url,
        "StackId": f"arn:aws:cloudformation:{REGION}:{ACCOUNT}:stack/Test/1",
        "RequestId": "req-1",
        "LogicalResourceId": "Settle",
        "ResourceType": "Custom::CapacitySettle",
        "ResourceProperties": {"ServiceToken": "arn", **properties},
    }

