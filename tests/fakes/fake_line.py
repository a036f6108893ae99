"""A fake of the LINE Messaging API that records what it is sent.

A real HTTP server (Starlette on uvicorn in a background thread, like tests/fakes/fake_llm.py), so the
code under test talks to it through the official SDK's own HTTP client. It answers the three endpoints
the bot uses and checks what LINE checks: the bearer token, 1 to 5 messages, at most 5,000 characters
(UTF-16 units) per text message.

    with FakeLine(access_token="tok") as line:
        ...                                   # CAREERWISE_LINE_API_BASE_URL=line.base_url
        line.expire_reply_tokens = True       # every reply gets 400 "Invalid reply token"
        line.wait_for(lambda: line.replies, timeout=10)
        line.replies[0].json["messages"][0]["text"]
"""

from __future__ import annotations

import asyncio
import itertools
import socket
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

REPLY = "/v2/bot/message/reply"
PUSH = "/v2/bot/message/push"
LOADING = "/v2/bot/chat/loading/start"
_ids = itertools.count(1)


@dataclass(frozen=True)
class RecordedCall:
    path: str
    headers: dict[str, str]
    json: dict[str, Any]
    status: int
    at: float

    @property
    def texts(self) -> list[str]:
        return [m.get("text", "") for m in self.json.get("messages", [])]


def _utf16(s: str) -> int:
    return len(s.encode("utf-16-le")) // 2


