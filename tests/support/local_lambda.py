"""A local stand-in for Lambda's Invoke API on 127.0.0.1: real botocore clients call it over
HTTP, and it runs the named handler in this process (moto would need Docker to run a
function). Synchronous invocations only, which is all the broker's clients make."""

from __future__ import annotations

import json
import threading
import traceback
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

Handler = Callable[[Any, Any], Any]


@contextmanager
def local_lambda(functions: Mapping[str, Handler]) -> Iterator[str]:
    """Serve ``functions`` (name -> handler) until the block ends; yields the endpoint.
    Unknown names get Lambda's ResourceNotFoundException; a handler that raises gives
    Lambda's ``X-Amz-Function-Error: Unhandled`` answer."""

    class Invoke(BaseHTTPRequestHandler):
        def do_POST(self) -> None:  # noqa: N802 (the http.server API)
            parts = self.path.split("?")[0].strip("/").split("/")
            body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
            # /2015-03-31/functions/{name}/invocations
            name = parts[2] if len(parts) == 4 and parts[1] == "functions" else ""
            if name not in functions:
                self._send(
                    404,
                    {"Type": "User", "message": f"Function not found: {name}"},
                    {"x-amzn-ErrorType": "ResourceNotFoundException"},
                )
                return
            try:
                answer = functions[name](json.loads(body or b"{}"), None)
                self._send(200, answer, {"X-Amz-Executed-Version": "$LATEST"})
            except Exception as exc:
                self._send(
                    200,
                    {
                        "errorMessage": str(exc),
                        "errorType": type(exc).__name__,
                        "stackTrace": traceback.format_exception(exc)[-3:],
                    },
                    {"X-Amz-Function-Error": "Unhandled"},
                )

        def _send(self, status: int, payload: Any, headers: dict[str, str]) -> None:
            data = json.dumps(payload).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            for key, value in headers.items():
                self.send_header(key, value)
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Invoke)
    # shutdown() waits for the loop's next poll: 0.05 s, not the default 0.5 s
    thread = threading.Thread(target=server.serve_forever, args=(0.05,), daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()
        thread.join()
