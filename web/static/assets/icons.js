// icons.js: the page's icons, inline SVG kept in index.html's
// <template id="icons"> (so that they draw the same on every machine, with
// or without an emoji font). icon(name) returns a new copy, hidden from
// screen readers: the control that holds it carries the label.

export function icon(name) {
  const src = document.getElementById('icons').content.querySelector(`[data-icon="${name}"]`);
  const svg = src.cloneNode(true);
  svg.removeAttribute('data-icon');
  svg.setAttribute('class', 'icon-svg');
  svg.setAttribute('aria-hidden', 'true');
  svg.setAttribute('focusable', 'false');
  return svg;
}
