/*
 * The questions on the desk page: one card for each open question (cards.js draws it), added,
 * drawn again or taken off as the desk's WebSocket says, the count of waiting questions (in the
 * tab's title too), the answer a card sends and what the desk said to it, and the list of
 * recently settled requests, each with how it ended.
 */

import { busy, fail, renderCard, summary } from './cards.js';
import { el, isObject, show, text } from './dom.js';
import { stringify } from './exact.js';
import { forget, notifyNew } from './notices.js';
import { $, api, clip, describe, outcomeOf, showLinkOutcome, state } from './session.js';

var SETTLED_KEPT = 20;
// A question that arrives this soon after a chat message is one the chat led to.
var CHAT_LEADS_MS = 30000;

export function applySnapshot(requests) {
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
export function upsert(view) {
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
export function update(view) {
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

export function settle(view) {
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

export function loadHistory() {
  return api('GET', 'api/history?limit=' + SETTLED_KEPT).then(function (result) {
    if (result.status !== 200 || !isObject(result.data) || !Array.isArray(result.data.requests)) return;
    result.data.requests.forEach(function (view) {
      if (isObject(view) && typeof view.id === 'string') addSettled(view, view, true);
    });
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
