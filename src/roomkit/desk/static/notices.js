/*
 * Telling the person about a new question while the desk's tab is in the background: a
 * browser notification (the Notification API), once per question, closed when the question
 * leaves the page. The count of waiting questions in the tab's title is kept by questions.js.
 *
 * The notification's title and body are plain text: the browser never reads them as markup.
 */

import { summary } from './cards.js';
import { show, shownText, text } from './dom.js';

var shown = new Map();

function supported() {
  return typeof window.Notification === 'function';
}

// Whether `view` asks the signed-in person: their own question, one asked of a room they
// are in (no actor), or one they were added to as an approver. An administrator sees every
// question but is told only of their own.
function forMe(view, me) {
  if (!me) return false;
  if (view.actor_id === me.actor_id) return true;
  if (Array.isArray(view.approvers) && view.approvers.indexOf(me.actor_id) >= 0) return true;
  if (Array.isArray(view.deciding) && view.deciding.indexOf(me.actor_id) >= 0) return true;
  return (view.actor_id === null || view.actor_id === undefined) && !me.admin;
}

/* Show a notification for the new question `view`, when the page is hidden and may. */
export function notifyNew(view, me) {
  if (!document.hidden || !supported() || window.Notification.permission !== 'granted') return;
  if (!forMe(view, me) || shown.has(view.id)) return;
  var note;
  try {
    note = new window.Notification('A question for you', {
      body: shownText(summary(view) + ' (room ' + text(view.room_id) + ')'),
      tag: 'roomkit-' + view.id
    });
  } catch (error) {
    // Some browsers allow notifications only from a service worker: the title still counts.
    return;
  }
  shown.set(view.id, note);
  note.addEventListener('click', function () {
    window.focus();
    note.close();
  });
  note.addEventListener('close', function () {
    if (shown.get(view.id) === note) shown.delete(view.id);
  });
}

/* Close the notification of a question that left the page (answered, withdrawn, ...). */
export function forget(id) {
  var note = shown.get(id);
  if (!note) return;
  shown.delete(id);
  note.close();
}

/* Offer the "Notify me" button while the browser has not been asked yet. */
export function offerPermission(button) {
  var ask = supported() && window.Notification.permission === 'default';
  show(button, ask);
  if (!ask) return;
  button.addEventListener('click', function () {
    window.Notification.requestPermission().then(function () {
      show(button, window.Notification.permission === 'default');
    });
  });
}
