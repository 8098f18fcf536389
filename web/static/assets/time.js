// time.js: how the page shows a time, one form everywhere (posts,
// comments, notifications): relative ("now", "5m", "2h", then the date),
// with the full local time on hover.

const fmtDate = new Intl.DateTimeFormat(undefined, { dateStyle: 'medium' });
const fmtFull = new Intl.DateTimeFormat(undefined, { dateStyle: 'full', timeStyle: 'medium' });

// ago is the relative form of an RFC 3339 time.
export function ago(iso) {
  const s = (Date.now() - Date.parse(iso)) / 1000;
  if (s < 60) return 'now';
  if (s < 3600) return Math.floor(s / 60) + 'm';
  if (s < 86400) return Math.floor(s / 3600) + 'h';
  return fmtDate.format(new Date(iso));
}

// setTime shows iso in the <time> element el.
export function setTime(el, iso) {
  el.dateTime = iso;
  el.textContent = ago(iso);
  el.title = fmtFull.format(new Date(iso));
}
