"""Helpers for the chat page's browser tests: open the page, ask, watch what the browser does."""

from __future__ import annotations

from dataclasses import dataclass, field
from urllib.parse import urlsplit

from playwright.sync_api import Dialog, Page, Request, Route

LAST_ANSWER = ".msg.assistant >> nth=-1"


def open_chat(page: Page, url: str) -> None:
    page.goto(url)
    page.wait_for_selector("body[data-ready=true]")


def ask(page: Page, message: str) -> None:
    page.fill("#message", message)
    page.press("#message", "Enter")


def wait_finished(page: Page, count: int) -> None:
    """Until ``count`` answers carry their stored message id (the swap to server HTML is done)."""
    page.wait_for_function(
        "n => document.querySelectorAll('.msg.assistant[data-message-id]').length >= n", arg=count
    )
    page.wait_for_selector("#send:not([hidden])")


@dataclass
class Watch:
    """Every request the page makes and every JavaScript dialog it opens. Requests to another origin
    are recorded and aborted (there is no other host on this machine to answer them anyway)."""

    origin: str
    requests: list[str] = field(default_factory=list)
    dialogs: list[str] = field(default_factory=list)
    # foreign requests that got as far as the network layer (a CSP-blocked one is reported as a request
    # by the browser but never gets here) and the failures the browser reported
    sent_foreign: list[str] = field(default_factory=list)
    failures: dict[str, str] = field(default_factory=dict)

    @property
    def foreign(self) -> list[str]:
        return [u for u in self.requests if not same_origin(u, self.origin)]

    def attach(self, page: Page) -> Watch:
        page.on("request", self._request)
        page.on("dialog", self._dialog)
        page.on("requestfailed", self._failed)
        page.route("**/*", self._route)
        return self

    def _request(self, request: Request) -> None:
        self.requests.append(request.url)

    def _failed(self, request: Request) -> None:
        self.failures[request.url] = request.failure or ""

    def _dialog(self, dialog: Dialog) -> None:
        self.dialogs.append(f"{dialog.type}: {dialog.message}")
        dialog.dismiss()

    def _route(self, route: Route) -> None:
        if same_origin(route.request.url, self.origin):
            route.continue_()
        else:
            self.sent_foreign.append(route.request.url)
            route.abort()


def same_origin(url: str, origin: str) -> bool:
    a, b = urlsplit(url), urlsplit(origin)
    return (a.scheme, a.netloc) == (b.scheme, b.netloc)
