// comments.js: a post's page (#/posts/{id}): the post and its comments in
// two-level threads: write, reply, like, delete, hide (the post's author),
// the first replies of each thread and more on demand, Top or New order.
// User text is set with textContent only.

import { api } from './api.js';
import { icon } from './icons.js';
import { setTime } from './time.js';

const $ = (id) => document.getElementById(id);

// PostPage drives the view. renderPost(post) renders the post as the
// timeline does; avatar(el, user) paints an avatar.
export class PostPage {
  constructor({ renderPost, avatar }) {
    Object.assign(this, { renderPost, avatar });
    this.gen = 0;
    this.order = 'top';
    this.replyTo = null; // the comment being answered: {id, thread, name}
    $('comment-form').addEventListener('submit', (ev) => { ev.preventDefault(); this.send(); });
    $('reply-cancel').addEventListener('click', () => this.answer(null));
    for (const o of ['top', 'new']) $('comments-' + o).addEventListener('click', () => this.setOrder(o));
    this.io = new IntersectionObserver((es) => { if (es.some((e) => e.isIntersecting)) this.more(); }, { rootMargin: '400px' });
    this.io.observe($('comments-state'));
  }

  // open shows post id for user me.
  async open(id, me) {
    const my = ++this.gen;
    Object.assign(this, { id, me, post: null, cursor: null, done: true, loading: false });
    this.answer(null);
    $('post-view').replaceChildren();
    $('comments').replaceChildren();
    $('comment-msg').textContent = '';
    this.state('Loading…', 'loading');
    try {
      const post = await api('GET', `/v1/posts/${id}`);
      if (my !== this.gen) return;
      this.post = post;
      $('post-view').append(this.renderPost(post));
      this.paintPolicy();
      this.reset();
    } catch (e) {
      if (my === this.gen) this.state(e.status === 404 ? 'This post does not exist (any more).' : e.message, 'error');
    }
  }

  close() { this.gen++; this.done = true; }

  paintPolicy() {
    const p = this.post;
    const mine = p.author.id === this.me.id;
    const closed = !mine && p.comment_policy === 'nobody';
    $('comment-form').hidden = closed;
    $('comments-closed').hidden = !closed;
    $('comment-input').placeholder = p.comment_policy === 'following' && !mine
      ? 'Write a comment (the author allows people they follow)' : 'Write a comment';
  }

  setOrder(o) {
    if (o === this.order) return;
    this.order = o;
    for (const x of ['top', 'new']) $('comments-' + x).setAttribute('aria-pressed', String(x === o));
    this.reset();
  }

  reset() {
    this.gen++;
    this.cursor = null;
    this.done = false;
    this.loading = false;
    $('comments').replaceChildren();
    this.more();
  }

  state(text, kind = '') {
    $('comments-state').textContent = text;
    $('comments-state').className = 'state ' + kind;
  }

  async more() {
    if (this.loading || this.done || !this.post) return;
    this.loading = true;
    const my = this.gen;
    this.state('Loading…', 'loading');
    try {
      const q = `?order=${this.order}&limit=20` + (this.cursor ? '&cursor=' + encodeURIComponent(this.cursor) : '');
      const page = await api('GET', `/v1/posts/${this.id}/comments${q}`);
      if (my !== this.gen) return;
      for (const c of page.data) $('comments').append(this.thread(c));
      this.cursor = page.next_cursor;
      this.done = this.cursor === null;
      this.state(this.done ? ($('comments').children.length ? '' : 'No comments yet.') : '');
    } catch (e) {
      if (my === this.gen) this.state(e.message, 'error');
    } finally {
      if (my === this.gen) this.loading = false;
    }
  }

