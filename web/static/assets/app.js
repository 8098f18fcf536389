// app.js: feedd's page. Views: log in, the home timeline (compose, live
// "N new posts" banner, infinite scroll, Latest or For you order; reposts
// and quotes on every post: reposts.js), a
// user's page (#/users/{id}), a post with its comments (#/posts/{id}:
// comments.js) and the notifications (#/notifications, with the bell's
// unread count in the bar: notify.js).
// User text is always set with textContent, never parsed as HTML.

import { api, token, setOnUnauthorized } from './api.js';
import { openStream } from './stream.js';
import { Notifications } from './notify.js';
import { PostPage } from './comments.js';
import { icon } from './icons.js';
import { setTime } from './time.js';
import { Markers, topPost } from './markers.js';
import { Push } from './push.js';
import { decorate } from './reposts.js';
import { renderMedia, Attachments } from './media.js';

const $ = (id) => document.getElementById(id);
const views = ['login', 'home', 'user', 'post', 'notifications'];
let me = null;      // GET /v1/me of the logged-in user
let live = null;    // the open stream
let pending = [];   // posts from the stream not shown yet, in arrival order
let timeline = null;
let userList = null;
let stale = false;  // the graph changed: reload the timeline on the way home
let order = 'latest'; // the home timeline's order: latest or ranked ("For you")
const notes = new Notifications({ bell: $('bell'), count: $('unread-count'), list: $('notification-list'), state: $('notification-state') });

// ---- small helpers

function show(view) {
  for (const v of views) $(v).hidden = v !== view;
  $('nav').hidden = view === 'login';
}

function say(el, text, kind = '') {
  el.textContent = text;
  el.className = 'msg ' + kind;
}

// busy disables a button while f runs and reports f's error in msgEl.
async function busy(button, msgEl, f) {
  button.disabled = true;
  if (msgEl) say(msgEl, '');
  try { return await f(); } catch (e) { if (msgEl) say(msgEl, e.message, 'error'); } finally { button.disabled = false; }
}

function avatar(el, user) {
  el.textContent = (user.nick_name || '?').trim().charAt(0).toUpperCase() || '?';
  el.style.setProperty('--hue', String((user.id * 47) % 360));
}

// feedOrder compares posts as feeds order them: newest first, then larger id.
// created_at is RFC 3339 UTC with milliseconds, so strings compare as times.
function feedOrder(a, b) {
  if (a.created_at !== b.created_at) return a.created_at < b.created_at ? 1 : -1;
  return b.id - a.id;
}

// ---- a post

function renderPost(p) {
  const el = $('post-tpl').content.firstElementChild.cloneNode(true);
  el.dataset.postId = String(p.id);
  const href = '#/users/' + p.author.id;
  const av = el.querySelector('.avatar');
  av.href = href;
  avatar(av, p.author);
  const author = el.querySelector('.author');
  author.href = href;
  author.textContent = p.author.nick_name || 'user ' + p.author.id;
  setTime(el.querySelector('time'), p.created_at);
  el.querySelector('.open').href = '#/posts/' + p.id;
  el.querySelector('.title').textContent = p.title;
  el.querySelector('.content').textContent = p.content;
  renderMedia(el.querySelector('.media'), p.media);
  const comments = el.querySelector('.comments-link');
  comments.href = '#/posts/' + p.id;
  comments.prepend(icon('comment'));
  comments.querySelector('.count').textContent = String(p.comment_count);
  const like = el.querySelector('.like');
  like.prepend(icon('heart'));
  const count = el.querySelector('.count');
  const paint = () => {
    like.setAttribute('aria-pressed', String(p.liked_by_me));
    like.title = p.liked_by_me ? 'Unlike' : 'Like';
    count.textContent = String(p.like_count);
  };
  paint();
  like.addEventListener('click', async () => {
    const was = p.liked_by_me;
    p.liked_by_me = !was; // optimistic; undone on error
    p.like_count += was ? -1 : 1;
    paint();
    like.disabled = true;
    try {
      await api(was ? 'DELETE' : 'PUT', `/v1/posts/${p.id}/like`);
    } catch (e) {
      p.liked_by_me = was;
      p.like_count += was ? 1 : -1;
      paint();
      like.title = e.message;
    } finally { like.disabled = false; }
  });
  decorate(el, p, me?.id, (q) => timeline?.place(q));
  el.post = p;
  return el;
}

