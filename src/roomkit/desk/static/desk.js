/*
 * The answer desk page: the signed-in person's open questions, answered in one click or a
 * short form, kept live over the desk's WebSocket, and a chat with the agent of one room.
 *
 * Everything the model or the server wrote is put on the page as text (see dom.js): never
 * as markup, never as a link or a URL.
 */

import { approvalOutcome } from './approval.js';
import { busy, fail, renderCard, summary } from './cards.js';
import { el, isObject, show, shownText, text, when } from './dom.js';
import { parseJson, stringify } from './exact.js';
import { forget, notifyNew, offerPermission } from './notices.js';
import { offerPush, registerWorker } from './push.js';

var TOKEN_KEY = 'roomkit.desk.token';
var ROOM_KEY = 'roomkit.desk.room';
var SETTLED_KEPT = 20;
var ANSWER_SHOWN = 200;
// A desk restarting is back within a second or two, and an attempt on a closed port costs
// next to nothing: retries start quick and stay under 2 s.
var FIRST_RETRY_DELAY_MS = 250;
var MAX_RETRY_DELAY_MS = 1500;
var RETRY_JITTER_MS = 250;
// A question that arrives this soon after a chat message is one the chat led to.
var CHAT_LEADS_MS = 30000;

var state = {
  token: null,
  me: null,
  room: null,
  linkRequest: null,
  linkSent: false,  // this page sent the answer link's answer: no later read relabels it
  cards: new Map(),
  messageIds: new Set(),
  socket: null,
  retries: 0,
  retryTimer: null,
  snapshots: 0,
  chatOpen: false,
  chattedAt: 0  // when the person last sent a chat message (Date.now())
};

function $(id) {
  return document.getElementById(id);
}

// -- the token: from the URL fragment to sessionStorage -------------------------------------

function takeFragment() {
  var hash = window.location.hash;
  if (!hash || hash.length < 2) return;
  var params = new URLSearchParams(hash.slice(1));
  var token = params.get('token');
  var room = params.get('room');
  if (token) sessionStorage.setItem(TOKEN_KEY, token);
  if (room) sessionStorage.setItem(ROOM_KEY, room);
  if (token || room) {
    // The fragment never reaches the server; taking it out of the address bar keeps the
    // token out of the history, bookmarks and screenshots as well.
    history.replaceState(null, '', window.location.pathname + window.location.search);
  }
}

function signOut(message) {
  sessionStorage.removeItem(TOKEN_KEY);
  state.token = null;
  state.me = null;
  var socket = state.socket;
  state.socket = null;
  if (socket) socket.close(1000);
  clearTimeout(state.retryTimer);
  showSignIn(message);
}

function showSignIn(message) {
  show($('desk'), false);
  show($('signin'), true);
  $('who').textContent = 'Not signed in';
  setLink('off');
  var error = $('signin-error');
  error.textContent = shownText(message || '');
  show(error, Boolean(message));
}

// -- HTTP -----------------------------------------------------------------------------------

function describe(result) {
  var detail = result.data && result.data.detail;
  // The desk's example of a body that fits is for programs, not for the person.
  if (typeof detail === 'string' && detail) return detail.split('; for example:')[0];
  if (Array.isArray(detail) && detail.length) {
    return detail.map(function (item) {
      return isObject(item) && item.msg ? text(item.msg) : text(item);
    }).join('; ');
  }
  if (result.status === 0) return 'The desk cannot be reached.';
  return 'The desk answered with HTTP ' + result.status + '.';
}

// One call of the desk's API with `token`: its status, JSON body (null when it has none)
// and headers; status 0 when the desk cannot be reached.
function callApi(method, path, token, body) {
  var headers = { Authorization: 'Bearer ' + token, Accept: 'application/json' };
  var init = { method: method, headers: headers, cache: 'no-store', credentials: 'omit' };
  if (body !== undefined) {
    headers['Content-Type'] = 'application/json';
    init.body = stringify(body);
  }
  // Read with parseJson: an integer past 2^53 in the arguments keeps every digit.
  return fetch(path, init).then(function (response) {
    return response.text().then(parseJson).catch(function () {
      return null;
    }).then(function (data) {
      return { status: response.status, data: data, headers: response.headers };
    });
  }, function () {
    return { status: 0, data: null, headers: null };
  });
}

function api(method, path, body) {
  return callApi(method, path, state.token, body).then(function (result) {
    if (result.status === 401 && state.token && state.linkRequest) {
      // An answer link is spent once it answers: what it answered is the news, not a refusal.
      showLinkOutcome();
    } else if (result.status === 401 && state.token) {
      signOut('The desk refused your token: open a fresh link.');
    }
    return result;
  });
}