class FakeLine:
    def __init__(self, *, access_token: str = "test-access-token") -> None:
        self.access_token = access_token
        self.expire_reply_tokens = False  # True: every reply token is "expired" (400)
        self.fail_pushes = 0  # the next N pushes get a 500
        self.reply_delay = 0.0
        self._lock = threading.Lock()
        self._calls: list[RecordedCall] = []
        self._retry_keys: set[str] = set()
        self._used_tokens: set[str] = set()
        self.port = 0
        self._server: uvicorn.Server | None = None
        self._thread: threading.Thread | None = None
        self.app = Starlette(
            routes=[
                Route(REPLY, self._reply, methods=["POST"]),
                Route(PUSH, self._push, methods=["POST"]),
                Route(LOADING, self._loading, methods=["POST"]),
            ]
        )

    # ---- what was sent

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def calls(self) -> list[RecordedCall]:
        with self._lock:
            return list(self._calls)

    def _ok(self, path: str) -> list[RecordedCall]:
        return [c for c in self.calls if c.path == path and c.status < 300]

    @property
    def replies(self) -> list[RecordedCall]:
        """Replies LINE accepted."""
        return self._ok(REPLY)

    @property
    def pushes(self) -> list[RecordedCall]:
        """Pushes LINE accepted (a retried push whose retry key was accepted before is not counted)."""
        return self._ok(PUSH)

    @property
    def loadings(self) -> list[RecordedCall]:
        return self._ok(LOADING)

    @property
    def delivered(self) -> list[RecordedCall]:
        """Accepted replies and pushes, in the order they arrived."""
        return [c for c in self.calls if c.path in (REPLY, PUSH) and c.status < 300]

    def reset(self) -> None:
        with self._lock:
            self._calls.clear()
            self._retry_keys.clear()
            self._used_tokens.clear()
        self.expire_reply_tokens = False
        self.fail_pushes = 0
        self.reply_delay = 0.0

    def wait_for(self, condition: Callable[[], object], timeout: float = 20.0) -> None:
        deadline = time.monotonic() + timeout
        while not condition():
            if time.monotonic() > deadline:
                raise AssertionError(f"fake LINE: condition not met in {timeout} s; calls: {self.calls}")
            time.sleep(0.02)

    # ---- endpoints

    async def _read(self, request: Request) -> tuple[dict[str, Any] | None, JSONResponse | None]:
        if request.headers.get("authorization") != f"Bearer {self.access_token}":
            return None, JSONResponse({"message": "Authentication failed"}, status_code=401)
        try:
            body = await request.json()
        except ValueError:
            return None, JSONResponse({"message": "The request body has 1 error(s)"}, status_code=400)
        return body, None

    def _record(self, request: Request, body: dict[str, Any], status: int) -> None:
        with self._lock:
            self._calls.append(
                RecordedCall(
                    path=request.url.path,
                    headers={k.lower(): v for k, v in request.headers.items()},
                    json=body,
                    status=status,
                    at=time.monotonic(),
                )
            )

    @staticmethod
    def _check_messages(body: dict[str, Any]) -> str | None:
        messages = body.get("messages")
        if not isinstance(messages, list) or not 1 <= len(messages) <= 5:
            return "Size must be between 1 and 5"
        for m in messages:
            if m.get("type") != "text" or not isinstance(m.get("text"), str) or not m["text"]:
                return "May not be empty"
            if _utf16(m["text"]) > 5000:
                return "Length must be between 0 and 5000"
        return None

    @staticmethod
    def _sent(body: dict[str, Any]) -> dict[str, Any]:
        return {"sentMessages": [{"id": str(next(_ids)), "quoteToken": "q"} for _ in body["messages"]]}

    async def _reply(self, request: Request) -> JSONResponse:
        body, error = await self._read(request)
        if error is not None or body is None:
            return error or JSONResponse({}, status_code=400)
        if self.reply_delay:
            await asyncio.sleep(self.reply_delay)
        problem = self._check_messages(body)
        token = body.get("replyToken")
        with self._lock:
            expired = self.expire_reply_tokens or token in self._used_tokens
            if not expired and problem is None:
                self._used_tokens.add(str(token))
        if problem is not None:
            self._record(request, body, 400)
            return JSONResponse({"message": "The request body has 1 error(s)", "details": [problem]}, 400)
        if expired or not token:
            self._record(request, body, 400)
            return JSONResponse({"message": "Invalid reply token"}, status_code=400)
        self._record(request, body, 200)
        return JSONResponse(self._sent(body))

    async def _push(self, request: Request) -> JSONResponse:
        body, error = await self._read(request)
        if error is not None or body is None:
            return error or JSONResponse({}, status_code=400)
        problem = self._check_messages(body)
        if problem is not None or not body.get("to"):
            self._record(request, body, 400)
            return JSONResponse({"message": "The request body has 1 error(s)", "details": [problem]}, 400)
        key = request.headers.get("x-line-retry-key")
        with self._lock:
            failing = self.fail_pushes > 0
            if failing:
                self.fail_pushes -= 1
            duplicate = not failing and key is not None and key in self._retry_keys
            if not failing and key is not None:
                self._retry_keys.add(key)
        if failing:
            self._record(request, body, 500)
            return JSONResponse({"message": "Internal server error"}, status_code=500)
        if duplicate:
            self._record(request, body, 409)
            return JSONResponse({"message": "The retry key is already accepted"}, status_code=409)
        self._record(request, body, 200)
        return JSONResponse(self._sent(body))

    async def _loading(self, request: Request) -> JSONResponse:
        body, error = await self._read(request)
        if error is not None or body is None:
            return error or JSONResponse({}, status_code=400)
        seconds = body.get("loadingSeconds", 20)
        if not body.get("chatId") or not isinstance(seconds, int) or not 5 <= seconds <= 60 or seconds % 5:
            self._record(request, body, 400)
            return JSONResponse({"message": "The request body has 1 error(s)"}, status_code=400)
        self._record(request, body, 202)
        return JSONResponse({}, status_code=202)

    # ---- lifecycle

    def start(self) -> FakeLine:
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(("127.0.0.1", 0))
        sock.listen(128)
        self.port = sock.getsockname()[1]
        config = uvicorn.Config(self.app, lifespan="off", http="h11", log_config=None, log_level=None)
        server = uvicorn.Server(config)
        self._server = server

        def run() -> None:
            try:
                asyncio.run(server.serve(sockets=[sock]))
            finally:
                sock.close()

        self._thread = threading.Thread(target=run, name=f"FakeLine:{self.port}", daemon=True)
        self._thread.start()
        deadline = time.monotonic() + 10
        while not server.started:
            if not self._thread.is_alive() or time.monotonic() > deadline:
                raise RuntimeError("fake LINE server did not start")
            time.sleep(0.005)
        return self

    def stop(self) -> None:
        if self._server is None or self._thread is None:
            return
        self._server.should_exit = True
        self._thread.join(timeout=5)
        self._server = self._thread = None

    def __enter__(self) -> FakeLine:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.stop()
