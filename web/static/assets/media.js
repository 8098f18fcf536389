// media.js: photos. A post's media as a grid of up to 9 previews (lazy,
// the blurhash's average colour while they load) that open a viewer with
// the display size and the alt text; and the composer's attachments:
// picked, dropped or pasted files uploaded at once (POST /v1/media) with
// their progress, an alt text each, removable until the post is
// published. Alt text is set with textContent and the alt attribute only.

import { token, ApiError, api } from './api.js';

export const MAX_MEDIA = 9;

const B83 = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz#$%*+,-.:;=?@[]^_{|}~';

// averageColour is the colour a BlurHash starts with (its DC component,
// characters 2-5 in base 83), as CSS; '' for a malformed hash.
export function averageColour(hash) {
  if (typeof hash !== 'string' || hash.length < 6) return '';
  let v = 0;
  for (const c of hash.slice(2, 6)) {
    const d = B83.indexOf(c);
    if (d < 0) return '';
    v = v * 83 + d;
  }
  return `rgb(${v >> 16}, ${(v >> 8) & 255}, ${v & 255})`;
}

// ---- the viewer

const viewer = document.getElementById('viewer');
const viewerImg = document.getElementById('viewer-img');
const viewerAlt = document.getElementById('viewer-alt');
let shown = [];
let at = 0;

function paintViewer() {
  const m = shown[at];
  viewerImg.src = m.url;
  viewerImg.alt = m.alt || '';
  viewerImg.width = m.width;
  viewerImg.height = m.height;
  viewerImg.style.backgroundColor = averageColour(m.blurhash);
  viewerAlt.textContent = m.alt || '';
  viewerAlt.hidden = !m.alt;
  document.getElementById('viewer-prev').hidden = at === 0;
  document.getElementById('viewer-next').hidden = at === shown.length - 1;
}

export function openViewer(media, i) {
  shown = media;
  at = i;
  paintViewer();
  if (!viewer.open) viewer.showModal();
}

document.getElementById('viewer-close').addEventListener('click', () => viewer.close());
document.getElementById('viewer-prev').addEventListener('click', () => { if (at > 0) { at--; paintViewer(); } });
document.getElementById('viewer-next').addEventListener('click', () => { if (at < shown.length - 1) { at++; paintViewer(); } });
viewer.addEventListener('click', (ev) => { if (ev.target === viewer) viewer.close(); }); // the backdrop
viewer.addEventListener('keydown', (ev) => {
  if (ev.key === 'ArrowLeft') document.getElementById('viewer-prev').click();
  if (ev.key === 'ArrowRight') document.getElementById('viewer-next').click();
});
viewer.addEventListener('close', () => { viewerImg.removeAttribute('src'); });

// renderMedia fills el (a post's grid) with media's previews.
export function renderMedia(el, media) {
  el.replaceChildren();
  el.hidden = !media || media.length === 0;
  if (el.hidden) return;
  const list = media.slice(0, MAX_MEDIA);
  el.dataset.count = String(list.length);
  list.forEach((m, i) => {
    const b = document.createElement('button');
    b.type = 'button';
    b.className = 'thumb';
    b.dataset.test = 'media-thumb';
    b.setAttribute('aria-label', m.alt ? 'Open image: ' + m.alt : 'Open image ' + (i + 1));
    b.style.backgroundColor = averageColour(m.blurhash);
    const img = document.createElement('img');
    img.loading = 'lazy';
    img.decoding = 'async';
    img.alt = m.alt || '';
    img.width = m.width;
    img.height = m.height;
    img.src = m.preview_url;
    img.addEventListener('load', () => b.classList.add('loaded'));
    b.append(img);
    b.addEventListener('click', () => openViewer(list, i));
    el.append(b);
  });
}

// ---- the composer's attachments