  // thread renders a top-level comment with its first replies and the
  // button that loads the others.
  thread(c) {
    const el = this.comment(c);
    const replies = document.createElement('div');
    replies.className = 'replies';
    el.append(replies);
    const shown = new Set();
    for (const r of c.replies || []) { replies.append(this.comment(r)); shown.add(r.id); }
    const more = document.createElement('button');
    more.type = 'button';
    more.className = 'link more';
    more.dataset.test = 'replies-more';
    let cursor = null;
    const paint = () => {
      const left = c.reply_count - shown.size;
      more.hidden = left <= 0;
      more.textContent = left === 1 ? 'View 1 more reply' : `View ${left} more replies`;
    };
    more.addEventListener('click', async () => {
      more.disabled = true;
      try {
        const page = await api('GET', `/v1/comments/${c.id}/replies?limit=50` + (cursor ? '&cursor=' + encodeURIComponent(cursor) : ''));
        for (const r of page.data) {
          if (shown.has(r.id)) continue;
          shown.add(r.id);
          replies.append(this.comment(r));
        }
        cursor = page.next_cursor;
        if (cursor === null) c.reply_count = shown.size;
      } catch (e) {
        more.title = e.message;
      } finally {
        more.disabled = false;
        paint();
      }
    });
    el.addReply = (r) => { shown.add(r.id); c.reply_count++; replies.append(this.comment(r)); paint(); };
    el.dropReply = (id) => { if (shown.delete(id)) c.reply_count--; paint(); };
    paint();
    el.append(more);
    return el;
  }

  // comment renders one comment (top-level or reply).
  comment(c) {
    const el = $('comment-tpl').content.firstElementChild.cloneNode(true);
    el.dataset.commentId = String(c.id);
    el.comment = c;
    if (c.parent_id) el.classList.add('reply');
    const head = el.querySelector('header');
    const av = el.querySelector('.avatar');
    const author = el.querySelector('.author');
    const text = el.querySelector('.text');
    const note = el.querySelector('.note');
    if (c.deleted) {
      el.classList.add('deleted');
      av.hidden = true;
      author.textContent = 'Deleted comment';
      author.removeAttribute('href');
      text.textContent = 'This comment was deleted.';
      el.querySelector('footer').hidden = true;
      setTime(head.querySelector('time'), c.created_at);
      return el;
    }
    const href = '#/users/' + c.author.id;
    av.href = author.href = href;
    this.avatar(av, c.author);
    author.textContent = c.author.nick_name || 'user ' + c.author.id;
    setTime(head.querySelector('time'), c.created_at);
    if (c.reply_to && c.reply_to.user && c.reply_to.comment_id !== c.parent_id) {
      const to = el.querySelector('.to');
      to.hidden = false;
      to.textContent = '↪ ' + (c.reply_to.collapsed ? 'someone you ' + (c.reply_to.collapsed === 'muted_user' ? 'muted' : 'are in a block with')
        : c.reply_to.user.nick_name || 'user ' + c.reply_to.user.id);
    }
    text.textContent = c.text;
    if (c.hidden) {
      el.classList.add('hidden-comment');
      note.hidden = false;
      note.textContent = 'Hidden from your post: only you and its author see it.';
    }
    if (c.collapsed) {
      text.hidden = true;
      const show = document.createElement('button');
      show.type = 'button';
      show.className = 'link reveal';
      show.dataset.test = 'comment-reveal';
      show.textContent = { muted_user: 'Comment from someone you muted: show', blocked_user: 'Comment from someone you are in a block with: show' }[c.collapsed]
        || 'Comment with a muted word: show';
      show.addEventListener('click', () => { show.remove(); text.hidden = false; });
      text.before(show);
    }
    this.actions(el, c);
    return el;
  }