// -- the live link --------------------------------------------------------------------------

function setLink(status) {
  var badge = $('link-state');
  badge.setAttribute('data-state', status);
  badge.textContent = { live: 'live', connecting: 'connecting…', off: 'offline' }[status];
}

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

// -- questions ------------------------------------------------------------------------------

function applySnapshot(requests) {
  var open = new Set();
  requests.forEach(function (view) {
    if (isObject(view) && typeof view.id === 'string') open.add(view.id);
  });
  Array.from(state.cards.keys()).forEach(function (id) {
    if (!open.has(id)) learnOutcome(id);
  });
  // The first snapshot is what the person opened the page to see; a later one (after a
  // reconnect) may bring questions that arrived while the link was down.
  var reconnected = state.snapshots > 0;
  requests.forEach(function (view) {
    if (upsert(view) && reconnected) notifyNew(view, state.me);
  });
}

function learnOutcome(id) {
  // It settled while the link was down: say how, when the desk still knows.
  api('GET', 'api/requests/' + encodeURIComponent(id)).then(function (result) {
    if (result.status === 200 && isObject(result.data) && result.data.status !== 'pending') {
      settle(result.data);
    } else if (result.status === 404) {
      removeCard(id, { tool_name: '', status: 'gone' });
    }
  });
}

// Puts the open question `view` on the page; true when it was not there before.
function upsert(view) {
  if (!isObject(view) || typeof view.id !== 'string') return false;
  if (view.status && view.status !== 'pending') {
    settle(view);
    return false;
  }
  // A repeated hint keeps the card as it is, and whatever the person has typed into it.
  if (state.cards.has(view.id)) return false;
  var card = renderCard(view, send, { me: state.me, history: requestHistory, link: Boolean(state.linkRequest) });
  state.cards.set(view.id, { view: view, card: card });
  $('question-list').appendChild(card);
  countQuestions();
  // A question the chat just led to is brought into sight (on a phone it lands above the chat).
  if (document.activeElement === $('chat-input') || Date.now() - state.chattedAt < CHAT_LEADS_MS) {
    card.scrollIntoView({ block: 'nearest' });
  }
  return true;
}

// Draws the open question `view` again where its card stands: a quorum approval after a
// vote (its progress, and after an edit its arguments).
function update(view) {
  if (!isObject(view) || typeof view.id !== 'string') return;
  var entry = state.cards.get(view.id);
  if (!entry || (view.status && view.status !== 'pending')) {
    upsert(view);
    return;
  }
  // The card already shows this view: drawing it again would close what the person opened.
  if (stringify(entry.view) === stringify(view)) return;
  var card = renderCard(view, send, { me: state.me, history: requestHistory, link: Boolean(state.linkRequest) });
  entry.card.replaceWith(card);
  state.cards.set(view.id, { view: view, card: card });
}

function requestHistory(id) {
  return api('GET', 'api/requests/' + encodeURIComponent(id) + '/history').then(function (result) {
    return result.status === 200 && isObject(result.data) && Array.isArray(result.data.entries)
      ? result.data.entries
      : null;
  });
}

function settle(view) {
  if (!isObject(view) || typeof view.id !== 'string') return;
  var entry = state.cards.get(view.id);
  if (!entry) return;
  removeCard(view.id, view);
}

function removeCard(id, view) {
  var entry = state.cards.get(id);
  if (!entry) return;
  state.cards.delete(id);
  entry.card.remove();
  forget(id);
  countQuestions();
  addSettled(entry.view, view);
}

function countQuestions() {
  var count = state.cards.size;
  $('question-count').textContent = String(count);
  show($('no-questions'), count === 0);
  document.title = count ? '(' + count + ') Answer desk' : 'Answer desk';
}

function byWhom(actor) {
  if (!actor) return 'someone';
  return state.me && actor === state.me.actor_id ? 'you' : actor;
}

function parsed(result) {
  if (typeof result !== 'string') return undefined;
  try {
    return parseJson(result);
  } catch (err) {
    return undefined;
  }
}

function listed(value) {
  return Array.isArray(value) ? value.map(text).join(', ') : text(value);
}

// What was answered, as one line: the text, the options picked, or each question's answer.
function answerText(kind, result) {
  var value = parsed(result);
  if (kind === 'questions' && isObject(value) && Array.isArray(value.answers)) {
    return value.answers.filter(isObject).map(function (item) {
      return text(item.question) + ' → ' + listed(item.answer);
    }).join('; ');
  }
  if (kind === 'question' && isObject(value) && Array.isArray(value.answer)) {
    return listed(value.answer);
  }
  return text(result);
}

