// The directory (search, live over /events) and the view of one Thing:
// its TD, its proof verified here, and forms generated from its
// DataSchemas to call it over the node's WoT HTTP binding.
import { get, request, subscribe, ApiError } from './api.js';
import { h, clear, short, when, json } from './dom.js';
import { live } from './live.js';
import { verifyTD } from './verify.js';
import { field } from './schema.js';

const FILTERS = [['q', 'Text', 'rain tomorrow'], ['capability', 'Capability', 'weather@^1.2'], ['type', 'Type', 'agent, tool, …'], ['vendor', 'Vendor', ''], ['publisher', 'Publisher', '…zRfVBq6e'], ['group', 'Group', '']];

// trustMarks returns the trust mark of a publisher (peer ID) as GET
// /api/v1/trust and this node's peer ID give it: own, trusted, denied or
// unknown; null when the node has no trust list.
async function trustMarks(signal) {
  let list;
  try { list = await get('/api/v1/trust', { signal }); } catch { return null; }
  const self = live.data['/api/v1/node']?.peerID;
  const level = new Map((list?.entries || []).map(e => [e.publisher, e.level]));
  return peerID => {
    if (peerID && peerID === self) return 'own';
    const l = level.get(peerID);
    return l === 'deny' ? 'denied' : l ? 'trusted' : 'unknown';
  };
}

// TRUST words a trust mark for a person: what the badge says, and what it
// means (its title).
const TRUST = {
  own: ['published here', 'this node published it'],
  trusted: ['trusted publisher', 'your trust list allows or prefers its publisher'],
  denied: ['denied publisher', 'your trust list denies its publisher'],
  unknown: ['not in your trust list', 'its publisher is neither allowed, preferred nor denied by your trust list; its signature is checked all the same'],
};

// orgBadge shows the organisation a TD claims (lmos:organization) as the
// node checked it (LMOS-Organization: verified, pending or unverified):
// the domain only when verified, the claim marked unverified otherwise.
function orgBadge(td, status, reason) {
  const claim = td['lmos:organization'];
  if (typeof claim !== 'string' || !status || status === 'none') return null;
  if (status === 'verified') {
    const domain = decodeURIComponent(claim.split(':')[2] || '').replace(/:\d+$/, '');
    return h('span', { class: 'badge valid org', title: `organisation ${claim}: its DID document lists the publisher's key` }, domain);
  }
  return h('span', { class: 'badge ' + (status === 'pending' ? 'muted' : 'invalid') + ' org', title: reason || '' }, `unverified organisation ${claim} (${status})`);
}

function trustBadge(mark) {
  if (!mark) return null;
  const cls = { own: 'valid', trusted: 'valid', denied: 'invalid', unknown: 'muted' }[mark] || 'muted';
  const [words, means] = TRUST[mark] || [mark, ''];
  return h('span', { class: 'badge ' + cls, title: means }, words);
}

// onlineFrom reads the online state of LMOS-Registration
// ("…, online, lastSeen=…" or "online=?0"); undefined when absent.
function onlineFrom(reg) {
  if (!reg) return {};
  const m = /(?:^|,\s*)online(=\?([01]))?(?=\s*(,|$))/.exec(reg);
  const seen = /lastSeen="([^"]*)"/.exec(reg);
  return { online: m ? m[2] !== '0' : undefined, lastSeen: seen?.[1] };
}

export function thingLink(td, peerID) {
  return '#/thing/' + encodeURIComponent(td.id) + (peerID ? '?publisher=' + encodeURIComponent(peerID) : '');
}

function types(td) { return [].concat(td['@type'] || []).map(t => String(t).replace(/^lmos:/, '')); }

export function verdictBadge(v) {
  if (!v) return h('span', { class: 'badge pending' }, 'verifying…');
  return v.valid
    ? h('span', { class: 'badge valid', title: `signed by ${v.signer} at ${v.created}` }, '✓ signature valid')
    : h('span', { class: 'badge invalid', title: v.reason }, '✗ signature invalid');
}

