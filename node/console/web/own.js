// The node's own Things: publish a TD (pasted or from a file) with the
// API's field-level validation errors, update, remove.
import { request } from './api.js';
import { h, clear, when, json, confirmButton, table } from './dom.js';
import { live, problemText } from './live.js';
import { thingLink } from './things.js';

const OWN = '/api/v1/things';

export function ownView(main, ctx) {
  const list = h('div', { id: 'own', 'aria-live': 'polite' });
  const ta = h('textarea', { name: 'td', id: 'publish-td', 'aria-describedby': 'publish-errors', spellcheck: 'false', placeholder: '{"@context": "https://www.w3.org/2022/wot/td/v1.1", "title": "…", …}' });
  const file = h('input', { type: 'file', accept: '.json,.jsonld,application/json,application/td+json' });
  file.addEventListener('change', async () => { if (file.files[0]) ta.value = await file.files[0].text(); });
  const backend = h('input', { name: 'backend', size: 30, placeholder: 'http://127.0.0.1:9000' });
  const errors = h('div', { id: 'publish-errors', role: 'alert' });
  const form = h('form', { id: 'publish-form', onsubmit: async ev => {
    ev.preventDefault();
    clear(errors);
    let td;
    try { td = JSON.parse(ta.value); } catch (e) { clear(errors, h('p', { class: 'error' }, 'Not JSON: ' + e.message)); return; }
    const body = { td };
    if (backend.value.trim()) body.backend = backend.value.trim();
    try {
      const r = await request('POST', OWN, { body });
      clear(errors, h('p', { class: 'valid' }, `✓ ${r.value.change || 'published'}: `, h('a', { href: thingLink(r.value.td) }, r.value.id), ` (version ${r.value.seq})`));
    } catch (e) {
      const ve = e.problem?.validationErrors || [];
      clear(errors, h('p', { class: 'error' }, '✗ ' + e.message), ve.length ? h('ul', { class: 'error' }, ve.map(v => h('li', {}, h('code', {}, v.field || '(document)'), ': ', v.description))) : null);
    }
  } }, h('label', { class: 'stack' }, 'Thing Description (JSON)', ta), h('div', { class: 'row' }, h('label', {}, 'or a file', file), h('label', {}, 'Backend URL (optional)', backend), h('button', { type: 'submit' }, 'Publish')), errors);
  main.append(h('h2', {}, 'This node\'s Things'), list, h('section', { class: 'card' }, h('h3', {}, 'Publish or update'), form));
  ctx.onLive(src => {
    if (src && src !== OWN) return;
    const ts = live.data[OWN];
    if (!ts) return;
    if (problemText(ts)) { clear(list, h('p', { class: 'error' }, problemText(ts))); return; }
    if (!ts.length) { clear(list, h('p', { class: 'muted' }, 'This node publishes no Thing.')); return; }
    clear(list, table( {}, h('thead', {}, h('tr', {}, ['Thing', 'Version', 'Backend', 'Changed', ''].map(t => h('th', { scope: 'col' }, t)))),
      h('tbody', {}, ts.map(t => h('tr', { 'data-id': t.id },
        h('td', {}, h('a', { href: thingLink(t.td, t.publisher) }, t.td?.title || t.id), h('div', { class: 'muted mono' }, t.id)),
        h('td', {}, String(t.seq)), h('td', {}, t.backend || '—'), h('td', {}, when(t.registration?.modified)),
        h('td', {},
          h('button', { type: 'button', class: 'secondary', onclick: () => { const d = { ...t.td }; delete d.proof; delete d['lmos:seq']; ta.value = json(d); backend.value = t.backend || ''; ta.focus(); } }, 'Edit'), ' ',
          confirmButton('Remove', async () => {
            try { await request('DELETE', OWN + '/' + encodeURIComponent(t.id)); } catch (e) { clear(errors, h('p', { class: 'error' }, '✗ ' + e.message)); }
          }, { 'data-remove': t.id, title: 'remove: a signed tombstone is announced' })))))));
  });
}
