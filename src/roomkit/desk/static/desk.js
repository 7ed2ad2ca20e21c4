/*
 * The answer desk page: the signed-in person's open questions, answered in one click or a
 * short form, kept live over the desk's WebSocket, and a chat with the agent of one room.
 *
 * This module starts the page (signing in, or trading a sign-in link for a token) and keeps
 * it live: the desk's WebSocket, reconnected when it drops, and its frames handed to the
 * questions (questions.js) and the chat (chat.js). It also shows an administrator the policy
 * counts and offers notifications (notices.js, push.js). The session and the desk's API are
 * in session.js.
 *
 * Everything the model or the server wrote is put on the page as text (see dom.js): never
 * as markup, never as a link or a URL.
 */

import { addMessage, loadChat, sendChat } from './chat.js';
import { el, isObject, show, shownText, text } from './dom.js';
import { parseJson } from './exact.js';
import { notifyNew, offerPermission } from './notices.js';
import { offerPush, registerWorker } from './push.js';
import { applySnapshot, loadHistory, settle, update, upsert } from './questions.js';
import {
  $, ROOM_KEY, TOKEN_KEY, api, callApi, describe, isSignInLink, linkRequestOf, setLink,
  showLinkOutcome, showSignIn, state, takeFragment
} from './session.js';

// A desk restarting is back within a second or two, and an attempt on a closed port costs
// next to nothing: retries start quick and stay under 2 s.
var FIRST_RETRY_DELAY_MS = 250;
var MAX_RETRY_DELAY_MS = 1500;
var RETRY_JITTER_MS = 250;

// -- the live link --------------------------------------------------------------------------

function connect() {
  clearTimeout(state.retryTimer);
  if (!state.token) return;
  var url = new URL('api/ws', window.location.href);
  url.protocol = url.protocol === 'https:' ? 'wss:' : 'ws:';
  var socket = new WebSocket(url.href);
  state.socket = socket;
  setLink('connecting');
  socket.addEventListener('open', function () {
    // The token travels in the first frame, never in the URL: URLs are logged.
    socket.send(JSON.stringify({ type: 'auth', token: state.token }));
  });
  socket.addEventListener('message', function (event) {
    if (socket !== state.socket) return;
    if (pressed.size) held.push({ socket: socket, data: event.data });
    else onFrame(event.data);
  });
  socket.addEventListener('close', function () {
    if (socket !== state.socket) return;
    state.socket = null;
    setLink('off');
    // A refused token shows as a 401 here, which signs out; anything else reconnects.
    api('GET', 'api/me').then(function () {
      if (state.token) reconnectLater();
    });
  });
}

function reconnectLater() {
  var delay = Math.min(MAX_RETRY_DELAY_MS, FIRST_RETRY_DELAY_MS * Math.pow(2, state.retries));
  state.retries += 1;
  state.retryTimer = setTimeout(connect, delay + Math.floor(Math.random() * RETRY_JITTER_MS));
}

// While a pointer is down on the page (a press not yet released), what the desk sends waits:
// a card arriving, drawn again or leaving (or the page scrolling to a new one) would move the
// buttons under the press, and the release would land beside the button pressed or on
// another card's. It is applied once every pointer is up, after the click the release makes.
var pressed = new Set();
var held = [];

function press(event) {
  pressed.add(event.pointerId);
}

function release(event) {
  if (event.type === 'blur') pressed.clear();
  else pressed.delete(event.pointerId);
  setTimeout(applyHeld, 0);
}

function applyHeld() {
  if (pressed.size) return;
  var frames = held;
  held = [];
  frames.forEach(function (frame) {
    if (frame.socket === state.socket) onFrame(frame.data);
  });
}

