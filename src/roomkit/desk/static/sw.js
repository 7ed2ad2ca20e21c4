/*
 * The desk's service worker: shows the desk's Web Push messages, and answers from them.
 *
 * A message is Declarative Web Push JSON ({"web_push": 8030, "notification": {...}}): Safari
 * shows it without running this worker; elsewhere the `push` handler below shows the same
 * notification. Its `tag` is the request's id, so the notice that a request settled replaces
 * the question. `navigate` is the signed, single-use answer link; tapping the notification
 * opens it. Where the platform shows action buttons, `data.answers` holds what each one
 * sends to the desk (the link's token authorises it, once); when that fails, the link opens.
 *
 * Nothing here reads a notification's text as markup: titles and bodies are plain text.
 */

self.addEventListener('install', function () {
  self.skipWaiting();
});

self.addEventListener('activate', function (event) {
  event.waitUntil(self.clients.claim());
});

function messageOf(data) {
  if (!data) return null;
  try {
    var message = data.json();
    var notification = message && message.notification;
    if (!notification || typeof notification.title !== 'string') return null;
    return notification;
  } catch (error) {
    return null;
  }
}

function optionsOf(notification) {
  var data = notification.data && typeof notification.data === 'object' ? notification.data : {};
  return {
    body: typeof notification.body === 'string' ? notification.body : '',
    tag: typeof notification.tag === 'string' ? notification.tag : undefined,
    icon: 'icon-192.png',
    lang: notification.lang,
    silent: notification.silent === true,
    renotify: notification.renotify === true,
    requireInteraction: notification.require_interaction === true,
    actions: (Array.isArray(notification.actions) ? notification.actions : []).map(function (action) {
      return { action: String(action.action), title: String(action.title) };
    }),
    data: { navigate: notification.navigate, answers: data.answers || {} }
  };
}

self.addEventListener('push', function (event) {
  var notification = messageOf(event.data);
  if (!notification) return;
  event.waitUntil(self.registration.showNotification(notification.title, optionsOf(notification)));
});

// The answer link's token sits in its fragment: `<desk>/#token=...`.
function tokenOf(link) {
  var at = typeof link === 'string' ? link.indexOf('#') : -1;
  if (at < 0) return null;
  return new URLSearchParams(link.slice(at + 1)).get('token');
}

function openLink(link) {
  if (typeof link !== 'string' || !/^https?:\/\//.test(link)) return Promise.resolve();
  return self.clients.openWindow(link);
}

function answer(action, data, tag) {
  var token = tokenOf(data.navigate);
  if (!token || !action || typeof action.url !== 'string') return openLink(data.navigate);
  return fetch(action.url, {
    method: 'POST',
    headers: { Authorization: 'Bearer ' + token, 'Content-Type': 'application/json' },
    body: JSON.stringify(action.body || {}),
    credentials: 'omit',
    cache: 'no-store'
  }).then(function (response) {
    if (!response.ok) return openLink(data.navigate);
    return self.registration.showNotification(action.done || 'Answered', {
      body: action.done_body || '', tag: tag, icon: 'icon-192.png', silent: true
    });
  }, function () {
    return openLink(data.navigate);
  });
}

self.addEventListener('notificationclick', function (event) {
  var notification = event.notification;
  var data = notification.data || {};
  notification.close();
  var action = event.action ? (data.answers || {})[event.action] : null;
  event.waitUntil(action ? answer(action, data, notification.tag) : openLink(data.navigate));
});