// ---- a scrolled list of posts under a native cursor

// feedList fills listEl page by page from fetchPage(cursor) -> {data,
// next_cursor}; stateEl below it shows loading, errors and the end, and
// loads the next page when it scrolls into view. onEmpty(bool) hears
// whether the list is known empty, onPage() of each page shown.
function feedList(listEl, stateEl, fetchPage, onEmpty, onPage) {
  let cursor = null, done = false, loading = false, gen = 0;
  const shown = new Set();
  const io = new IntersectionObserver((es) => { if (es.some((e) => e.isIntersecting)) load(); }, { rootMargin: '600px' });
  io.observe(stateEl);

  function state(text, kind, retry) {
    stateEl.replaceChildren();
    stateEl.className = 'state ' + (kind || '');
    if (text) stateEl.append(text);
    if (retry) {
      const b = document.createElement('button');
      b.textContent = 'Retry';
      b.addEventListener('click', load);
      stateEl.append(' ', b);
    }
  }

  async function load() {
    if (loading || done) return;
    loading = true;
    const my = gen;
    state('Loading…', 'loading');
    try {
      const page = await fetchPage(cursor);
      if (my !== gen) return;
      for (const p of page.data) append(p);
      onPage?.();
      cursor = page.next_cursor;
      done = cursor === null;
      if (done) state(shown.size ? 'You are all caught up.' : '', 'end');
      if (done && !shown.size) onEmpty?.(true);
    } catch (e) {
      if (my === gen) state(e.message, 'error', true);
    } finally {
      if (my === gen) loading = false;
    }
    // A short page may leave the sentinel on screen: keep going.
    if (my === gen && !done && !loading) requestAnimationFrame(() => {
      if (my === gen && stateEl.offsetParent && stateEl.getBoundingClientRect().top < innerHeight + 600) load();
    });
  }

  function append(p) {
    if (shown.has(p.id)) return;
    shown.add(p.id);
    listEl.append(renderPost(p));
  }

  // place inserts p where the feed order puts it among the loaded posts;
  // a post older than all loaded ones is left for the scroll to bring.
  function place(p) {
    if (shown.has(p.id)) return false;
    const next = [...listEl.children].find((el) => feedOrder(p, el.post) < 0);
    if (!next && !done) return false;
    shown.add(p.id);
    listEl.insertBefore(renderPost(p), next || null);
    onEmpty?.(false);
    if (done) state('You are all caught up.', 'end');
    return true;
  }

  function remove(id) {
    listEl.querySelector(`[data-post-id="${Number(id)}"]`)?.remove();
    shown.delete(Number(id));
  }

  function reset() {
    gen++;
    cursor = null; done = false; loading = false;
    shown.clear();
    listEl.replaceChildren();
    onEmpty?.(false);
    load();
  }

  function stop() { gen++; done = true; io.disconnect(); }

  return { reset, place, remove, stop, has: (id) => shown.has(id) };
}

// ---- log in

$('code-form').addEventListener('submit', (ev) => {
  ev.preventDefault();
  const btn = ev.submitter || $('code-form').querySelector('button');
  busy(btn, $('login-msg'), async () => {
    await api('POST', '/v1/auth/code', { phone: $('phone').value.trim() });
    say($('login-msg'), 'Code sent. Look where your server sends codes (on the embedded default: its log).', 'ok');
    $('code').focus();
  });
});

$('login-form').addEventListener('submit', (ev) => {
  ev.preventDefault();
  const btn = ev.submitter || $('login-form').querySelector('button');
  busy(btn, $('login-msg'), async () => {
    const { token: t } = await api('POST', '/v1/auth/login', { phone: $('phone').value.trim(), code: $('code').value.trim() });
    token.set(t);
    $('code').value = '';
    await start();
  });
});

$('logout').addEventListener('click', async () => {
  await api('DELETE', '/v1/auth/session').catch(() => {});
  loggedOut();
});

function loggedOut() {
  token.clear();
  live?.stop();
  live = null;
  me = null;
  pending = [];
  timeline?.stop();
  userList?.stop();
  timeline = userList = null;
  notes.hide();
  notes.paint(0);
  order = 'latest';
  $('order-latest').setAttribute('aria-pressed', 'true');
  $('order-ranked').setAttribute('aria-pressed', 'false');
  show('login');
}
setOnUnauthorized(loggedOut);

