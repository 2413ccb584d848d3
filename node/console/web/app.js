// The console's shell: the hash router, the live snapshot stream
// (/api/v1/console/stream) every view reads from, and the node and peers
// views.
import { subscribe, request, showSignedIn } from './api.js';
import { h, clear, short, when, duration, table } from './dom.js';
import { thingsView, thingView } from './things.js';
import { groupsView, groupView } from './groups.js';
import { ownView } from './own.js';
import { live, onLive, problemText } from './live.js';


function startStream() {
  const badge = document.getElementById('live');
  subscribe('/api/v1/console/stream', ev => {
    try { live.data[ev.type] = JSON.parse(ev.data); } catch { live.data[ev.type] = null; }
    for (const fn of live.listeners) fn(ev.type);
  }, {
    onState: s => {
      badge.className = 'live ' + (s === 'open' ? 'on' : 'off');
      badge.textContent = s === 'open' ? 'live' : typeof s === 'string' ? 'reconnecting…' : 'stream refused: ' + s.message;
    },
  });
}

let current = null; // {abort, off} of the view shown

function route() {
  if (current) { current.abort.abort(); current.offs.forEach(f => f()); }
  const abort = new AbortController();
  const offs = [];
  current = { abort, offs };
  const ctx = { signal: abort.signal, onLive: fn => { offs.push(onLive(fn)); fn(''); } };
  const main = document.getElementById('main');
  clear(main);
  const [path, query] = location.hash.replace(/^#\/?/, '').split('?');
  const parts = path.split('/').map(decodeURIComponent);
  const params = new URLSearchParams(query || '');
  const view = parts[0] || 'node';
  for (const a of document.querySelectorAll('nav a')) {
    const on = a.dataset.view === view || (view === 'thing' && a.dataset.view === 'things') || (view === 'group' && a.dataset.view === 'groups');
    if (on) a.setAttribute('aria-current', 'page'); else a.removeAttribute('aria-current');
  }
  switch (view) {
    case 'peers': peersView(main, ctx); break;
    case 'things': thingsView(main, ctx, params); break;
    case 'thing': thingView(main, ctx, parts.slice(1).join('/'), params); break;
    case 'groups': groupsView(main, ctx); break;
    case 'group': groupView(main, ctx, parts[1]); break;
    case 'own': ownView(main, ctx, params); break;
    default: nodeView(main, ctx);
  }
}


function nodeView(main, ctx) {
  const box = h('section', { class: 'card', 'aria-live': 'polite' }, 'Loading…');
  const metrics = h('section', { class: 'card', id: 'metrics', hidden: true });
  main.append(h('h2', {}, 'This node'), box, metrics);
  // Only the uptime ticks; the rest changes with the stream (so that a
  // selection, to copy the peer ID say, stays put).
  const timer = setInterval(() => {
    const n = live.data['/api/v1/node'], el = document.getElementById('uptime');
    if (n?.started && el) el.textContent = duration(Date.now() - new Date(n.started));
  }, 1000);
  ctx.signal.addEventListener('abort', () => clearInterval(timer));
  loadMetrics(metrics, ctx.signal);
  let shown = '';
  const render = () => {
    const n = live.data['/api/v1/node'];
    if (!n) return;
    const key = JSON.stringify([n, live.data['/api/v1/peers']?.length, live.data['/api/v1/things']?.length, live.data['/api/v1/groups']?.length]);
    if (key === shown) return;
    shown = key;
    const p = problemText(n);
    if (p) { clear(box, h('p', { class: 'error' }, p)); return; }
    const peers = live.data['/api/v1/peers'];
    const rows = [
      ['Peer ID', h('code', { id: 'node-peer-id' }, n.peerID)],
      ['did:key', h('code', {}, n.didKey)],
      ['Version', n.version],
      ['Started', n.started ? h('span', {}, `${when(n.started)} (up `, h('span', { id: 'uptime' }, duration(Date.now() - new Date(n.started))), ')') : null],
      ['API', n.apiURL],
      ['Reachability', reach(n)],
      ['Peers', Array.isArray(peers) ? String(peers.length) : null],
      ['Own Things', Array.isArray(live.data['/api/v1/things']) ? String(live.data['/api/v1/things'].length) : null],
      ['Groups', Array.isArray(live.data['/api/v1/groups']) ? String(live.data['/api/v1/groups'].filter(g => g.self?.member).length) : null],
      ['Addresses', h('ul', {}, (n.addrs || []).map(a => h('li', {}, h('code', {}, a))))],
    ];
    // Fields other versions of the API add are shown as they come.
    const known = new Set(['peerID', 'didKey', 'version', 'started', 'apiURL', 'addrs', 'reachability', 'relayAddrs', 'relays']);
    for (const [k, v] of Object.entries(n)) if (!known.has(k) && v !== null && v !== '') rows.push([k, typeof v === 'object' ? h('code', {}, JSON.stringify(v)) : String(v)]);
    clear(box, h('dl', { class: 'kv' }, rows.filter(r => r[1] !== null && r[1] !== undefined && r[1] !== '').map(([k, v]) => [h('dt', {}, k), h('dd', {}, v)])));
  };
  ctx.onLive(src => { if (!src || src === '/api/v1/node' || src === '/api/v1/peers') render(); });
}

// loadMetrics shows the node's own metrics (lmos_…) of GET /metrics, when
// the node serves it (Prometheus text format), every 5 s: each metric
// summed over its labels; histograms by their count.
async function loadMetrics(box, signal) {
  while (!signal.aborted) {
    try {
      const res = await request('GET', '/metrics', { raw: true, accept: 'text/plain', signal });
      if (!res.ok) return; // no metrics on this node
      const sums = new Map();
      for (const l of (await res.text()).split('\n')) {
        if (!l.startsWith('lmos_')) continue;
        const name = l.split(/[{ ]/, 1)[0];
        if (name.endsWith('_bucket') || name.endsWith('_sum')) continue;
        const v = Number(l.slice(l.lastIndexOf(' ') + 1));
        if (Number.isFinite(v)) sums.set(name, (sums.get(name) || 0) + v);
      }
      if (!sums.size) return;
      box.hidden = false;
      clear(box, h('h3', {}, 'Metrics'), table( {}, h('tbody', {}, [...sums].map(([k, v]) =>
        h('tr', { 'data-metric': k }, h('td', { class: 'mono' }, k), h('td', {}, Number.isInteger(v) ? String(v) : v.toFixed(3)))))));
    } catch {
      return;
    }
    await new Promise(r => setTimeout(r, 5000));
  }
}

// reach says whether other nodes can dial this one (AutoNAT's verdict) and
// through how many relays it is reached otherwise.
function reach(n) {
  const r = n.reachability;
  if (r === undefined) return null;
  const words = { public: 'public: other nodes dial it directly', private: 'private (behind NAT): reached through relays', unknown: 'unknown (no AutoNAT verdict yet)' };
  const s = typeof r === 'object' ? JSON.stringify(r) : (words[r] || String(r));
  const relays = n.relays || [];
  return h('span', { id: 'reachability' }, s, relays.length ? ` — ${relays.length} relay reservation${relays.length > 1 ? 's' : ''}: ` : '',
    relays.map((p, i) => [i ? ', ' : '', h('code', { title: p }, short(p, 8))]));
}

function peersView(main, ctx) {
  const box = h('div', { 'aria-live': 'polite' });
  main.append(h('h2', {}, 'Connected peers'), box);
  ctx.onLive(src => {
    if (src && src !== '/api/v1/peers') return;
    const ps = live.data['/api/v1/peers'];
    if (!ps) return;
    const p = problemText(ps);
    if (p) { clear(box, h('p', { class: 'error' }, p)); return; }
    if (!ps.length) { clear(box, h('p', { class: 'muted' }, 'No peer is connected.')); return; }
    const cols = [['peerID', 'Peer'], ['state', 'State'], ['direction', 'Direction'], ['latencyMS', 'Latency'], ['transport', 'Transport'], ['relayed', 'Relayed'], ['agentVersion', 'Agent'], ['source', 'Found by'], ['connectedAt', 'Connected'], ['addrs', 'Addresses']]
      .filter(([k]) => k === 'peerID' || ps.some(x => x[k] !== undefined));
    clear(box, table( { id: 'peers' },
      h('thead', {}, h('tr', {}, cols.map(([, t]) => h('th', { scope: 'col' }, t)))),
      h('tbody', {}, ps.map(x => h('tr', {}, cols.map(([k]) => h('td', {}, cell(k, x[k]))))))));
  });
}

function cell(k, v) {
  if (v === undefined || v === null) return '';
  if (k === 'addrs') return h('span', { class: 'mono' }, (v || []).join('\n'));
  if (k === 'peerID') return h('code', { title: v }, short(v, 10));
  if (typeof v === 'boolean') return v ? 'yes' : 'no';
  if (k === 'latencyMS' && typeof v === 'number') return v.toFixed(v < 10 ? 2 : 0) + ' ms';
  if (k === 'connectedAt') return when(v);
  return typeof v === 'object' ? JSON.stringify(v) : String(v);
}

addEventListener('hashchange', route);
showSignedIn();
startStream();
route();