export function thingsView(main, ctx, params) {
  const form = h('form', { class: 'inline', role: 'search', 'aria-label': 'Search the directory' },
    FILTERS.map(([k, t, ph]) => h('label', {}, t, h('input', { name: k, value: params.get(k) || '', type: 'search', placeholder: ph }))),
    h('label', { class: 'check' }, h('input', { type: 'checkbox', name: 'online', checked: params.get('online') === 'true' }), 'online only'),
    h('button', { type: 'submit' }, 'Search'));
  const status = h('p', { class: 'muted', 'aria-live': 'polite' });
  const list = h('ul', { class: 'things', id: 'things' });
  main.append(h('h2', {}, 'Things of the federation'), h('section', { class: 'card' }, form), status, list);
  form.addEventListener('submit', ev => {
    ev.preventDefault();
    const q = new URLSearchParams();
    for (const [k] of FILTERS) if (form.elements[k].value.trim()) q.set(k, form.elements[k].value.trim());
    if (form.elements.online.checked) q.set('online', 'true');
    location.hash = '#/things' + (q.size ? '?' + q : '');
  });
  const query = new URLSearchParams();
  for (const [k] of FILTERS) if (params.get(k)) query.set(k, params.get(k));
  if (params.get('online') === 'true') query.set('online', 'true');
  // Pages: the first limit Things; "more" asks for a larger page.
  const limit = Math.min(Math.max(Number(params.get('limit')) || 100, 1), 1000);
  query.set('limit', String(limit));
  const more = h('p', {});
  main.append(more);
  let timer = null, running = false, again = false;
  const load = async () => {
    if (running) { again = true; return; }
    running = true;
    try {
      const [res, mark] = await Promise.all([request('GET', '/things?' + query, { signal: ctx.signal }), trustMarks(ctx.signal)]);
      const tds = res.value;
      // LMOS-Online: one true/false per Thing of the page, in order.
      const onl = (res.headers.get('LMOS-Online') || '').split(',').map(x => x.trim()).filter(Boolean);
      // LMOS-Organization and LMOS-Trust: likewise one per Thing.
      const orgs = (res.headers.get('LMOS-Organization') || '').split(',').map(x => x.trim()).filter(Boolean);
      const marks = (res.headers.get('LMOS-Trust') || '').split(',').map(x => x.trim()).filter(Boolean);
      const filtered = [...query.keys()].some(k => k !== 'limit');
      status.textContent = `${tds.length} Thing${tds.length === 1 ? '' : 's'}` + (filtered ? ' match' : '') + ` · updated ${new Date().toLocaleTimeString()}`;
      const hasNext = /rel="next"/.test(res.headers.get('Link') || '');
      const next = new URLSearchParams(params); next.set('limit', String(Math.min(limit + 100, 1000)));
      clear(more, hasNext && limit < 1000 ? h('a', { href: '#/things?' + next, id: 'more' }, 'Show more') : null);
      const items = await Promise.all(tds.map(async (td, i) => ({ td, v: await verifyTD(td), on: onl[i] === undefined ? undefined : onl[i] === 'true', org: orgs[i], tm: marks[i] })));
      clear(list, items.map(({ td, v, on, org, tm }) => h('li', { 'data-id': td.id },
        h('a', { href: thingLink(td, v.peerID) }, h('strong', {}, td.title || td.id)), ' ',
        types(td).map(t => h('span', { class: 'badge' }, t)),
        verdictBadge(v),
        online(on),
        orgBadge(td, v.valid ? org : 'unverified', v.valid ? '' : 'the TD\'s proof does not verify'),
        trustBadge(tm || mark?.(v.peerID)),
        h('div', { class: 'muted' }, h('code', {}, td.id), ' · publisher ', h('code', { title: v.peerID }, v.peerID ? '…' + v.peerID.slice(-8) : '?'),
          td['lmos:capabilities'] ? ' · ' + td['lmos:capabilities'].map(c => c['lmos:id'] + (c['lmos:version'] ? '@' + c['lmos:version'] : '')).join(', ') : ''),
        td.description ? h('div', {}, td.description) : null)));
    } catch (e) {
      if (!ctx.signal.aborted) status.textContent = 'Cannot list: ' + e.message;
    } finally {
      running = false;
      if (again) { again = false; load(); }
    }
  };
  load();
  subscribe('/events', () => { clearTimeout(timer); timer = setTimeout(load, 100); }, {
    signal: ctx.signal, resume: true,
    onState: s => { if (s === 'open' || s === 'reset') load(); },
  });
}