  actions(el, c) {
    const like = el.querySelector('.like');
    like.replaceChildren(icon('heart'), Object.assign(document.createElement('span'), { className: 'count' }));
    const count = like.querySelector('.count');
    const paint = () => {
      like.setAttribute('aria-pressed', String(c.liked_by_me));
      like.setAttribute('aria-label', c.liked_by_me ? 'Unlike' : 'Like');
      count.textContent = c.like_count ? String(c.like_count) : '';
    };
    paint();
    like.addEventListener('click', async () => {
      const was = c.liked_by_me;
      c.liked_by_me = !was;
      c.like_count += was ? -1 : 1;
      paint();
      like.disabled = true;
      try {
        await api(was ? 'DELETE' : 'PUT', `/v1/comments/${c.id}/like`);
      } catch (e) {
        c.liked_by_me = was;
        c.like_count += was ? 1 : -1;
        paint();
        like.title = e.message;
      } finally { like.disabled = false; }
    });
    const reply = el.querySelector('.reply-btn');
    reply.prepend(icon('reply'));
    reply.addEventListener('click', () => {
      this.answer({ id: c.id, thread: c.parent_id || c.id, name: c.author.nick_name || 'user ' + c.author.id });
    });
    const postAuthor = this.post.author.id === this.me.id;
    const del = el.querySelector('.delete');
    del.hidden = !(c.author.id === this.me.id || postAuthor);
    del.prepend(icon('trash'));
    del.addEventListener('click', async () => {
      del.disabled = true;
      try {
        await api('DELETE', `/v1/comments/${c.id}`);
        this.removed(el, c);
      } catch (e) {
        del.title = e.message;
        del.disabled = false;
      }
    });
    const hide = el.querySelector('.hide');
    hide.hidden = !postAuthor || c.author.id === this.me.id;
    hide.prepend(icon('eyeOff'));
    hide.querySelector('span').textContent = c.hidden ? 'Unhide' : 'Hide';
    hide.addEventListener('click', async () => {
      hide.disabled = true;
      try {
        await api(c.hidden ? 'DELETE' : 'PUT', `/v1/comments/${c.id}/hidden`);
        c.hidden = !c.hidden;
        this.redraw(el, c);
      } catch (e) {
        hide.title = e.message;
        hide.disabled = false;
      }
    });
  }

  // redraw renders comment c anew in place of el, keeping its thread's
  // replies as they are on the page.
  redraw(el, c) {
    const fresh = this.comment(c);
    if (!c.parent_id) {
      fresh.append(el.querySelector(':scope > .replies'), el.querySelector(':scope > .more'));
      Object.assign(fresh, { addReply: el.addReply, dropReply: el.dropReply });
    }
    el.replaceWith(fresh);
  }

  // removed updates the page after comment c (element el) was deleted.
  removed(el, c) {
    this.count(-1);
    if (c.parent_id) {
      const top = el.closest('[data-test=comment]:not(.reply)');
      el.remove();
      top?.dropReply?.(c.id);
      if (top?.comment.deleted && !top.querySelector('.reply')) top.remove(); // the placeholder goes with its last reply
      return;
    }
    if (c.reply_count > 0) { // kept as a placeholder for its replies
      this.redraw(el, { ...c, deleted: true, text: '', author: null });
      return;
    }
    el.remove();
    if (!$('comments').children.length && this.done) this.state('No comments yet.');
  }

  // count moves the post's comment count, here and wherever the page
  // shows the post (timelines).
  count(delta) {
    this.post.comment_count += delta;
    for (const el of document.querySelectorAll(`[data-post-id="${Number(this.id)}"]`)) {
      if (el.post && el.post !== this.post) el.post.comment_count = this.post.comment_count;
      const n = el.querySelector('[data-test=post-comments] .count');
      if (n) n.textContent = String(this.post.comment_count);
    }
  }

  // answer makes the form reply to target ({id, thread, name}), or write a
  // top-level comment (null).
  answer(target) {
    this.replyTo = target;
    $('replying').hidden = !target;
    if (target) {
      $('replying-name').textContent = target.name;
      $('comment-input').focus();
    }
  }

  async send() {
    const btn = $('comment-send');
    const input = $('comment-input');
    btn.disabled = true;
    $('comment-msg').textContent = '';
    try {
      const body = { text: input.value };
      if (this.replyTo) body.reply_to = this.replyTo.id;
      const c = await api('POST', `/v1/posts/${this.id}/comments`, body);
      input.value = '';
      this.count(1);
      if (c.parent_id) {
        const top = $('comments').querySelector(`[data-comment-id="${Number(c.parent_id)}"]:not(.reply)`);
        top?.addReply(c);
      } else {
        $('comments').prepend(this.thread({ ...c, replies: [] }));
        this.state('');
      }
      this.answer(null);
    } catch (e) {
      $('comment-msg').textContent = e.message;
      $('comment-msg').className = 'msg error';
    } finally {
      btn.disabled = false;
    }
  }
}