function onFrame(data) {
  var frame;
  try {
    frame = parseJson(data);
  } catch (err) {
    return;
  }
  if (!isObject(frame)) return;
  if (frame.type === 'snapshot') {
    state.retries = 0;
    setLink('live');
    applySnapshot(Array.isArray(frame.requests) ? frame.requests : []);
    state.snapshots += 1;
    // After a reconnect, messages sent while the link was down come back with the history.
    if (state.snapshots > 1) loadChat();
  } else if (frame.type === 'question_pending') {
    if (upsert(frame.request)) notifyNew(frame.request, state.me);
  } else if (frame.type === 'question_updated') {
    update(frame.request);
  } else if (frame.type === 'question_settled') {
    settle(frame.request);
  } else if (frame.type === 'room_message') {
    if (frame.room_id === state.room) addMessage(frame.message);
  }
}

// -- the administrator's counts, this device's notifications --------------------------------

// An administrator sees how often each policy decided each tool's calls (read-only).
function loadPolicyCounts() {
  if (!state.me || !state.me.admin) return;
  api('GET', 'api/policy/counts').then(function (result) {
    if (result.status !== 200 || !Array.isArray(result.data) || !result.data.length) return;
    var rows = $('policy-counts-rows');
    result.data.forEach(function (row) {
      if (!isObject(row)) return;
      var cells = [row.policy, row.tool, row.decision, row.enforced ? 'enforced' : 'shadow', row.calls];
      rows.appendChild(el('tr', {}, cells.map(function (cell) { return el('td', { text: text(cell) }); })));
    });
    show($('policy-counts'), true);
  });
}

// Why this device's push subscription was not made or not kept (null: it is being made
// again, or was kept).
function pushRefused(reason) {
  var error = $('push-error');
  error.textContent = reason
    ? shownText('Notifications to this device could not be turned on: ' + reason)
    : '';
  show(error, Boolean(reason));
}

// -- start ----------------------------------------------------------------------------------

function signIn(event) {
  event.preventDefault();
  var token = $('signin-token').value.trim();
  if (!token) return;
  sessionStorage.setItem(TOKEN_KEY, token);
  $('signin-token').value = '';
  start();
}

function tradeSignInLink(link) {
  sessionStorage.removeItem(TOKEN_KEY);
  state.token = null;
  callApi('POST', 'api/sign-in', link).then(function (result) {
    var data = result.data;
    if (result.status === 200 && isObject(data) && typeof data.token === 'string') {
      sessionStorage.setItem(TOKEN_KEY, data.token);
      start();
    } else {
      showSignIn(describe(result));
    }
  });
}

function start() {
  state.token = sessionStorage.getItem(TOKEN_KEY);
  state.room = sessionStorage.getItem(ROOM_KEY);
  state.linkRequest = state.token ? linkRequestOf(state.token) : null;
  show($('link-outcome'), false);
  if (!state.token) {
    showSignIn('');
    return;
  }
  if (isSignInLink(state.token)) {
    tradeSignInLink(state.token);
    return;
  }
  api('GET', 'api/me').then(function (result) {
    if (result.status !== 200 || !isObject(result.data)) {
      if (result.status !== 401) showSignIn(describe(result));
      return;
    }
    state.me = result.data;
    $('who').textContent = 'Signed in as ' + text(state.me.actor_id) + (state.me.admin ? ' (admin)' : '');
    show($('signin'), false);
    show($('desk'), true);
    connect();
    loadChat();
    loadHistory();
    loadPolicyCounts();
    if (state.linkRequest) showLinkOutcome();
    else offerPush($('push-me'), api, pushRefused);
  });
}

document.addEventListener('DOMContentLoaded', function () {
  takeFragment();
  $('signin-form').addEventListener('submit', signIn);
  $('chat-form').addEventListener('submit', sendChat);
  document.addEventListener('pointerdown', press, true);
  document.addEventListener('pointerup', release, true);
  document.addEventListener('pointercancel', release, true);
  window.addEventListener('blur', release);
  offerPermission($('notify-me'));
  registerWorker();
  // A fresh link pasted into this tab: start over with its token (and room).
  window.addEventListener('hashchange', function () {
    if (!window.location.hash) return;
    takeFragment();
    window.location.reload();
  });
  start();
});
