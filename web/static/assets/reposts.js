// reposts.js: reposts and quotes on a post card (docs/API.md, "Reposts and
// quotes"): "reposted by Ana and 2 others" above it, the repost (and undo)
// button with its count, the quote button with its composer, and, in a
// quote, the embedded original or its tombstone. User text is set with
// textContent only.

import { api } from './api.js';
import { icon } from './icons.js';

const name = (u) => u.nick_name || 'user ' + u.id;

// repostedBy is the line above a post that people the caller follows
// reposted: "reposted by Ana", "reposted by you and 2 others".
export function repostedBy(r, meID) {
  const who = r.user.id === meID ? 'you' : name(r.user);
  return r.others ? `reposted by ${who} and ${r.others} other${r.others === 1 ? '' : 's'}` : `reposted by ${who}`;
}

// quoted renders the post a quote embeds, or its tombstone.
function quoted(q) {
  const box = document.createElement(q.post ? 'a' : 'div');
  box.className = 'quoted';
  box.dataset.test = 'quoted';
  box.dataset.state = q.state;
  if (!q.post) {
    box.classList.add('tombstone');
    box.textContent = q.state === 'deleted' ? 'This post was deleted.' : 'This post is unavailable.';
    return box;
  }
  box.href = '#/posts/' + q.post.id;
  const who = document.createElement('b');
  who.textContent = name(q.post.author);
  const title = document.createElement('span');
  title.className = 'qtitle';
  title.textContent = q.post.title;
  const text = document.createElement('p');
  text.textContent = q.post.content;
  box.append(who, ' ', title, text);
  return box;
}

// decorate adds reposts and quotes to the post card el of post p for the
// caller meID; onQuoted(post) hears of a quote the caller published.
export function decorate(el, p, meID, onQuoted) {
  if (p.reposted_by) {
    const line = document.createElement('p');
    line.className = 'reposted muted';
    line.dataset.test = 'reposted-by';
    line.append(icon('repeat'), repostedBy(p.reposted_by, meID));
    el.prepend(line);
  }
  if (p.quote) el.querySelector('.content').after(quoted(p.quote));
  const footer = el.querySelector('footer');

  const repost = document.createElement('button');
  repost.type = 'button';
  repost.className = 'like repost';
  repost.dataset.test = 'repost';
  const count = document.createElement('span');
  count.className = 'count';
  count.dataset.test = 'repost-count';
  repost.append(icon('repeat'), count);
  const paint = () => {
    repost.setAttribute('aria-pressed', String(p.reposted_by_me));
    repost.title = p.reposted_by_me ? 'Undo repost' : 'Repost';
    count.textContent = String(p.repost_count);
  };
  paint();
  repost.addEventListener('click', async () => {
    const was = p.reposted_by_me;
    p.reposted_by_me = !was; // optimistic; undone on error
    p.repost_count += was ? -1 : 1;
    paint();
    repost.disabled = true;
    try {
      await api(was ? 'DELETE' : 'PUT', `/v1/posts/${p.id}/repost`);
    } catch (e) {
      p.reposted_by_me = was;
      p.repost_count += was ? 1 : -1;
      paint();
      repost.title = e.message;
    } finally { repost.disabled = false; }
  });

  const quote = document.createElement('button');
  quote.type = 'button';
  quote.className = 'link quote-btn';
  quote.dataset.test = 'quote';
  const qcount = document.createElement('span');
  qcount.className = 'count';
  qcount.textContent = String(p.quote_count);
  quote.append(icon('quote'), qcount);
  quote.title = p.quote_policy === 'everyone' || p.author.id === meID ? 'Quote' : 'Quote (the author limits who may quote)';
  quote.addEventListener('click', () => {
    const open = el.querySelector('.quote-form');
    if (open) { open.remove(); return; }
    footer.after(composer(p, (q) => {
      p.quote_count++;
      qcount.textContent = String(p.quote_count);
      onQuoted?.(q);
    }));
    el.querySelector('.quote-form input').focus();
  });
  footer.append(repost, quote);
}

// composer is the form that quotes post p; done(quote) hears of the quote.
function composer(p, done) {
  const form = document.createElement('form');
  form.className = 'quote-form';
  form.dataset.test = 'quote-form';
  const title = document.createElement('input');
  title.placeholder = 'Title';
  title.maxLength = 255;
  title.required = true;
  title.dataset.test = 'quote-title';
  const text = document.createElement('textarea');
  text.placeholder = 'Add your words';
  text.rows = 2;
  text.maxLength = 2048;
  text.required = true;
  text.dataset.test = 'quote-content';
  const msg = document.createElement('span');
  msg.className = 'msg';
  msg.setAttribute('role', 'status');
  const cancel = document.createElement('button');
  cancel.type = 'button';
  cancel.className = 'link';
  cancel.textContent = 'Cancel';
  cancel.addEventListener('click', () => form.remove());
  const send = document.createElement('button');
  send.type = 'submit';
  send.className = 'primary';
  send.dataset.test = 'quote-send';
  send.textContent = 'Quote';
  const row = document.createElement('div');
  row.className = 'row end';
  row.append(msg, cancel, send);
  form.append(title, text, row);
  form.addEventListener('submit', async (ev) => {
    ev.preventDefault();
    send.disabled = true;
    msg.textContent = '';
    try {
      const q = await api('POST', '/v1/posts', { title: title.value, content: text.value, quote_of: p.id });
      form.remove();
      done(q);
    } catch (e) {
      msg.textContent = e.message;
      msg.className = 'msg error';
    } finally { send.disabled = false; }
  });
  return form;
}
