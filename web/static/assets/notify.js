// notify.js: the caller's notifications. The bell in the bar shows the
// unread count, kept live by the stream's notification events; the
// #/notifications view lists the groups as sentences and marks them read
// while it is open. User text is set with textContent only.

import { api } from './api.js';
import { icon } from './icons.js';
import { setTime } from './time.js';

// sentence renders a group (GET /v1/notifications) as text, e.g. "Ana, Bo
// and 3 others liked “Title”": up to three names when the group has at
// most three actors, else the two newest and the count of the others.
// Comments: "Ana commented on “Title”", "Bo replied to your comment “…”".
// Reposts and quotes: "Ana and 2 others reposted “Title”", "Bo quoted “Title”".
export function sentence(g) {
  const names = g.actors.map((u) => u.nick_name || 'user ' + u.id);
  const title = g.post ? `“${g.post.title}”` : 'your post';
  if (g.kind === 'moderation') return `Your post ${title} was ${g.action === 'restored' ? 'restored' : 'hidden'}`;
  let who;
  if (g.count > names.length || g.count > 3) {
    const shown = names.slice(0, 2);
    const others = g.count - shown.length;
    who = `${shown.join(', ')} and ${others} other${others === 1 ? '' : 's'}`;
  } else if (names.length > 1) {
    who = `${names.slice(0, -1).join(', ')} and ${names[names.length - 1]}`;
  } else {
    who = names[0] || 'Someone';
  }
  switch (g.kind) {
    case 'follow': return `${who} followed you`;
    case 'comment': return `${who} commented on ${title}`;
    case 'reply': return `${who} replied to your comment` + (g.comment ? ` “${clip(g.comment.text)}”` : '');
    case 'repost': return `${who} reposted ${title}`;
    case 'quote': return `${who} quoted ` + (g.post?.quote?.post ? `“${g.post.quote.post.title}”` : 'your post');
  }
  return `${who} liked ${title}`;
}

// clip shortens a quoted text to a line.
function clip(s) {
  s = s.replace(/\s+/g, ' ').trim();
  return s.length > 60 ? s.slice(0, 59) + '…' : s;
}

// Notifications drives the bell and the view.
export class Notifications {
  constructor({ bell, count, list, state }) {
    Object.assign(this, { bell, count, list, state });
    this.open = false; // the view is on screen
    this.gen = 0;
    this.asked = 0; // unread counts asked for: only the latest is painted
  }

  paint(n) {
    this.count.textContent = String(n);
    this.count.hidden = n === 0;
    this.bell.setAttribute('aria-label', n === 1 ? '1 unread notification' : `${n} unread notifications`);
  }

  async refresh() {
    const my = ++this.asked;
    try {
      const n = (await api('GET', '/v1/notifications/unread-count')).count;
      if (my === this.asked) this.paint(n); // an older answer arriving late is stale
    } catch { /* the next event retries */ }
  }

  // event handles a stream's notification event: a group created,
  // changed or removed.
  event(g) {
    if (this.open) {
      this.upsert(g);
      this.markRead();
    } else {
      this.refresh();
    }
  }

  render(g) {
    const el = document.createElement('a');
    el.className = 'notification card' + (g.unread ? ' unread' : '');
    el.dataset.test = 'notification';
    el.dataset.key = g.key;
    el.dataset.kind = g.kind;
    el.dataset.latest = g.latest_at;
    el.href = g.post ? '#/posts/' + g.post.id : g.actors[0] ? '#/users/' + g.actors[0].id : '#/';
    const mark = document.createElement('span');
    mark.className = 'icon';
    mark.append(icon({ like: 'heart', follow: 'userPlus', moderation: 'alert', comment: 'comment', reply: 'reply', repost: 'repeat', quote: 'quote' }[g.kind] || 'bell'));
    const text = document.createElement('span');
    text.className = 'text';
    text.textContent = sentence(g);
    const time = document.createElement('time');
    time.className = 'muted';
    time.dataset.test = 'notification-time';
    setTime(time, g.latest_at);
    el.append(mark, text, time);
    return el;
  }

  upsert(g) {
    const old = this.list.querySelector(`[data-key="${CSS.escape(g.key)}"]`);
    if (g.removed) { old?.remove(); this.empty(); return; }
    const el = this.render(g);
    old?.remove();
    // In the list's order, by latest activity: a change goes first, a
    // group shown again (a like given back) where it was.
    const after = [...this.list.children].find((e) => e.dataset.latest < g.latest_at);
    this.list.insertBefore(el, after || null);
    this.empty();
  }

  empty() {
    this.state.textContent = this.list.children.length ? '' : 'No notifications yet.';
  }

  async markRead() {
    try { await api('POST', '/v1/notifications/read'); this.paint(0); } catch { /* kept unread */ }
  }

  // show opens the view: the newest groups (and more on demand), then
  // everything up to now is read.
  async show() {
    this.open = true;
    const my = ++this.gen;
    this.list.replaceChildren();
    this.state.textContent = 'Loading…';
    let cursor = null;
    try {
      do {
        const page = await api('GET', '/v1/notifications?limit=50' + (cursor ? '&cursor=' + encodeURIComponent(cursor) : ''));
        if (my !== this.gen) return;
        for (const g of page.data) this.list.append(this.render(g));
        cursor = page.next_cursor;
      } while (cursor && this.list.children.length < 200);
      this.empty();
      await this.markRead();
    } catch (e) {
      if (my === this.gen) this.state.textContent = e.message;
    }
  }

  hide() { this.open = false; this.gen++; }
}