// online shows the publisher's liveness when the directory reports it.
function online(o, lastSeen) {
  if (o === undefined) return null;
  return h('span', { class: 'badge ' + (o ? 'online' : 'offline'), title: lastSeen ? 'last seen ' + when(lastSeen) : '' }, o ? 'online' : 'offline');
}

export function thingView(main, ctx, id, params) {
  const publisher = params.get('publisher') || '';
  const pq = publisher ? '?publisher=' + encodeURIComponent(publisher) : '';
  const base = '/things/' + encodeURIComponent(id);
  const head = h('div', {}, h('h2', {}, id));
  const proofBox = h('section', { class: 'card', id: 'proof', 'aria-live': 'polite' }, 'Verifying…');
  const body = h('div', {});
  main.append(head, proofBox, body);
  let shownSeq = null;
  const load = async () => {
    let td, res;
    try {
      res = await request('GET', base + pq, { signal: ctx.signal, accept: 'application/td+json' });
      td = res.value;
    } catch (e) {
      if (!ctx.signal.aborted) clear(body, h('p', { class: 'error' }, e instanceof ApiError && e.status === 404 ? 'This Thing is not (or no longer) in the directory.' : e.message));
      return;
    }
    if (td && td.status === 300) { clear(body, candidates(td)); return; }
    const v = await verifyTD(td);
    const reg = onlineFrom(res.headers.get('LMOS-Registration'));
    const trust = res.headers.get('LMOS-Trust');
    const org = v.valid ? res.headers.get('LMOS-Organization') : 'unverified';
    const orgReason = v.valid ? res.headers.get('LMOS-Organization-Reason') : 'the TD\'s proof does not verify';
    clear(head, h('h2', {}, td.title || td.id), h('p', {}, types(td).map(t => h('span', { class: 'badge' }, t)), verdictBadge(v), online(reg.online, reg.lastSeen), orgBadge(td, org, orgReason), trustBadge(trust)), td.description ? h('p', {}, td.description) : null);
    clear(proofBox, h('h3', {}, 'Proof'), h('p', { id: 'proof-verdict', class: v.valid ? 'valid' : 'invalid' },
      v.valid ? `Valid: signed by ${v.peerID} on ${when(v.created)}; this page checked the signature itself (eddsa-jcs-2022).`
        : `Invalid: ${v.reason}.` + (v.peerID ? ` The proof names ${v.peerID} as signer, created ${when(v.created)}.` : '')),
    h('dl', { class: 'kv' }, h('dt', {}, 'Signer'), h('dd', {}, h('code', {}, v.signer || '—')), h('dt', {}, 'Peer ID'), h('dd', {}, h('code', {}, v.peerID || '—')),
      h('dt', {}, 'Signed'), h('dd', {}, when(v.created) || '—'), h('dt', {}, 'Version (lmos:seq)'), h('dd', {}, String(td['lmos:seq'] ?? '—')),
      reg.lastSeen ? [h('dt', {}, 'Publisher last seen'), h('dd', {}, when(reg.lastSeen))] : null,
      orgBadge(td, org, orgReason) ? [h('dt', {}, 'Organisation'), h('dd', { id: 'organization' }, orgBadge(td, org, orgReason), org !== 'verified' && orgReason ? ' ' + orgReason : '')] : null,
      trust ? [h('dt', {}, 'Trust'), h('dd', { id: 'trust-mark' }, (TRUST[trust] || [trust])[0], ' ', trust !== 'own' && v.peerID ? trustButtons(v.peerID, trust, load) : null)] : null));
    if (shownSeq === td['lmos:seq'] && body.childElementCount) return; // keep open forms and streams
    shownSeq = td['lmos:seq'];
    const pin = publisher || v.peerID;
    const q = pin ? '?publisher=' + encodeURIComponent(pin) : '';
    clear(body, conversation(td, base, q, ctx), capabilities(td), affordances(td, base, q, ctx),
      h('details', { class: 'card' }, h('summary', {}, 'TD (pretty)'), pretty(td)),
      h('details', { class: 'card' }, h('summary', {}, 'TD (raw, as signed)'), h('pre', { id: 'td-raw' }, json(td))));
  };
  load();
  subscribe('/events', ev => {
    try { const d = JSON.parse(ev.data); if (d.id === id) load(); } catch { /* a comment */ }
  }, { signal: ctx.signal });
}

