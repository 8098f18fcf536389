// markers.js: where the reader stopped, kept on the server (GET and POST
// /v1/markers), so that every device opens the timeline there. The home
// timeline's first page is read around the timeline marker; the newest
// post the reader has scrolled to moves the marker forward (never back:
// a marker another device moved further stays, the server answers 409).

import { api } from './api.js';

const SAVE_AFTER = 1500; // ms of calm scrolling before the marker is saved

export class Markers {
  constructor() {
    this.lastRead = null; // the timeline marker's post id, as known here
    this.prev = null;     // the around page's prev_cursor: newer posts start there
    this.timer = 0;
  }

  // load reads the markers; it never fails (a page without them starts
  // at the top).
  async load() {
    const ms = await api('GET', '/v1/markers').catch(() => null);
    this.lastRead = ms?.timeline ? Number(ms.timeline.last_read_id) : null;
    this.prev = null;
  }

  // firstPage returns the home timeline's first page: around the marker
  // when there is one (null: read from the top).
  async firstPage(limit) {
    if (this.lastRead === null) return null;
    try {
      const page = await api('GET', `/v1/timeline?limit=${limit}&around=${this.lastRead}`);
      this.prev = page.prev_cursor;
      return page;
    } catch (e) {
      // The post is gone, or too far back: read from the top. Any other
      // error (the server busy) is the page's to show, with its Retry.
      if (e.status === 400 || e.status === 404) return null;
      throw e;
    }
  }

  // newer reads every post before the around page (newest last read), a
  // page of 100 at a time, at most 10 pages.
  async newer() {
    const posts = [];
    for (let i = 0; this.prev && i < 10; i++) {
      const page = await api('GET', '/v1/timeline?limit=100&before=' + encodeURIComponent(this.prev));
      posts.push(...page.data);
      if (!page.data.length) break;
      this.prev = page.prev_cursor;
    }
    return posts;
  }

  // seen notes that the reader has scrolled to post id; the marker moves
  // there once scrolling calms down, if it is newer.
  seen(id) {
    if (id === this.lastRead) return;
    clearTimeout(this.timer);
    this.timer = setTimeout(() => this.save(id), SAVE_AFTER);
  }

  async save(id) {
    try {
      const ms = await api('POST', '/v1/markers', { timeline: { last_read_id: id } });
      this.lastRead = Number(ms.timeline.last_read_id);
    } catch {
      // 409: the marker is at a newer post already (this device is behind).
    }
  }

  // event takes a marker event of the live stream (another device).
  event(ms) {
    if (ms?.timeline) this.lastRead = Number(ms.timeline.last_read_id);
  }
}

// topPost returns the first post of listEl whose top is below the top bar:
// the newest post the reader has on screen whole.
export function topPost(listEl) {
  for (const el of listEl.children) {
    if (el.getBoundingClientRect().top >= 48) return el.post || null;
  }
  return null;
}
