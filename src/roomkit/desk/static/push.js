/*
 * The desk as an installable app on a phone, and Web Push to it.
 *
 * `registerWorker()` registers the service worker (sw.js) beside the page, which shows the
 * desk's push messages and makes the desk installable. `offerPush(button, api)` shows the
 * "Notify me on this device" button when the browser can take push messages and the desk
 * sends them (GET api/push/key answers); a tap asks for permission (browsers ask only after
 * a gesture), subscribes with the desk's public VAPID key, and gives the subscription to the
 * desk (POST api/push/subscriptions) for the signed-in person. A device subscribed already
 * is given again on each visit, so the desk keeps it current; one the desk keeps for another
 * person (409: they signed in on this browser before) is unsubscribed, and this person
 * subscribes anew with an endpoint of their own. When the browser cannot subscribe (its push
 * service cannot be reached or refuses, a private window has none), or the desk refuses the
 * subscription or cannot be reached, `tell(reason)` says why on the page (`tell(null)` takes
 * it back) and the button stays to try again. An endpoint the desk refuses (400: a push
 * service it does not push to) is said in words the person can act on: the desk's own reason
 * names its `push_hosts` option, and its log keeps it for whoever runs it.
 *
 * The page calls `offerPush` on each sign-in, without a reload when a person signs in again:
 * each call first takes back what the last one offered (the button, its click handler and
 * key, what it said), and sets the button's one click handler again only once the desk gave
 * its key, so a tap subscribes once, with this sign-in's key. An answer of the desk or the
 * browser that comes after the person signed out, or signed in again, is dropped: what it
 * would offer or say is not the signed-in person's.
 */

import { show } from './dom.js';
import { describe, state } from './session.js';

// Why the browser's PushManager.subscribe() failed, for the person: the browser's own error
// names its internals ("Registration failed - permission denied").
var BROWSER_REFUSED = 'this browser could not subscribe to its push service (a private window cannot).';

// An endpoint the desk refused (400), for the person; the desk's reason is for whoever runs it.
var SERVICE_REFUSED = 'this desk does not accept this device\'s push service; ask whoever runs the desk to allow it.';

function supported() {
  return 'serviceWorker' in navigator && 'PushManager' in window && typeof window.Notification === 'function';
}

export function registerWorker() {
  if (!('serviceWorker' in navigator)) return Promise.resolve(null);
  return navigator.serviceWorker.register('sw.js').catch(function () {
    return null;
  });
}

// The key as the desk gives it (unpadded base64url) to the bytes PushManager takes.
function keyBytes(text) {
  var base64 = text.replace(/-/g, '+').replace(/_/g, '/');
  var raw = atob(base64 + '='.repeat((4 - (base64.length % 4)) % 4));
  var bytes = new Uint8Array(raw.length);
  for (var i = 0; i < raw.length; i += 1) bytes[i] = raw.charCodeAt(i);
  return bytes;
}

// The desk's answer to the subscription; rejected when the browser could not subscribe.
function subscribe(api, key) {
  return navigator.serviceWorker.ready.then(function (registration) {
    var manager = registration.pushManager;
    function fresh() {
      return manager.subscribe({ userVisibleOnly: true, applicationServerKey: keyBytes(key) });
    }
    function give(subscription) {
      return api('POST', 'api/push/subscriptions', subscription.toJSON());
    }
    return manager.getSubscription().then(function (existing) {
      if (!existing) return fresh().then(give);
      return give(existing).then(function (answer) {
        if (answer.status !== 409) return answer;
        // This browser's subscription is another person's at the desk (they signed in
        // here before): it stays theirs, and this person gets an endpoint of their own.
        return existing.unsubscribe().then(fresh).then(give);
      });
    });
  });
}

// Offers made, the last one the signed-in person's: an answer to an earlier one is dropped.
var offers = 0;

export function offerPush(button, api, tell) {
  // No offer stands until this sign-in's key comes: a desk that gives none offers nothing.
  var offer = (offers += 1);
  button.onclick = null;
  show(button, false);
  tell(null);
  // An answer that comes once this person signed out, or signed in again, is not theirs.
  function current() {
    return offer === offers && state.token !== null;
  }
  if (!supported()) return Promise.resolve(false);
  return api('GET', 'api/push/key').then(function (result) {
    if (!current()) return false;
    if (result.status !== 200 || !result.data || typeof result.data.public_key !== 'string') return false;
    var key = result.data.public_key;
    // A subscription not made or not kept is said, and the person may try again.
    function say(reason) {
      if (!current()) return;
      tell(reason);
      show(button, reason !== null);
    }
    // The desk's answer: refused or never reached, say why; a refused token has signed the
    // page out already.
    function given(answer) {
      var kept = answer.status === 200;
      if (kept || answer.status === 401) say(null);
      else say(answer.status === 400 ? SERVICE_REFUSED : describe(answer));
      return kept;
    }
    function failed() {
      say(BROWSER_REFUSED);
      return false;
    }
    // Set, not added: each sign-in offers the button again, with its own key and handler.
    button.onclick = function () {
      window.Notification.requestPermission().then(function (permission) {
        if (permission !== 'granted') {
          show(button, permission === 'default');
          return;
        }
        show(button, false);
        tell(null);
        subscribe(api, key).then(given, failed);
      });
    };
    if (window.Notification.permission === 'granted') {
      // Subscribed on an earlier visit (or allowed already): keep the desk's record current.
      return subscribe(api, key).then(given, failed);
    }
    if (window.Notification.permission === 'denied') return false;
    show(button, true);
    return true;
  });
}