function clip(line) {
  return line.length > ANSWER_SHOWN ? line.slice(0, ANSWER_SHOWN - 1) + '…' : line;
}

// How a request ended: { outcome, how, answer } (the answer only when there is one to show).
function outcomeOf(asked, view) {
  var by = byWhom(view.settled_by);
  var reason = view.reason ? ': ' + text(view.reason) : '';
  var decided = (view.kind || asked.kind) === 'approval' ? approvalOutcome(view, by) : null;
  if (decided) return decided;
  if (view.status === 'resolved') {
    var kind = view.kind || asked.kind;
    var reply = kind === 'confirm' ? parsed(view.result) : undefined;
    if (isObject(reply) && typeof reply.confirmed === 'boolean') {
      // A "No" to a confirmation is an answer to the tool, and a refusal to the person.
      if (reply.confirmed) return { outcome: 'confirmed', how: 'Confirmed by ' + by };
      var why = reply.reason ? ': ' + text(reply.reason) : '';
      return { outcome: 'declined', how: 'Declined by ' + by + why };
    }
    return { outcome: 'answered', how: 'Answered by ' + by, answer: answerText(kind, view.result) };
  }
  if (view.status === 'timed_out') return { outcome: 'timed_out', how: 'Timed out: nobody answered in time' };
  if (view.status === 'gone') return { outcome: 'gone', how: 'No longer available' };
  if (view.status === 'conflict') return { outcome: 'conflict', how: text(view.reason) };
  if (view.status === 'rejected') {
    if (view.withdrawn) return { outcome: 'withdrawn', how: 'Withdrawn: the agent stopped waiting' + reason };
    return { outcome: 'declined', how: 'Declined by ' + by + reason };
  }
  return { outcome: 'settled', how: 'Settled' };
}

function isSettled(list, id) {
  return Array.prototype.some.call(list.children, function (item) {
    return item.getAttribute('data-request-id') === id;
  });
}

// Outcomes seen live go on top; older ones from the desk's history go below them.
function addSettled(asked, view, older) {
  var list = $('settled-list');
  if (isSettled(list, asked.id)) return;
  var shown = outcomeOf(asked, view);
  var parts = [
    el('span', { className: 'settled-what', text: summary(asked) }),
    el('span', { className: 'settled-how', text: shown.how })
  ];
  if (shown.answer) parts.push(el('q', { className: 'settled-answer', text: clip(shown.answer) }));
  var item = el('li', {
    className: 'settled',
    attrs: { 'data-request-id': asked.id, 'data-room-id': text(asked.room_id), 'data-outcome': shown.outcome }
  }, parts);
  if (older) list.appendChild(item);
  else list.insertBefore(item, list.firstChild);
  while (list.children.length > SETTLED_KEPT) list.removeChild(list.lastChild);
}

function loadHistory() {
  return api('GET', 'api/history?limit=' + SETTLED_KEPT).then(function (result) {
    if (result.status !== 200 || !isObject(result.data) || !Array.isArray(result.data.requests)) return;
    result.data.requests.forEach(function (view) {
      if (isObject(view) && typeof view.id === 'string') addSettled(view, view, true);
    });
  });
}

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

function send(ctx, verb, body) {
  var id = ctx.view.id;
  ctx.error.hidden = true;
  busy(ctx, true);
  api('POST', 'api/requests/' + encodeURIComponent(id) + '/' + verb, body).then(function (result) {
    if (result.status === 200 && isObject(result.data) && result.data.status === 'pending') {
      update(result.data);  // a vote that counted: the approval waits for the others
    } else if (result.status === 200 && isObject(result.data)) {
      removeCard(id, result.data);
      if (state.linkRequest === id) showLinkOutcome(result.data);
    } else if (result.status === 409) {
      conflict(id, describe(result));
    } else if (result.status === 404) {
      removeCard(id, { status: 'gone' });
    } else if (result.status !== 401) {
      busy(ctx, false);
      var wait = result.headers && result.headers.get('Retry-After');
      fail(ctx, result.status === 429 && wait
        ? 'Too many answers at once: try again in ' + wait + ' s.'
        : describe(result));
    }
  });
}