// ---- home: compose, banner, timeline

// The home timeline opens where the reader stopped (markers.js), with
// "N new since you last read" above; scrolling up to newer posts moves
// the marker.
const marks = new Markers();
let jumpTo = null;   // the marked post, to scroll to once its page is shown
let topSeen = null;  // the newest post the reader has had on screen
let tracking = false; // the first page is shown (and scrolled to): scrolls are the reader's

async function homePage(c) {
  if (!c) tracking = false;
  if (!c && order === 'latest') {
    const page = await marks.firstPage(20);
    if (page) {
      // New since the marked post: those above it on this page and the
      // newer ones the page leaves out.
      const above = page.data.findIndex((p) => p.id === marks.lastRead);
      jumpTo = marks.lastRead;
      paintSince(page.newer_count + Math.max(above, 0));
      return page;
    }
  }
  if (!c) paintSince(0);
  return api('GET', '/v1/timeline?limit=20' + (order === 'ranked' ? '&order=ranked' : '') + (c ? '&cursor=' + encodeURIComponent(c) : ''));
}

function homeShown() {
  paintBanner();
  if (jumpTo !== null) {
    const el = $('timeline').querySelector(`[data-post-id="${jumpTo}"]`);
    jumpTo = null;
    if (el) { topSeen = el.post; el.scrollIntoView({ block: 'start' }); scrollBy(0, -60); } // below the banner too (the bar: scroll-padding)
  }
  tracking = true;
}

function paintSince(n) {
  $('since').hidden = !n;
  $('since').textContent = n === 1 ? '1 new since you last read' : `${n} new since you last read`;
}

$('since').addEventListener('click', () => busy($('since'), $('compose-msg'), async () => {
  for (const p of await marks.newer()) timeline.place(p);
  paintSince(0);
  scrollTo({ top: 0 });
}));

let scrollTick = 0;
addEventListener('scroll', () => {
  if (scrollTick || !tracking || order !== 'latest' || $('home').hidden || !timeline) return;
  scrollTick = requestAnimationFrame(() => {
    scrollTick = 0;
    const p = topPost($('timeline'));
    if (p && (!topSeen || feedOrder(p, topSeen) < 0)) { topSeen = p; marks.seen(p.id); }
  });
}, { passive: true });
const attachments = new Attachments({ list: $('attachments'), input: $('compose-files'), drop: $('compose'), msg: $('compose-msg') });

$('compose').addEventListener('submit', (ev) => {
  ev.preventDefault();
  const btn = ev.submitter || $('compose').querySelector('button[type=submit]');
  busy(btn, $('compose-msg'), async () => {
    const mediaIDs = await attachments.ids();
    const p = await api('POST', '/v1/posts', { title: $('compose-title').value, content: $('compose-content').value, media_ids: mediaIDs });
    $('compose').reset();
    attachments.clear();
    pending = pending.filter((q) => q.id !== p.id);
    timeline.place(p);
    paintBanner();
    scrollTo({ top: 0 });
  });
});

function paintBanner() {
  pending = pending.filter((p) => !timeline?.has(p.id));
  const n = pending.length;
  $('new-posts').hidden = n === 0;
  $('new-posts').textContent = n === 1 ? '1 new post' : `${n} new posts`;
}

$('new-posts').addEventListener('click', () => {
  if (order === 'ranked') { pending = []; paintBanner(); timeline.reset(); return; }
  for (const p of pending) timeline.place(p);
  pending = [];
  paintBanner();
  scrollTo({ top: 0 });
});

async function discover(empty) {
  $('discover').hidden = !empty;
  if (!empty) return;
  const who = $('who');
  who.replaceChildren();
  // The hot posts' authors are people worth following (compatible API:
  // the native one has no global list yet).
  const resp = await fetch('/blog/hot?current=1').then((r) => r.json()).catch(() => null);
  const seen = new Set([me.id]);
  for (const b of (resp && resp.data) || []) {
    if (seen.has(b.userId)) continue;
    seen.add(b.userId);
    const li = document.createElement('li');
    const a = document.createElement('a');
    a.href = '#/users/' + b.userId;
    const av = document.createElement('span');
    av.className = 'avatar';
    avatar(av, { id: b.userId, nick_name: b.name });
    const name = document.createElement('span');
    name.textContent = b.name || 'user ' + b.userId;
    a.append(av, name);
    li.append(a);
    who.append(li);
  }
  if (!who.children.length) {
    const li = document.createElement('li');
    li.className = 'muted';
    li.textContent = 'Nobody has posted yet. Be the first: write a post above.';
    who.append(li);
  }
}

