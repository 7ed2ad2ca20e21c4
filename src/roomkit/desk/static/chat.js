/*
 * The chat with the agent of the page's room: its messages, kept live over the desk's
 * WebSocket, and the person's own. A message that could answer several open questions asks
 * which one it answers; one sent while the agent waits on a question a message cannot answer
 * (a choice, an approval, a form) says so first, and is sent only if the person insists.
 */

import { summary } from './cards.js';
import { el, isObject, show, shownText, text, when } from './dom.js';
import { $, api, describe, state } from './session.js';

function chatPath() {
  return 'api/rooms/' + encodeURIComponent(state.room) + '/messages';
}

export function loadChat() {
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

export function addMessage(message) {
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

export function sendChat(event) {
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