// A 409: the request was settled first, or (still open) it is an approval whose arguments an
// edit changed after the card showed them, or one this person has voted on. An open one is
// drawn again as it stands, saying why nothing was decided; a settled one leaves.
function conflict(id, message) {
  api('GET', 'api/requests/' + encodeURIComponent(id)).then(function (result) {
    var view = result.data;
    if (result.status !== 200 || !isObject(view) || view.status !== 'pending') {
      removeCard(id, { status: 'conflict', reason: message });
      return;
    }
    update(view);
    var entry = state.cards.get(id);
    if (entry) fail({ card: entry.card, error: entry.card.querySelector('.error') }, message);
  });
}

// -- chat -----------------------------------------------------------------------------------

function chatPath() {
  return 'api/rooms/' + encodeURIComponent(state.room) + '/messages';
}

function loadChat() {
  // A page opened without a room (a plain desk, an answer link) has no chat to show.
  show($('chat'), Boolean(state.room));
  if (!state.room) return Promise.resolve();
  $('chat-room').textContent = state.room;
  return api('GET', chatPath()).then(function (result) {
    var note = $('chat-note');
    if (result.status === 200 && isObject(result.data) && Array.isArray(result.data.messages)) {
      state.chatOpen = true;
      show(note, false);
      result.data.messages.forEach(addMessage);
    } else if (result.status !== 401) {
      state.chatOpen = false;
      note.textContent = result.status === 404
        ? 'You are not in room ' + state.room + '.'
        : 'The chat is unavailable: ' + describe(result);
      show(note, true);
    }
    enableChat(state.chatOpen);
  });
}

function enableChat(on) {
  $('chat-input').disabled = !on;
  $('chat-form').querySelector('button').disabled = !on;
}

function addMessage(message) {
  if (!isObject(message)) return;
  var id = text(message.id);
  if (!id || state.messageIds.has(id)) return;
  state.messageIds.add(id);
  var mine = Boolean(state.me) && message.sender_id === state.me.actor_id;
  var item = el('li', { className: mine ? 'message mine' : 'message', attrs: { 'data-message-id': id } }, [
    el('p', { className: 'message-meta', text: (mine ? 'you' : text(message.sender_id)) + ' · ' + when(message.created_at) }),
    el('p', { className: 'message-body', text: text(message.body) })
  ]);
  var log = $('chat-log');
  log.appendChild(item);
  log.scrollTop = log.scrollHeight;
}

function sendChat(event) {
  event.preventDefault();
  var body = $('chat-input').value.trim();
  if (!body || !state.chatOpen) return;
  var waiting = waitingOn();
  if (waiting.length) {
    showWaiting(body, waiting);
    return;
  }
  postChat(body, null);
}

// The open questions of this room a chat message cannot answer (a multiple choice, an
// approval, a form...), when none it could answer is open: the agent's turn waits on them,
// and a message sent now reaches it only once they are answered.
function waitingOn() {
  var views = Array.from(state.cards.values()).map(function (entry) { return entry.view; }).filter(function (view) {
    return view.room_id === state.room;
  });
  var answerable = views.some(function (view) { return view.kind === 'question'; });
  return answerable ? [] : views;
}

function showWaiting(body, views) {
  var box = $('chat-choice');
  var first = views[0];
  var send = el('button', { className: 'secondary', text: 'Send anyway', attrs: { type: 'button' } });
  send.addEventListener('click', function () {
    postChat(body, null);
  });
  var back = el('button', { className: 'primary', text: 'Answer the question', attrs: { type: 'button' } });
  back.addEventListener('click', function () {
    showChoice(null);
    var entry = state.cards.get(first.id);
    if (entry) {
      entry.card.scrollIntoView({ block: 'center' });
      var control = entry.card.querySelector('input, textarea, button');
      if (control) control.focus();
    }
  });
  box.setAttribute('aria-label', 'The agent waits for your answer');
  box.replaceChildren(
    el('p', { className: 'choice-title', text: 'The agent is waiting for your answer to “' + summary(first) + '”. A message sent now reaches it only after that.' }),
    el('div', { className: 'row choice-list' }, [back, send])
  );
  show(box, true);
}