$('goto').addEventListener('submit', (ev) => {
  ev.preventDefault();
  const id = $('goto-id').value.trim();
  if (/^\d+$/.test(id)) location.hash = '#/users/' + id;
});

// startStream opens the live stream; it resolves once the stream is
// subscribed (at most 3 s: the timeline must not wait on a failing stream).
function startStream() {
  let ready;
  const subscribed = new Promise((r) => { ready = r; setTimeout(r, 3000); });
  live = openStream({
    ready,
    notification(g) { notes.event(g); },
    marker(ms) { marks.event(ms); },
    post(p) {
      if (order === 'ranked') { // a ranked page has no place for it: the banner reloads
        if (!timeline.has(p.id) && !pending.some((q) => q.id === p.id)) pending.push(p);
        paintBanner();
        return;
      }
      if (p.author.id === me.id && !timeline.has(p.id)) { timeline.place(p); return; }
      if (!timeline.has(p.id) && !pending.some((q) => q.id === p.id)) pending.push(p);
      paintBanner();
    },
    delete(id) {
      pending = pending.filter((q) => q.id !== Number(id));
      timeline.remove(id);
      userList?.remove(id);
      paintBanner();
    },
  });
  return subscribed;
}

// ---- a user's page

let userVisit = 0;
async function userPage(id) {
  const visit = ++userVisit;
  show('user');
  scrollTo({ top: 0 });
  $('user-name').textContent = 'Loading…';
  for (const k of ['user-intro', 'user-followers', 'user-following']) $(k).textContent = '';
  say($('user-msg'), '');
  $('user-actions').hidden = true;
  userList?.stop();
  userList = feedList($('user-posts'), $('user-state'),
    (c) => api('GET', `/v1/users/${id}/posts?limit=20` + (c ? '&cursor=' + encodeURIComponent(c) : '')),
    (empty) => { if (empty) $('user-state').textContent = 'No posts yet.'; });
  userList.reset();
  let u;
  try {
    u = await api('GET', `/v1/users/${id}`);
    if (visit !== userVisit) return;
  } catch (e) {
    if (visit !== userVisit) return;
    $('user-name').textContent = e.status === 404 ? 'No such user' : 'Could not load this user';
    say($('user-msg'), e.message, 'error');
    return;
  }
  avatar($('user-avatar'), u);
  $('user-name').textContent = u.nick_name;
  $('user-intro').textContent = u.introduce || (u.city ? u.city : '');
  const counts = () => {
    $('user-followers').textContent = `${u.follower_count} follower${u.follower_count === 1 ? '' : 's'}`;
    $('user-following').textContent = `${u.following_count} following`;
  };
  counts();
  if (u.id === me.id) return;
  const [muted, blocked] = await Promise.all([inList('/v1/mutes', u.id), inList('/v1/blocks', u.id)]).catch(() => [false, false]);
  if (visit !== userVisit) return; // the user went elsewhere meanwhile
  const st = { follow: u.followed_by_me, mute: muted, block: blocked };
  const label = { follow: ['Follow', 'Unfollow'], mute: ['Mute', 'Unmute'], block: ['Block', 'Unblock'] };
  const path = { follow: '/v1/following/', mute: '/v1/mutes/', block: '/v1/blocks/' };
  const paint = () => {
    for (const k of Object.keys(st)) {
      $(k).textContent = label[k][st[k] ? 1 : 0];
      $(k).setAttribute('aria-pressed', String(st[k]));
    }
    $('follow').disabled = st.block;
  };
  paint();
  $('user-actions').hidden = false; // only now: the buttons show this user's state
  for (const k of Object.keys(st)) {
    $(k).onclick = () => busy($(k), $('user-msg'), async () => {
      await api(st[k] ? 'DELETE' : 'PUT', path[k] + u.id);
      if (k === 'follow') u.follower_count += st.follow ? -1 : 1;
      if (k === 'block' && !st.block && st.follow) { u.follower_count--; st.follow = false; }
      st[k] = !st[k];
      paint();
      counts();
      stale = true; // the home timeline changes with the graph
    });
  }
}