// trustButtons put the publisher on the node's trust list, or off it.
function trustButtons(peerID, mark, reload) {
  const msg = h('span', { role: 'status' });
  const set = level => async () => {
    try {
      if (level) await request('PUT', '/api/v1/trust/' + encodeURIComponent(peerID), { body: { level } });
      else await request('DELETE', '/api/v1/trust/' + encodeURIComponent(peerID));
      reload();
    } catch (e) { msg.textContent = '✗ ' + e.message; }
  };
  return h('span', { class: 'row', style: 'display:inline-flex' },
    h('button', { type: 'button', class: 'secondary', 'data-trust': 'allow', onclick: set('allow') }, 'Allow'),
    h('button', { type: 'button', class: 'secondary', 'data-trust': 'prefer', onclick: set('prefer') }, 'Prefer'),
    h('button', { type: 'button', class: 'danger', 'data-trust': 'deny', onclick: set('deny'), title: 'drop every record of this publisher' }, 'Deny'),
    mark !== 'unknown' ? h('button', { type: 'button', class: 'secondary', 'data-trust': 'none', onclick: set(null) }, 'Forget') : null, msg);
}

function candidates(p) {
  return h('section', { class: 'card' }, h('p', {}, 'Several publishers have this id; choose one:'),
    h('ul', {}, (p.candidates || []).map(c => h('li', {}, h('a', { href: '#/thing/' + encodeURIComponent(p.instance?.replace(/^\/things\//, '') || '') + '?publisher=' + encodeURIComponent(c.publisher) }, `${c.title || ''} by ${c.publisher}`)))));
}

function capabilities(td) {
  const caps = td['lmos:capabilities'];
  if (!Array.isArray(caps) || !caps.length) return null;
  return h('section', { class: 'card' }, h('h3', {}, 'Capabilities'), h('ul', {}, caps.map(c => h('li', {},
    h('strong', {}, c['lmos:id']), c['lmos:version'] ? ' ' + c['lmos:version'] : '', c['lmos:description'] ? ' — ' + c['lmos:description'] : ''))));
}

function pretty(td) {
  const rows = [['id', td.id], ['title', td.title], ['description', td.description], ['@type', [].concat(td['@type'] || []).join(', ')],
    ['security', [].concat(td.security || []).join(', ')], ['vendor', td['lmos:metadata']?.['lmos:vendor']?.['lmos:name']],
    ['groups', (td['lmos:groups'] || []).join(', ')], ['properties', Object.keys(td.properties || {}).join(', ')],
    ['actions', Object.keys(td.actions || {}).join(', ')], ['events', Object.keys(td.events || {}).join(', ')]];
  return h('dl', { class: 'kv' }, rows.filter(r => r[1]).map(([k, v]) => [h('dt', {}, k), h('dd', {}, String(v))]));
}

function out(box, text, cls) { box.prepend(h('div', { class: cls || '' }, `${new Date().toLocaleTimeString()} ${text}`)); }

function affordances(td, base, q, ctx) {
  const sec = h('div', {});
  const props = Object.entries(td.properties || {});
  if (props.length) sec.append(h('section', { class: 'card' }, h('h3', {}, 'Properties'), props.map(([n, s]) => propertyForm(n, s, base, q, ctx))));
  const acts = Object.entries(td.actions || {});
  if (acts.length) sec.append(h('section', { class: 'card' }, h('h3', {}, 'Actions'), acts.map(([n, s]) => actionForm(td, n, s, base, q, ctx))));
  const evs = Object.entries(td.events || {});
  if (evs.length) sec.append(h('section', { class: 'card' }, h('h3', {}, 'Events'), evs.map(([n, s]) => eventBox(n, s, base, q, ctx))));
  return sec;
}

function propertyForm(name, s, base, q, ctx) {
  const url = `${base}/properties/${encodeURIComponent(name)}${q}`;
  const log = h('div', { class: 'log', 'data-log': 'property-' + name });
  const f = s.readOnly ? null : field(s, name);
  let obs = null;
  const read = async () => {
    try { out(log, '= ' + JSON.stringify((await request('GET', url)).value)); } catch (e) { out(log, '✗ ' + e.message, 'error'); }
  };
  const write = async ev => {
    ev.preventDefault();
    try { await request('PUT', url, { body: JSON.stringify(f.value()) }); out(log, '✓ written'); } catch (e) { out(log, '✗ ' + e.message, 'error'); }
  };
  const observe = () => {
    if (obs) { obs.abort(); obs = null; btn.textContent = 'Observe'; return; }
    obs = new AbortController();
    ctx.signal.addEventListener('abort', () => obs?.abort());
    btn.textContent = 'Stop observing';
    subscribe(`${base}/properties/${encodeURIComponent(name)}/observe${q}`, ev => out(log, (ev.type === 'error' ? '✗ ' : '↻ ') + ev.data, ev.type === 'error' ? 'error' : ''), {
      signal: obs.signal, onState: st => { if (st === 'open') out(log, 'observing'); else if (st instanceof Error) out(log, '✗ ' + st.message, 'error'); },
    });
  };
  const btn = s.observable ? h('button', { type: 'button', class: 'secondary observe', onclick: observe }, 'Observe') : null;
  return h('fieldset', { 'data-property': name }, h('legend', {}, name + (s.readOnly ? ' (read-only)' : '') + (s.writeOnly ? ' (write-only)' : '')),
    s.description ? h('p', { class: 'muted' }, s.description) : null,
    h('form', { class: 'inline', onsubmit: write }, s.writeOnly ? null : h('button', { type: 'button', class: 'secondary read', onclick: read }, 'Read'), f ? [f.el, h('button', { type: 'submit' }, 'Write')] : null, btn),
    log);
}

function isAgent(td) { return types(td).includes('Agent'); }

function actionForm(td, name, s, base, q, ctx) {
  const url = `${base}/actions/${encodeURIComponent(name)}${q}`;
  const f = s.input ? field(s.input, 'input') : null;
  const log = h('div', { class: 'log', 'data-log': 'action-' + name, 'aria-live': 'polite' });
  const stream = h('input', { type: 'checkbox', name: 'stream', checked: isAgent(td) && s.input?.type === 'string' });
  const invoke = async ev => {
    ev.preventDefault();
    let input;
    try { input = f ? f.value() : undefined; } catch (e) { out(log, '✗ ' + e.message, 'error'); return; }
    if (stream.checked) { streamInvoke(url, input, log, ctx); return; }
    out(log, '→ ' + (input === undefined ? 'invoked' : JSON.stringify(input)), 'me');
    try {
      const r = await request('POST', url, input === undefined ? {} : { body: JSON.stringify(input) });
      if (r.status === 201) { progress(r, log, ctx); return; }
      out(log, r.status === 204 ? '✓ done (no output)' : '✓ ' + JSON.stringify(r.value), 'result');
    } catch (e) { out(log, '✗ ' + e.message, 'error'); }
  };
  return h('fieldset', { 'data-action': name }, h('legend', {}, name + (s.safe ? ' (safe)' : '')),
    s.description ? h('p', { class: 'muted' }, s.description) : null,
    h('form', { class: 'inline', onsubmit: invoke }, f ? f.el : null,
      h('label', { class: 'check', title: 'read the answer as a stream of chunks (an agent\'s tokens)' }, stream, 'stream'),
      h('button', { type: 'submit' }, 'Invoke')),
    log);
}

// progress polls a long-running invocation until it ends.
async function progress(r, log, ctx) {
  const href = r.headers.get('Location') || r.value?.href;
  out(log, `… ${r.value?.status || 'running'}` + (r.value?.output !== undefined ? ' ' + JSON.stringify(r.value.output) : ''));
  const cancel = h('button', { type: 'button', class: 'danger', onclick: async () => { try { await request('DELETE', href); } catch (e) { out(log, '✗ ' + e.message, 'error'); } } }, 'Cancel');
  log.prepend(cancel);
  let last = '';
  while (!ctx.signal.aborted) {
    await new Promise(res => setTimeout(res, 700));
    let st;
    try { st = (await request('GET', href)).value; } catch (e) { out(log, '✗ ' + e.message, 'error'); break; }
    const line = `${st.status}` + (st.output !== undefined ? ' ' + JSON.stringify(st.output) : '') + (st.error ? ' ' + (st.error.detail || st.error.title) : '');
    if (line !== last) { out(log, (st.status === 'completed' ? '✓ ' : st.status === 'failed' ? '✗ ' : '… ') + line, st.status === 'completed' ? 'result' : ''); last = line; }
    if (['completed', 'failed', 'cancelled'].includes(st.status)) break;
  }
  cancel.remove();
}

// streamInvoke runs one turn of a streaming session: the input as one
// NDJSON line, the answer as server-sent chunks, written into the element
// line as they arrive; done is called at the end.
function streamInvoke(url, input, log, ctx, line, done) {
  if (!line) {
    out(log, '→ ' + JSON.stringify(input), 'me');
    line = h('div', { class: 'result' });
    log.prepend(line);
  }
  const text = h('span', {});
  line.append(text);
  let acc = '', ended = false;
  const end = () => { if (!ended) { ended = true; done?.(); } };
  subscribe(url, ev => {
    if (ev.type === 'completed') { line.append(h('span', { class: 'muted' }, ' ✓')); end(); return; }
    if (ev.type === 'failed' || ev.type === 'error') { line.append(h('div', { class: 'error' }, '✗ ' + problemDetail(ev.data))); end(); return; }
    let chunk = ev.data;
    try { const v = JSON.parse(ev.data); chunk = typeof v === 'string' ? v : JSON.stringify(v); } catch { /* raw */ }
    acc += chunk;
    text.textContent = acc;
  }, {
    signal: ctx.signal, method: 'POST', body: (input === undefined ? 'null' : JSON.stringify(input)) + '\n', type: 'application/x-ndjson',
    onState: st => { if (st instanceof Error) { line.append(h('div', { class: 'error' }, '✗ ' + st.message)); end(); } else if (st === 'closed') end(); },
  });
}

function problemDetail(data) {
  try { const p = JSON.parse(data); return p.detail || p.title || data; } catch { return data; }
}

// conversation is the chat with an agent: each turn one streaming
// session of the chosen action, the answer shown as it streams.
function conversation(td, base, q, ctx) {
  const acts = Object.entries(td.actions || {}).filter(([, a]) => a.input?.type === 'string');
  if (!isAgent(td) || !acts.length) return null;
  const log = h('div', { class: 'log chat', id: 'chat', 'aria-live': 'polite' });
  const pick = h('select', { name: 'action', 'aria-label': 'action' }, acts.map(([n]) => h('option', { value: n }, n)));
  const input = h('input', { name: 'say', size: 40, required: true, 'aria-label': 'message', autocomplete: 'off' });
  const send = h('button', { type: 'submit' }, 'Send');
  const form = h('form', { class: 'inline', id: 'chat-form', onsubmit: ev => {
    ev.preventDefault();
    const said = input.value;
    input.value = '';
    log.append(h('div', { class: 'me' }, h('strong', {}, 'you: '), said));
    const line = h('div', { class: 'agent' }, h('strong', {}, (td.title || 'agent') + ': '));
    log.append(line);
    log.scrollTop = log.scrollHeight;
    send.disabled = true;
    streamInvoke(`${base}/actions/${encodeURIComponent(pick.value)}${q}`, said, log, ctx, line, () => { send.disabled = false; input.focus(); });
  } }, acts.length > 1 ? pick : null, input, send);
  return h('section', { class: 'card' }, h('h3', {}, 'Conversation'), log, form);
}

function eventBox(name, s, base, q, ctx) {
  const url = `${base}/events/${encodeURIComponent(name)}${q}`;
  const log = h('div', { class: 'log', 'data-log': 'event-' + name, 'aria-live': 'polite' });
  let sub = null;
  const toggle = () => {
    if (sub) { sub.abort(); sub = null; btn.textContent = 'Subscribe'; out(log, 'unsubscribed'); return; }
    sub = new AbortController();
    ctx.signal.addEventListener('abort', () => sub?.abort());
    btn.textContent = 'Unsubscribe';
    subscribe(url, ev => out(log, (ev.type === 'error' ? '✗ ' : '• ') + ev.data, ev.type === 'error' ? 'error' : 'event'), {
      signal: sub.signal, onState: st => { if (st === 'open') out(log, 'subscribed'); else if (st instanceof Error) out(log, '✗ ' + st.message, 'error'); },
    });
  };
  const btn = h('button', { type: 'button', onclick: toggle, 'data-subscribe': name }, 'Subscribe');
  return h('fieldset', { 'data-event': name }, h('legend', {}, name), s.description ? h('p', { class: 'muted' }, s.description) : null, btn, log);
}