// uploadFile sends file to POST /v1/media, reporting progress (0..1), and
// resolves to the upload.
function uploadFile(file, progress) {
  return new Promise((resolve, reject) => {
    const xhr = new XMLHttpRequest();
    xhr.open('POST', '/v1/media');
    const t = token.get();
    if (t) xhr.setRequestHeader('Authorization', 'Bearer ' + t);
    xhr.upload.addEventListener('progress', (ev) => { if (ev.lengthComputable) progress(ev.loaded / ev.total); });
    xhr.addEventListener('load', () => {
      let data = null;
      try { data = JSON.parse(xhr.responseText); } catch { /* not JSON */ }
      if (xhr.status === 201 && data) { resolve(data); return; }
      const e = (data && data.error) || {};
      reject(new ApiError(xhr.status, e.code || 'internal', e.message || `HTTP ${xhr.status}`));
    });
    xhr.addEventListener('error', () => reject(new ApiError(0, 'network', 'The upload failed: the server cannot be reached.')));
    const form = new FormData();
    form.append('file', file);
    xhr.send(form);
  });
}

// Attachments is the list of a composer's pictures.
export class Attachments {
  constructor({ list, input, drop, msg }) {
    Object.assign(this, { list, msg });
    this.items = [];
    input.addEventListener('change', () => { this.add([...input.files]); input.value = ''; });
    drop.addEventListener('dragover', (ev) => { if (ev.dataTransfer.types.includes('Files')) { ev.preventDefault(); drop.classList.add('dropping'); } });
    drop.addEventListener('dragleave', () => drop.classList.remove('dropping'));
    drop.addEventListener('drop', (ev) => {
      drop.classList.remove('dropping');
      if (!ev.dataTransfer.files.length) return;
      ev.preventDefault();
      this.add([...ev.dataTransfer.files]);
    });
    drop.addEventListener('paste', (ev) => {
      const files = [...(ev.clipboardData?.files || [])].filter((f) => f.type.startsWith('image/'));
      if (files.length) { ev.preventDefault(); this.add(files); }
    });
  }

  add(files) {
    for (const file of files) {
      if (this.items.length >= MAX_MEDIA) { this.msg.textContent = `A post shows at most ${MAX_MEDIA} pictures.`; this.msg.className = 'msg error'; return; }
      const el = document.getElementById('attachment-tpl').content.firstElementChild.cloneNode(true);
      const item = { el, file, media: null, failed: null };
      const url = URL.createObjectURL(file);
      const img = el.querySelector('img');
      img.src = url;
      img.addEventListener('load', () => URL.revokeObjectURL(url), { once: true });
      const bar = el.querySelector('progress');
      const state = el.querySelector('.attachment-state');
      el.querySelector('.remove').addEventListener('click', () => this.remove(item));
      item.done = uploadFile(file, (f) => { bar.value = f; }).then((m) => {
        item.media = m;
        bar.hidden = true;
        el.dataset.mediaId = String(m.id);
        el.classList.add('uploaded');
        img.width = m.width;
        img.height = m.height;
      }, (e) => {
        item.failed = e;
        bar.hidden = true;
        state.textContent = e.message;
        el.classList.add('failed');
      });
      this.items.push(item);
      this.list.append(el);
    }
    this.list.hidden = this.items.length === 0;
  }

  remove(item) {
    this.items = this.items.filter((x) => x !== item);
    item.el.remove();
    this.list.hidden = this.items.length === 0;
    // An upload no post shows goes after a while anyway; say so at once.
    item.done.then(() => { if (item.media) api('DELETE', `/v1/media/${item.media.id}`).catch(() => {}); });
  }

  // ids waits for the uploads, sets their alt texts, and returns their
  // ids in order; it throws when one failed.
  async ids() {
    await Promise.all(this.items.map((x) => x.done));
    const failed = this.items.find((x) => x.failed);
    if (failed) throw new Error(`${failed.file.name}: ${failed.failed.message} Remove it to publish.`);
    const out = [];
    for (const x of this.items) {
      const alt = x.el.querySelector('.alt').value.trim();
      if (alt !== (x.media.alt || '')) x.media = await api('PATCH', `/v1/media/${x.media.id}`, { alt });
      out.push(x.media.id);
    }
    return out;
  }

  clear() {
    this.items = [];
    this.list.replaceChildren();
    this.list.hidden = true;
  }
}