// inList reports whether id is on the caller's list at path (mutes, blocks).
async function inList(path, id) {
  let cursor = null;
  for (let i = 0; i < 50; i++) {
    const page = await api('GET', path + '?limit=200' + (cursor ? '&cursor=' + cursor : ''));
    if (page.data.some((u) => u.id === id)) return true;
    if (!(cursor = page.next_cursor)) return false;
  }
  return false;
}

// ---- start and route

async function start() {
  try {
    me = await api('GET', '/v1/me');
  } catch (e) {
    if (e.status !== 401) say($('login-msg'), e.message, 'error');
    loggedOut();
    return;
  }
  $('me-link').href = '#/users/' + me.id;
  $('me-link').textContent = me.nick_name;
  timeline = feedList($('timeline'), $('timeline-state'), homePage, discover, homeShown);
  await marks.load();
  topSeen = null;
  notes.refresh();
  push.paint();
  route();
  await startStream(); // then read: a post landing in between comes by the stream
  timeline.reset();
}

const postPage = new PostPage({ renderPost, avatar });
const push = new Push($('push-toggle'), $('push-msg'));

function route() {
  if (!me) return;
  notes.hide();
  postPage.close();
  const post = location.hash.match(/^#\/posts\/(\d+)$/);
  if (post) { userList?.stop(); userList = null; show('post'); scrollTo({ top: 0 }); postPage.open(Number(post[1]), me); return; }
  if (location.hash === '#/notifications') { userList?.stop(); userList = null; show('notifications'); notes.show(); push.paint(); return; }
  const m = location.hash.match(/^#\/users\/(\d+)$/);
  if (m) { userPage(Number(m[1])); return; }
  userList?.stop();
  userList = null;
  show('home');
  if (stale) { stale = false; pending = []; paintBanner(); timeline.reset(); } // the fresh read has them all
  scrollTo({ top: 0 });
}

// The two orders of the home timeline: Latest (chronological) and For you
// (order=ranked).
function setOrder(o) {
  if (o === order || !timeline) return;
  order = o;
  $('order-latest').setAttribute('aria-pressed', String(o === 'latest'));
  $('order-ranked').setAttribute('aria-pressed', String(o === 'ranked'));
  pending = [];
  paintBanner();
  paintSince(0);
  topSeen = null;
  timeline.reset();
}
$('order-latest').addEventListener('click', () => setOrder('latest'));
$('order-ranked').addEventListener('click', () => setOrder('ranked'));

// Single sign-on: the server's callback sends the browser back here with
// the new session's token (#sso=...) or the reason it failed
// (#sso-error=...) in the fragment, which no server sees; it is taken out
// of the address at once.
// A token is taken only when this tab began a sign-in: a link to
// /#sso=... sent by someone else must not sign the reader in as them.
function signOnReturn() {
  const m = location.hash.match(/^#sso(-error)?=(.*)$/);
  if (!m) return false;
  history.replaceState(null, '', location.pathname);
  const began = sessionStorage.getItem(SSO_PENDING) === '1';
  sessionStorage.removeItem(SSO_PENDING);
  const value = decodeURIComponent(m[2].replace(/\+/g, ' '));
  if (m[1]) { say($('login-msg'), value, 'error'); return true; }
  if (!began) { say($('login-msg'), 'This sign-in was not started here; sign in again.', 'error'); return true; }
  token.set(value);
  return false;
}
const SSO_PENDING = 'feedd.sso';
$('sso-link').addEventListener('click', () => sessionStorage.setItem(SSO_PENDING, '1'));

// The ways in this server offers: phone codes, single sign-on, or both.
async function loginMethods() {
  const m = await api('GET', '/v1/auth/methods').catch(() => null);
  if (!m) return;
  $('phone-login').hidden = !m.phone;
  if (m.sso) {
    $('sso-link').textContent = 'Sign in with ' + m.sso.name;
    $('sso-link').href = m.sso.url;
    $('sso').hidden = false;
  }
}

addEventListener('hashchange', route);
loginMethods();
const signOnFailed = signOnReturn();
if (token.get() && !signOnFailed) start(); else show('login');
