/*
 * The person's session on the desk page, and what the other parts of the page share: the
 * page's state, the token (taken from the URL fragment into sessionStorage), every call of
 * the desk's API made with it, and what the page shows without a token it may use: the
 * sign-in form (no token, or one the desk refuses) or, for an answer link, what its request
 * came to (who answered, how and when), in the words the list of recently settled requests
 * uses too.
 *
 * The token travels only in an Authorization header (or the WebSocket's first frame, see
 * desk.js), never in a URL.
 */

import { approvalOutcome } from './approval.js';
import { summary } from './cards.js';
import { isObject, show, shownText, text, when } from './dom.js';
import { parseJson, stringify } from './exact.js';

export var TOKEN_KEY = 'roomkit.desk.token';
export var ROOM_KEY = 'roomkit.desk.room';
var ANSWER_SHOWN = 200;

export var state = {
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

export function $(id) {
  return document.getElementById(id);
}

// -- the token: from the URL fragment to sessionStorage -------------------------------------

export function takeFragment() {
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

export function showSignIn(message) {
  show($('desk'), false);
  // The header's push offer, and what it said, are the signed-in person's (push.js).
  show($('push-me'), false);
  show($('push-error'), false);
  show($('signin'), true);
  $('who').textContent = 'Not signed in';
  setLink('off');
  var error = $('signin-error');
  error.textContent = shownText(message || '');
  show(error, Boolean(message));
}

// -- HTTP -----------------------------------------------------------------------------------

export function describe(result) {
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
export function callApi(method, path, token, body) {
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

export function api(method, path, body) {
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

// -- the live link's badge ------------------------------------------------------------------

export function setLink(status) {
  var badge = $('link-state');
  badge.setAttribute('data-state', status);
  badge.textContent = { live: 'live', connecting: 'connecting…', off: 'offline' }[status];
}

// -- how a request ended, in words ----------------------------------------------------------

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

export function clip(line) {
  return line.length > ANSWER_SHOWN ? line.slice(0, ANSWER_SHOWN - 1) + '…' : line;
}

// How a request ended: { outcome, how, answer } (the answer only when there is one to show).
export function outcomeOf(asked, view) {
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

// -- the answer link ------------------------------------------------------------------------

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
export function isSignInLink(token) {
  return claimsOf(token).use === 'sign-in';
}

// An answer link (from an email, a webhook, Slack) answers its one request, once.
export function linkRequestOf(token) {
  var request = claimsOf(token).req;
  return typeof request === 'string' && request ? request : null;
}

// The answer link's request, when it is no longer open: who answered, how and when, or
// that it expired or was withdrawn. The link reads it even once spent.
export function showLinkOutcome(settled) {
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
