"""The page's policy in a real browser: its own WebSocket connects, one to another host does not."""

from __future__ import annotations

from desk_page import OpenPage, wait_live
from desk_server import DeskServer

ATTEMPT = """(url) => new Promise((resolve) => {
  let violated = null;
  document.addEventListener('securitypolicyviolation', (event) => {
    violated = event.effectiveDirective;
    resolve(violated);
  });
  let socket;
  try {
    socket = new WebSocket(url);
  } catch (error) {
    resolve(violated || 'threw ' + error.name);
    return;
  }
  socket.onopen = () => resolve('opened');
  socket.onclose = () => resolve(violated || 'closed by the server');
})"""


def test_the_page_may_open_its_own_socket_and_no_other(
    desk: DeskServer, room: str, open_page: OpenPage
) -> None:
    opened = open_page(desk.link(room))
    page = opened.page
    wait_live(page)  # the page's own WebSocket, ws: on its own host and port, is connected
    elsewhere = desk.url.replace("http://127.0.0.1", "ws://localhost") + "/api/ws"
    assert page.evaluate(ATTEMPT, elsewhere) == "connect-src"
    assert page.evaluate(ATTEMPT, desk.url.replace("http:", "ws:") + "/api/ws") == "opened"
