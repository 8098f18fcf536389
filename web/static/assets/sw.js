// sw.js: feedd's service worker. It shows the notifications the server
// pushes (a JSON payload: key, title, body, url), one per notification
// group (tagged with its key, so a newer push of the group replaces the
// older), and opens the page on a click.

self.addEventListener('push', (ev) => {
  let m = {};
  try { m = ev.data ? ev.data.json() : {}; } catch { m = {}; }
  ev.waitUntil(self.registration.showNotification(m.title || 'feedd', {
    body: m.body || '',
    tag: m.key || undefined,
    data: { url: '/#/notifications' },
  }));
});

self.addEventListener('notificationclick', (ev) => {
  ev.notification.close();
  const url = new URL(ev.notification.data?.url || '/', self.location.origin).href;
  ev.waitUntil(self.clients.matchAll({ type: 'window', includeUncontrolled: true }).then((ws) => {
    const open = ws.find((w) => new URL(w.url).origin === self.location.origin);
    if (open) return open.focus();
    return self.clients.openWindow(url);
  }));
});
