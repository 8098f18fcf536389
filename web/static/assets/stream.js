// stream.js: the live timeline, GET /v1/timeline/stream (text/event-stream).
// EventSource cannot send an Authorization header, so this reads the
// stream with fetch and parses the events itself. After a disconnect it
// reconnects with Last-Event-ID (the id of the last event seen): the server
// replays what was missed, with no gap and no duplicate.

import { token } from './api.js';

// openStream calls on.post(post), on.delete(id) and on.notification(group)
// for each event until
// stop() is called. on.ready() is called when the stream is subscribed (the
// server subscribes before it answers, so a timeline read after ready()
// misses nothing), or when it turns out there is no stream to have.
export function openStream(on) {
  let lastId = '';
  let ctrl = null;
  let stopped = false;
  let delay = 500;

  async function connect() {
    while (!stopped) {
      ctrl = new AbortController();
      const headers = { Authorization: 'Bearer ' + token.get(), Accept: 'text/event-stream' };
      if (lastId) headers['Last-Event-ID'] = lastId;
      try {
        const resp = await fetch('/v1/timeline/stream', { headers, signal: ctrl.signal, cache: 'no-store' });
        if (resp.status === 401 || resp.status === 404) { on.ready?.(); return; } // logged out, or no streams here
        if (resp.ok && resp.body) {
          delay = 500;
          on.ready?.();
          await read(resp.body);
        }
      } catch {
        // network error or abort: retry below unless stopped
      }
      if (stopped) return;
      await new Promise((r) => setTimeout(r, delay));
      delay = Math.min(delay * 2, 15000);
    }
  }

  // read parses the event stream: events are separated by a blank line;
  // lines are "field: value"; lines starting with ':' are comments.
  async function read(body) {
    const reader = body.pipeThrough(new TextDecoderStream()).getReader();
    let buf = '';
    let ev = { event: '', data: [], id: null };
    for (;;) {
      const { value, done } = await reader.read();
      if (done) return;
      buf += value;
      let nl;
      while ((nl = buf.search(/\r\n|\r|\n/)) >= 0) {
        const line = buf.slice(0, nl);
        buf = buf.slice(nl + (buf.startsWith('\r\n', nl) ? 2 : 1));
        if (line === '') {
          if (ev.id !== null) lastId = ev.id;
          if (ev.data.length) dispatch(ev.event || 'message', ev.data.join('\n'));
          ev = { event: '', data: [], id: null };
          continue;
        }
        if (line.startsWith(':')) continue;
        const i = line.indexOf(':');
        const field = i < 0 ? line : line.slice(0, i);
        let v = i < 0 ? '' : line.slice(i + 1);
        if (v.startsWith(' ')) v = v.slice(1);
        if (field === 'event') ev.event = v;
        else if (field === 'data') ev.data.push(v);
        else if (field === 'id' && !v.includes('\0')) ev.id = v;
      }
    }
  }

  function dispatch(event, data) {
    let v;
    try { v = JSON.parse(data); } catch { return; }
    if (event === 'post') on.post?.(v);
    else if (event === 'delete') on.delete?.(typeof v === 'object' && v ? v.id : v);
    else if (event === 'notification') on.notification?.(v);
    else if (event === 'marker') on.marker?.(v);
  }

  connect();
  return { stop() { stopped = true; ctrl?.abort(); } };
}