// A message that could answer several open questions comes back with 409 and the
// candidates: the person picks the one it answers, and it is sent again naming it.
function postChat(body, answers) {
  var input = $('chat-input');
  var error = $('chat-error');
  var payload = answers ? { text: body, answers: answers } : { text: body };
  state.chattedAt = Date.now();
  enableChat(false);
  showChoice(null);
  api('POST', chatPath(), payload).then(function (result) {
    enableChat(state.chatOpen);
    if (result.status === 202 || result.status === 200) {
      input.value = '';
      show(error, false);
      if (isObject(result.data) && result.data.id !== undefined) {
        addMessage({
          id: result.data.id,
          sender_id: state.me.actor_id,
          body: body,
          created_at: new Date().toISOString()
        });
      }
    } else if (result.status === 409 && isObject(result.data) && Array.isArray(result.data.candidates)) {
      show(error, false);
      showChoice(body, result.data.candidates);
    } else if (result.status !== 401) {
      error.textContent = shownText(describe(result));
      show(error, true);
    }
    // Without scrolling: on a phone the question the message led to is above the chat.
    input.focus({ preventScroll: true });
  });
}

function showChoice(body, candidates) {
  var box = $('chat-choice');
  box.setAttribute('aria-label', 'Which question does this answer?');
  box.replaceChildren();
  if (body === null || !candidates || !candidates.length) {
    show(box, false);
    return;
  }
  var buttons = candidates.filter(isObject).map(function (view) {
    var button = el('button', { className: 'choice', text: summary(view), attrs: { type: 'button', 'data-request-id': text(view.id) } });
    button.addEventListener('click', function () {
      postChat(body, text(view.id));
    });
    return button;
  });
  var cancel = el('button', { className: 'secondary', text: 'Cancel', attrs: { type: 'button' } });
  cancel.addEventListener('click', function () {
    showChoice(null);
  });
  box.appendChild(el('p', { className: 'choice-title', text: 'Which question does this answer?' }));
  box.appendChild(el('div', { className: 'row choice-list' }, buttons.concat([cancel])));
  show(box, true);
}

// What the desk answered when it did not keep this device's push subscription (null: the
// subscription is being given again, or was kept).
function pushRefused(result) {
  var error = $('push-error');
  error.textContent = result
    ? shownText('Notifications to this device could not be turned on: ' + describe(result))
    : '';
  show(error, Boolean(result));
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

function claimsOf(token) {
  try {
    var payload = token.split('.')[0].replace(/-/g, '+').replace(/_/g, '/');
    var claims = JSON.parse(atob(payload));
    return isObject(claims) ? claims : {};
  } catch (error) {
    return {};
  }
}

// A sign-in link (what `roomkit desk` prints) works once: the page trades it for a token.
function isSignInLink(token) {
  return claimsOf(token).use === 'sign-in';
}

// An answer link (from an email, a webhook, Slack) answers its one request, once.
function linkRequestOf(token) {
  var request = claimsOf(token).req;
  return typeof request === 'string' && request ? request : null;
}

// The answer link's request, when it is no longer open: who answered, how and when, or
// that it expired or was withdrawn. The link reads it even once spent.
function showLinkOutcome(settled) {
  if (settled) {
    drawLinkOutcome(settled, true);
    return;
  }
  callApi('GET', 'api/link', state.token).then(function (result) {
    if (result.status === 0) {
      showSignIn('The desk cannot be reached.');
    } else if (result.status === 200 && isObject(result.data)) {
      if (result.data.status !== 'pending') drawLinkOutcome(result.data, false);
    } else {
      signOut('This answer link has expired: ask for a fresh one.');
    }
  });
}

function drawLinkOutcome(view, justNow) {
  // A read begun before the answer landed (the page's first look, or one a refusal of the
  // spent link asked for) comes back settled: what the page said of its own answer stands.
  if (!justNow && state.linkSent) return;
  if (justNow) state.linkSent = true;
  stopLive();
  var shown = outcomeOf(view, view);
  var ended = ['timed_out', 'withdrawn', 'gone'].indexOf(shown.outcome) >= 0;
  var title = ended
    ? 'This request is closed'
    : justNow ? 'Sent: the agent has your answer' : 'Already answered';
  $('link-outcome-title').textContent = title + ' — ' + shownText(summary(view));
  var how = shown.how;
  if (shown.outcome === 'timed_out') how = 'It expired: nobody answered in time, and the agent went on without an answer.';
  if (shown.outcome === 'withdrawn') how = 'It was withdrawn: the agent no longer needs an answer.';
  $('link-outcome-how').textContent = how + (view.settled_at ? ' · ' + when(view.settled_at) : '');
  var answer = $('link-outcome-answer');
  answer.textContent = shown.answer ? shownText(clip(shown.answer)) : '';
  show(answer, Boolean(shown.answer));
  show($('signin'), false);
  show($('desk'), false);
  show($('link-outcome'), true);
}

function stopLive() {
  var socket = state.socket;
  state.socket = null;
  if (socket) socket.close(1000);
  clearTimeout(state.retryTimer);
  setLink('off');
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
